"""Red before green: each check's first result, what it says about the work, and the
criteria whose check must fail before a pass counts (docs/explanation/proof.md, "Red
before green").

The first result of each criterion's check, for the command it has now, is kept in the
loop's ledger (storage/peruser/ledger.py), outside the project: `firsts[criterion]` is
`{"passed", "at", "command", "iteration", "tree", "steps", "by"}` (`steps`: how many
steps were done, `by`: the kind of actor that ran it), and `failedOnce[criterion]` is
the command of a check that has failed at least once. A new command starts again.
`lastPass[criterion]` is `{"command", "tree", "cleanTree", "by"}` of the check's last pass
that counted (nothing after a failure): the Stop hook runs a check again only when the
code changed since (`queries.fresh`), and a pass written into state.json by hand is not
one. `lastRun[criterion]` is `{"command", "ms", "strength"}`: how long its last run took, which
says whether it can fit a stop's budget (core/verifyplan.py). `strength`, in `firsts`,
`lastRun` and `lastPass`, is how many tests the run's output said ran
(verify/strength.py; None: exit code only), and `approvedStrength[criterion]` is
`{"command", "strength"}` as a person last approved it: a pass weaker than that
baseline (or than the first run's, before any approval) is weakened (`weakened`).

A criterion is **already true** when its check's first result passed before the loop
did any work: on the tree the loop started on (git), or, where no tree tells, at
iteration 0 with no step done since the start, run by the person (an agent's first turn
is iteration 0 too, and may have done the work). Such a proof says nothing about the
work. A criterion in `expectFail` counts a pass only once its current command has
failed. These functions are pure: they read the state and the ledger's entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ralphstate.core import proof, queries
from ralphstate.core import state as st

Entry = Mapping[str, Any]

# What a check that passed before it ever failed says, as its summary: the agent reads
# it in a block's reason or a refused task, the person in `verify` and `status`.
HELD = (
    "passed before it ever failed, so it proves nothing yet: this criterion's check must"
    " fail once (on the code without the work) before a pass counts"
)
# How `status` and the report mark a criterion already true at the start.
ALREADY = "already true at the start: proves nothing about the work"
# The most first results the ledger keeps for names that are no longer criteria.
MAX_GONE = 50


class Outcome(NamedTuple):
    """One check's result as the ledger keeps it: `passed` as its exit code said."""

    criterion: str
    command: str
    passed: bool
    tree: str | None
    # The tree of the clean room it ran in; None: it ran in the project.
    clean_tree: str | None = None
    # How long it ran, in milliseconds.
    duration_ms: int | None = None
    # How many tests its output said ran (verify/strength.py); None: exit code only.
    strength: dict[str, Any] | None = None
    # Who produced it (core/provenance.py): only ralphstate's own passes are reused.
    by: str | None = None
    # It ran confined (verify/confine.py).
    confined: bool = False


def _table(entry: Entry | None, key: str) -> dict[str, Any]:
    value = (entry or {}).get(key)
    return dict(value) if isinstance(value, dict) else {}


def expect_fail(state: st.State, entry: Entry | None = None) -> list[str]:
    """The criteria whose check must fail before a pass counts: the state's
    `expectFail`, with the approved contract's (a hand edit that drops one does not
    make a pass count), in the criteria's order."""
    named = set(state["expectFail"])
    approved = (entry or {}).get("approved")
    if isinstance(approved, dict):
        named |= {n for n in approved.get("expectFail") or [] if isinstance(n, str)}
    return [c for c in state["criteria"] if c in named]


def counts(state: st.State, entry: Entry | None, criterion: str, command: str) -> bool:
    """Whether a pass of `criterion`'s check `command` counts: always, unless the
    criterion must fail first and that command never failed."""
    if criterion not in expect_fail(state, entry):
        return True
    return _table(entry, "failedOnce").get(criterion) == command


def held(state: st.State, names: Iterable[str]) -> list[str]:
    """Of `names`, the criteria whose check's last pass was held back (HELD)."""
    found = []
    for name in names:
        evidence = state["evidence"].get(name, {})
        if (
            evidence.get("summary") == HELD
            and evidence.get("command") == state["checks"].get(name)
            and not queries.met(state, name)
        ):
            found.append(name)
    return found


def noted(
    entry: Entry, state: st.State, outcomes: Iterable[Outcome], by: str, at: str
) -> dict[str, Any]:
    """`entry` with `outcomes` recorded: the first result of each criterion's current
    command, and the commands that failed. An outcome whose criterion is gone, or whose
    check is no longer the command it ran, is left out."""
    firsts, failed = _table(entry, "firsts"), _table(entry, "failedOnce")
    passes, took = _table(entry, "lastPass"), _table(entry, "lastRun")
    for outcome in outcomes:
        name, command = outcome.criterion, outcome.command
        if name not in state["criteria"] or state["checks"].get(name) != command:
            continue
        first = firsts.get(name)
        if not isinstance(first, dict) or first.get("command") != command:
            firsts[name] = {
                "passed": outcome.passed,
                "at": at,
                "command": command,
                "iteration": state["iteration"],
                "tree": outcome.tree,
                "steps": len(state["completedSteps"]),
                "by": by,
                "strength": outcome.strength,
            }
        if outcome.duration_ms is not None:
            took[name] = {"command": command, "ms": outcome.duration_ms}
            took[name]["strength"] = outcome.strength
        if not outcome.passed:
            failed[name] = command
            passes.pop(name, None)
        elif name not in expect_fail(state, entry) or failed.get(name) == command:
            passes[name] = {"command": command, "tree": outcome.tree}
            passes[name]["cleanTree"] = outcome.clean_tree
            passes[name]["strength"] = outcome.strength
            passes[name]["by"] = outcome.by
            passes[name]["confined"] = outcome.confined
    new = dict(entry)
    new["firsts"] = _bounded(firsts, state)
    new["failedOnce"] = _bounded(failed, state)
    new["lastPass"] = _bounded(passes, state)
    new["lastRun"] = _bounded(took, state)
    return new


def _bounded(table: dict[str, Any], state: st.State) -> dict[str, Any]:
    """Every criterion's entry, and at most MAX_GONE of names no longer criteria."""
    criteria = set(state["criteria"])
    gone = [name for name in table if name not in criteria]
    for name in gone[: max(0, len(gone) - MAX_GONE)]:
        del table[name]
    return table


def _before_work(entry: Entry, first: Mapping[str, Any]) -> bool:
    """The first result ran before the loop did any work (see the module's docstring)."""
    start, tree = entry.get("startTree"), first.get("tree")
    if isinstance(start, str) and isinstance(tree, str):
        return tree == start
    steps = first.get("steps")
    start_steps = entry.get("startSteps")
    return (
        first.get("iteration") == 0
        and isinstance(steps, int)
        and steps <= (start_steps if isinstance(start_steps, int) else 0)
        and first.get("by") == "person"
    )


def first_already_true(entry: Entry | None, criterion: str, command: str) -> bool:
    """The first result of `criterion`'s check `command` passed before any work."""
    first = _table(entry, "firsts").get(criterion)
    return (
        entry is not None
        and isinstance(first, dict)
        and first.get("command") == command
        and first.get("passed") is True
        and _before_work(entry, first)
    )


def already_true(state: st.State, entry: Entry | None = None) -> list[str]:
    """The criteria verified by their check now whose check was already true before
    the loop did any work, in order. `entry`: the loop's ledger entry, which decides;
    None (no ledger for this loop), as the evidence recorded it (`alreadyTrue`)."""
    found = []
    for name in state["criteria"]:
        command = state["checks"].get(name)
        evidence = state["evidence"].get(name, {})
        if (
            command is None
            or queries.standing(state, name) != "verified"
            or evidence.get("command") != command
        ):
            continue
        if entry is None:
            if evidence.get("alreadyTrue") is True:
                found.append(name)
        elif first_already_true(entry, name, command):
            found.append(name)
    return found


def baseline(entry: Entry | None, criterion: str, command: str) -> tuple[Any, str] | None:
    """The counts a pass of `criterion`'s check `command` is held to, and since when:
    as a person approved them ("approval"), else as its first run said ("its first
    run") when that run failed: a first run that passed may have run the work's own
    new tests, untracked, that a clean room leaves out. None: neither is known."""
    approved = _table(entry, "approvedStrength").get(criterion)
    if isinstance(approved, dict) and approved.get("command") == command:
        return approved.get("strength"), "approval"
    first = _table(entry, "firsts").get(criterion)
    if not isinstance(first, dict) or first.get("command") != command:
        return None
    if "strength" in first and first.get("passed") is False:
        return first.get("strength"), "its first run"
    return None


def weakened(entry: Entry | None, criterion: str, command: str, now: Any) -> str | None:
    """Why a pass of `criterion`'s check `command` that counted `now` ran fewer tests
    than its baseline (core/proof.py `weaker_tests`); None when it did not."""
    found = baseline(entry, criterion, command)
    held_to, since = found if found is not None else (None, "approval")
    return proof.weaker_tests(criterion, held_to, now, since)


def weakened_passes(state: st.State, entry: Entry | None) -> list[str]:
    """One sentence for each criterion whose check's last pass that counted (the
    ledger's `lastPass`, for its current command) was weakened."""
    found = []
    passes = _table(entry, "lastPass")
    for name in state["criteria"]:
        command, last = state["checks"].get(name), passes.get(name)
        if command is None or not isinstance(last, dict) or last.get("command") != command:
            continue
        if "strength" not in last:
            continue  # a pass recorded before counts were kept
        said = weakened(entry, name, command, last.get("strength"))
        if said:
            found.append(said)
    return found


def approved_strength(entry: Entry, state: st.State) -> dict[str, Any]:
    """`approvedStrength` as a person approves the loop now: each check's latest counts
    (`lastRun`), or the ones approved before for a check that has not run since."""
    kept = _table(entry, "approvedStrength")
    runs = _table(entry, "lastRun")
    for name in state["criteria"]:
        command, run = state["checks"].get(name), runs.get(name)
        if not command or not isinstance(run, dict) or run.get("command") != command:
            continue
        if "strength" in run:
            kept[name] = {"command": command, "strength": run.get("strength")}
    return _bounded(kept, state)
