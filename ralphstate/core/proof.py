"""The contract: what proves a loop done, and which changes to it weaken the proof
(docs/explanation/proof.md, "The approved contract").

The contract is the person's: the criteria, each criterion's check and timeout,
verify-on-stop, `noCriteria`, the guarded paths (`guards`), clean-room verification
(`cleanVerify`) and the criteria that must fail before they pass (`expectFail`).
ralphstate keeps the contract as a person last approved it, outside the project
(storage/peruser/ledger.py). A change that weakens it counts for completion only once a person
approves it; a change that only adds to it (a new criterion, a check for a claim-only
criterion, a new guard) needs no approval. These functions are pure: they compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ralphstate.core import grading, schema
from ralphstate.core import state as st
from ralphstate.core.text import visible

Contract = dict[str, Any]


def contract_of(state: st.State) -> Contract:
    """The loop's contract as its state holds it now: each contract field of the table
    (core/schema.py, `CONTRACT`), as its row puts it in the contract."""
    return {row.name: row.contract(state, row.name) for row in schema.CONTRACT if row.contract}


def _q(name: object) -> str:
    return f"'{visible(str(name))}'"


def weakenings(approved: Contract, current: Contract) -> list[str]:
    """One sentence for each way `current` proves less than `approved`; [] when it
    proves at least as much."""
    now_criteria = set(current.get("criteria", []))
    found = [
        f"criterion {_q(name)} was removed (or renamed)"
        for name in approved.get("criteria", [])
        if name not in now_criteria
    ]
    old_checks: dict[str, str] = approved.get("checks", {})
    new_checks: dict[str, str] = current.get("checks", {})
    old_limits: dict[str, float] = approved.get("checkTimeouts", {})
    new_limits: dict[str, float] = current.get("checkTimeouts", {})
    for name, command in old_checks.items():
        if name not in now_criteria:
            continue
        if name not in new_checks:
            found.append(f"the check of {_q(name)} (`{visible(command)}`) was removed")
        elif new_checks[name] != command:
            found.append(
                f"the check of {_q(name)} was replaced: `{visible(command)}` became"
                f" `{visible(new_checks[name])}`"
            )
        elif old_limits.get(name) != new_limits.get(name):
            found.append(f"the check timeout of {_q(name)} was changed")
    found += _switches(approved, current) + grading.weakened(approved, current)
    return found


def _switches(approved: Contract, current: Contract) -> list[str]:
    found = []
    if approved.get("verifyOnStop", True) and not current.get("verifyOnStop", True):
        found.append("verify-on-stop was turned off")
    if not approved.get("noCriteria") and current.get("noCriteria"):
        found.append("noCriteria was turned on (the marker alone would end the loop)")
    if approved.get("cleanVerify", True) and not current.get("cleanVerify", True):
        found.append("clean-room verification was turned off")
    old_guards, new_guards = approved.get("guards"), current.get("guards")
    if old_guards is not None:
        if new_guards is None:
            found.append("guarded files were turned off")
        else:
            dropped = [g for g in old_guards if g not in new_guards]
            found += [f"guard `{visible(g)}` was dropped" for g in dropped]
    now_expect = set(current.get("expectFail", []))
    for name in approved.get("expectFail", []):
        if name not in now_expect and name in current.get("criteria", []):
            found.append(f"{_q(name)} no longer has to fail before it passes")
    return found


def differences(approved: Contract, current: Contract) -> list[str]:
    """Every difference, weakening or not, as lines of a review: `- ` for what the
    approved contract had, `+ ` for what the loop has now."""
    lines: list[str] = []
    for key in sorted(set(approved) | set(current)):
        old, new = approved.get(key), current.get(key)
        if old == new:
            continue
        lines.append(f"{key}:")
        if isinstance(old, dict) or isinstance(new, dict):
            old_d, new_d = old or {}, new or {}
            for name in sorted(set(old_d) | set(new_d), key=str):
                if old_d.get(name) != new_d.get(name):
                    if name in old_d:
                        lines.append(f"  - {_q(name)}: {visible(str(old_d[name]))}")
                    if name in new_d:
                        lines.append(f"  + {_q(name)}: {visible(str(new_d[name]))}")
        elif isinstance(old, list) or isinstance(new, list):
            old_l, new_l = list(old or []), list(new or [])
            lines += [f"  - {visible(str(x))}" for x in old_l if x not in new_l]
            lines += [f"  + {visible(str(x))}" for x in new_l if x not in old_l]
            if old is None or new is None:
                lines.append(
                    f"  ({'none' if old is None else 'some'} before, "
                    f"{'none' if new is None else 'some'} now)"
                )
        else:
            lines += [f"  - {visible(str(old))}", f"  + {visible(str(new))}"]
    return lines


def restored(state: st.State, approved: Contract) -> None:
    """Put the approved contract back into `state` (`review --revert`): criteria that
    come back start unmet, and a check that comes back has no evidence."""
    current = contract_of(state)
    kept = set(state["criteria"])
    for name in approved.get("criteria", []):
        if name not in kept:
            state["criteria"].append(name)
            state["criteriaStatus"][name] = False
    for name, command in approved.get("checks", {}).items():
        if current["checks"].get(name) != command:
            state["checks"][name] = command
            state["evidence"].pop(name, None)
            state["criteriaStatus"][name] = False
    for name in approved.get("checks", {}):
        limit = approved.get("checkTimeouts", {}).get(name)
        if limit is None:
            state["checkTimeouts"].pop(name, None)
        else:
            state["checkTimeouts"][name] = limit
    if approved.get("verifyOnStop", True):
        state["verifyOnStop"] = None
    if not approved.get("noCriteria"):
        state["noCriteria"] = False
    if approved.get("cleanVerify", True) and "cleanVerify" in state:
        state["cleanVerify"] = None
    raw: dict[str, Any] = state  # type: ignore[assignment]
    if approved.get("guards") is not None:
        raw["guards"] = sorted(set(raw.get("guards") or []) | set(approved["guards"]))
    if approved.get("expectFail"):
        raw["expectFail"] = sorted(set(raw.get("expectFail") or []) | set(approved["expectFail"]))


class Pending:
    """What a person must review before the loop may complete: one sentence per change
    (`changes`; none: nothing to review), who made them (`by`, as a person reads it),
    the new test files that need no review but are named (`new_tests`), and the guarded
    files whose diff the review shows (`files`). With `fault`, the approved contract
    itself is unknown (the ledger cannot be used): that one sentence is the review."""

    __slots__ = ("approved", "by", "changes", "fault", "files", "gate_off", "new_tests")

    def __init__(
        self,
        changes: list[str],
        by: list[str] | None = None,
        new_tests: list[str] | None = None,
        files: list[str] | None = None,
        approved: list[str] | None = None,
        fault: str | None = None,
        gate_off: str | None = None,
    ) -> None:
        self.changes = changes
        self.by = by or []
        self.new_tests = new_tests or []
        self.files = files or []
        # Changes to the proof a person approved during the loop, as a person reads them.
        self.approved = approved or []
        self.fault = fault
        # That nothing enforced the loop for part of its life (loop/gateoff.py).
        self.gate_off = gate_off


def completion_note(pending: Pending) -> str:
    """What a completion message adds about the proof: the changes a person approved
    on the way, the new test files (named, never a reason to pause), and the times
    nothing enforced the loop."""
    parts = []
    if pending.approved:
        parts.append(f" Approved changes to its proof: {'; '.join(pending.approved[:5])}.")
    if pending.new_tests:
        shown = ", ".join(f"`{visible(t)}`" for t in pending.new_tests[:5])
        more = f" and {len(pending.new_tests) - 5} more" if len(pending.new_tests) > 5 else ""
        parts.append(f" New test files: {shown}{more}.")
    if pending.gate_off:
        parts.append(f" {pending.gate_off}")
    return "".join(parts)


def guard_pending(found: Any) -> Pending:
    """The review a comparison of the guarded files asks for (storage/repo/guarded.py
    `Changes`: `changed`, `deleted`, `new_config`, `new_tests`)."""
    changes = [f"guarded file `{visible(f)}` was changed" for f in found.changed]
    changes += [f"guarded file `{visible(f)}` was deleted" for f in found.deleted]
    changes += [f"new file `{visible(f)}` can change how the tests run" for f in found.new_config]
    files = [*found.changed, *found.deleted, *found.new_config]
    by = ["edits in the work tree"] if changes else []
    return Pending(changes, by, list(found.new_tests), files)


def paused_review(pending: Pending, shown: int = 6, stuck: Sequence[str] = ()) -> str:
    """For the person: the loop claims completion, but its proof changed since they
    approved it; what changed, by whom, and the one command that reviews it. With
    `stuck`, the loop claims nothing yet: those criteria's checks changed and are not
    trusted, so no check the agent may run proves them, and the review comes first."""
    if pending.fault:
        return (
            f"ralphstate: the agent claims the loop is done, but {pending.fault}, so the"
            " loop is paused for your review. Run `ralphstate review` to see the loop as it"
            " is, then approve it."
        )
    listed = "; ".join(pending.changes[:shown])
    more = len(pending.changes) - shown
    if more > 0:
        listed += f"; and {more} more"
    who = ", ".join(pending.by) if pending.by else "someone unknown"
    if stuck:
        return (
            "ralphstate: NEEDS YOUR REVIEW. The loop is paused for your review: what proves"
            f" it changed since you approved it: {listed} (by {who}). Until you review it, no"
            f" check the agent may run proves {', '.join(_q(name) for name in stuck)}."
            " Run `ralphstate review` to see the diff, then approve or revert."
        )
    return (
        "ralphstate: the agent claims the loop is done, but what proves it changed since"
        f" you approved it, so the loop is paused for your review: {listed} (by {who})."
        " Run `ralphstate review` to see the diff, then approve or revert."
    )


def carried(approved: Contract, before: Contract, after: Contract) -> Contract:
    """The approved contract with a person's own change (`before` to `after`, made by a
    ralphstate command) applied: what the person does is approved, and only that (an
    agent's earlier change still waits for review)."""
    new = dict(approved)
    for key in set(before) | set(after):
        old, now = before.get(key), after.get(key)
        if old == now:
            continue
        if isinstance(old, dict) and isinstance(now, dict):
            kept = dict(new.get(key) or {})
            for name in set(old) | set(now):
                if old.get(name) != now.get(name):
                    if name in now:
                        kept[name] = now[name]
                    else:
                        kept.pop(name, None)
            new[key] = kept
        elif isinstance(old, list) and isinstance(now, list):
            items = [x for x in (new.get(key) or []) if x in now or x not in old]
            new[key] = items + [x for x in now if x not in old and x not in items]
        else:
            new[key] = now
    return new


def weaker_tests(name: str, baseline: Any, now: Any, since: str) -> str | None:
    """The sentence that says how a pass of `name`'s check ran fewer tests than its
    `baseline` (the counts of verify/strength.py, taken `since` "approval" or "its first
    run"): fewer ran, more skipped, none ran, or none counted where some were; None
    when it ran at least as many."""
    said = f"{_q(name)} is weakened:"
    if not isinstance(now, dict):
        if isinstance(baseline, dict):
            ran = baseline.get("ran", 0)
            return f"{said} its output no longer says how many tests ran ({ran} at {since})"
        return None
    ran = int(now.get("ran") or 0)
    if ran == 0:
        return f"{said} no tests ran"
    if now.get("unprobed") and not (isinstance(baseline, dict) and baseline.get("unprobed")):
        # ralphstate's probe was in pytest's process and wrote nothing (verify/probe.py):
        # what silenced it also hides what it sees (forged reports, plugins).
        return f"{said} ralphstate's probe in pytest was silenced: it left no record"
    if not isinstance(baseline, dict):
        return _new_plugins(said, None, now.get("plugins"), since)
    before = int(baseline.get("ran") or 0)
    if ran < before:
        return f"{said} {_tests(ran)} ran, {before} at {since}"
    skipped, skipped_before = int(now.get("skipped") or 0), int(baseline.get("skipped") or 0)
    if skipped > skipped_before:
        return f"{said} {_tests(skipped)} skipped, {skipped_before} at {since}"
    return _new_plugins(said, baseline.get("plugins"), now.get("plugins"), since)


def _new_plugins(said: str, before: Any, now: Any, since: str) -> str | None:
    """How a pass's pytest registered plugin files of the project that no person
    approved and the baseline's did not name (verify/probe.py); None when it did not."""
    if not isinstance(now, list):
        return None
    new = [name for name in now if name not in (before if isinstance(before, list) else [])]
    if not new:
        return None
    named = ", ".join(visible(str(name)) for name in new[:5])
    more = f" and {len(new) - 5} more" if len(new) > 5 else ""
    return f"{said} pytest loaded plugins it did not at {since}: {named}{more}"


def _tests(n: int) -> str:
    return f"{n} test" if n == 1 else f"{n} tests"


def tests_said(counts: Any) -> str:
    """A check's test counts (verify/strength.py) as a person reads them: `pytest: 3
    ran, 2 passed, 1 failed, 1 skipped`; `exit code only` when there are none."""
    if not isinstance(counts, dict):
        return "exit code only"
    said = [f"{counts.get('ran', 0)} ran"]
    said += [f"{counts[k]} {k}" for k in ("passed", "failed", "skipped") if counts.get(k)]
    return f"{visible(str(counts.get('runner', '')))}: {', '.join(said)}"
