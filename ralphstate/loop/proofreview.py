"""What a person must review before a loop may complete: its contract against the one
they approved, and its guarded files against the approved tree
(docs/explanation/proof.md).

A check's last pass that ran fewer tests than the person approved (or than its first
run) is a change to review too (core/redgreen.py `weakened_passes`). `pending` gathers
it for the Stop hook, `ralphstate run`, `status` and `review`; it
reads the ledger (storage/peruser/ledger.py), the history's tail (who made each change) and,
for a loop with guards, asks git. `approve` and `revert` are the person's answers.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ralphstate.core import actor, limits, proof, provenance, redgreen
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.loop import gateoff
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import ledger

REPLACED = (
    "state.json holds another loop than the one ralphstate started here (its loop id"
    " changed outside ralphstate)"
)
# History events that change the contract: who made them is named in the review.
CONTRACT_EVENTS = frozenset(
    {
        "check_set",
        "check_removed",
        "criterion_removed",
        "criterion_renamed",
        "criteria_removed",
        "criteria_set",
        "config",
        "guard_added",
        "guard_removed",
    }
)


def pending(
    store: Store, state: st.State, adopt: bool = True, toolchain: bool = True
) -> proof.Pending:
    """What changed in the loop's proof since a person approved it (nothing to review:
    `Pending.changes` is empty). A loop this machine has no record of is taken as it is
    now (a loop from before the ledger, or one whose record was lost: said by `status`);
    a state.json that is another loop than the one ralphstate started here is itself a
    change to review. A ledger that cannot be used is the review itself (`ledger.fault`)."""
    paths = store.paths
    entry = ledger.read(paths)
    broken = ledger.fault(paths, entry)
    if broken:
        return proof.Pending([broken], ["a fault of the ledger"], fault=broken)
    current = proof.contract_of(state)
    if entry is None or (entry.get("loop") is None and state.get("loopId") is None):
        if adopt:
            _adopt(store, state, current)
        return proof.Pending([])
    if entry.get("loop") != state.get("loopId"):
        return proof.Pending(
            [REPLACED],
            ["a hand edit of state.json"],
        )
    approved = entry.get("approved")
    if not isinstance(approved, dict):
        if adopt:
            _adopt(store, state, current)
        return proof.Pending([])
    changes = proof.weakenings(approved, current)
    changes += _git_settings_changed(store, entry)
    guard = _guard_changes(store, state, entry)
    tools = _toolchain_changes(store, state) if toolchain else []
    weaker = redgreen.weakened_passes(state, entry)
    if adopt and not changes and current != approved and not guard.changes and not weaker:
        _extend(store, state, current)  # only additions: they stand without a review
    by = _actors(store, state, str(entry.get("approvedAt") or "")) if changes else []
    if changes and entry.get("replaced"):
        who = actor.describe(entry.get("author"))
        replaced = "(`init --force`, or `init` after a deleted state.json)"
        by = [f"{who}, who started a new loop over yours {replaced}"]
    by_tests = ["edits in the work tree"] if weaker and not guard.by else []
    return proof.Pending(
        [*changes, *guard.changes, *weaker, *tools],
        [*by, *guard.by, *by_tests, *([TOOLCHAIN_BY] if tools and not guard.by else [])],
        guard.new_tests,
        guard.files,
        _approvals(entry),
        gate_off=gateoff.was_off(entry),
    )


def _approvals(entry: dict[str, Any]) -> list[str]:
    """The changes a person approved during the loop, as a completion names them."""
    said = []
    for record in entry.get("approvals") or []:
        if isinstance(record, dict) and actor.is_person(record.get("by")):
            changes = "; ".join(str(c) for c in (record.get("changes") or [])[:3])
            how = provenance.approval(record.get("by"))
            said.append(f"{changes} (approved {how} at {record.get('at')})")
    return said


GIT_SETTINGS = (
    "git's checkout settings changed since approval (a `filter.*` in git config, or"
    " .git/info/attributes): a filter can rewrite the files the checks run on"
)


GIT_REPOSITORY = (
    "the git repository here is not the one you approved (its git directory or common"
    " directory differs: a `.git` moved aside for a new one, or a `.git/commondir`"
    " written): the checks would run on another repository's content"
)


def _git_settings_changed(store: Store, entry: dict[str, Any]) -> list[str]:
    """[GIT_SETTINGS] when the repository's checkout filters differ from those the
    person approved (storage/repo/git.py `checkout_settings`), [GIT_REPOSITORY] when
    the repository is not the one approved (`git.repository`); [] otherwise."""
    found: list[str] = []
    known = entry.get("gitSettings")
    where = entry.get("gitRepository")
    if not isinstance(known, str) and not isinstance(where, str):
        return found  # nothing recorded: nothing of git's to ask
    from ralphstate.storage.repo import git

    if isinstance(known, str):
        now = git.checkout_settings(store.paths.root)
        found += [GIT_SETTINGS] if now is not None and now != known else []
    if isinstance(where, str) and git.repository(store.paths.root) != where:
        found.append(GIT_REPOSITORY)
    return found


def record_git_settings(paths: Any) -> None:
    """Keep the repository's checkout settings, and which repository it is, as approved
    now (at `init`, at an approval); nothing outside a repository."""
    from ralphstate.storage.repo import git

    found = git.checkout_settings(paths.root)
    if found is None:
        return
    where = git.repository(paths.root)

    def edit(entry: dict[str, Any]) -> None:
        entry["gitSettings"] = found
        if where is not None:
            entry["gitRepository"] = where

    with contextlib.suppress(RalphstateError):
        ledger.change(paths, edit)


TOOLCHAIN_BY = "a change outside ralphstate (a package install, a new file, or the agent)"


def _toolchain_changes(store: Store, state: st.State) -> list[str]:
    """What the checks resolve to, against the fingerprint taken at approval
    (storage/peruser/toolchain.py); nothing for a loop approved before it was taken."""
    from ralphstate.storage.peruser import checkenv, toolchain, truststore

    approved = truststore.recorded_toolchain(store.paths)
    if approved is None or not truststore.is_trusted(store.paths, state):
        return []  # checks changed since approval: that is the review, and none runs
    env = checkenv.for_check(truststore.recorded_env(store.paths))
    commands = list(truststore.armed(state).values())
    return toolchain.changes(approved, toolchain.fingerprint(commands, store.paths.root, env))


def _record_strength(store: Store, state: st.State) -> None:
    """Keep each check's latest test counts as the person approves them: the baseline a
    later pass is held to (core/redgreen.py `approved_strength`)."""

    def edit(entry: dict[str, Any]) -> None:
        if entry.get("loop") == state.get("loopId"):
            entry["approvedStrength"] = redgreen.approved_strength(entry, state)

    with contextlib.suppress(RalphstateError):
        ledger.change(store.paths, edit)


def _guard_changes(store: Store, state: st.State, entry: dict[str, Any]) -> proof.Pending:
    """The guarded files changed since the approved tree (the guards module decides)."""
    raw: dict[str, Any] = dict(state)
    guards = raw.get("guards")
    tree = entry.get("guardTree")
    if not guards or not isinstance(tree, str):
        return proof.Pending([])
    from ralphstate.storage.repo import guarded  # starts git: only for a loop that guards

    found = guarded.compare(store.paths, tree, list(guards))
    if found is None:
        return proof.Pending(
            ["the guarded files could not be compared with the approved ones (git failed)"],
            [],
        )
    return proof.guard_pending(found)


def _adopt(store: Store, state: st.State, contract: proof.Contract) -> None:
    """Record the contract of a loop the ledger does not know, as it is now."""
    with contextlib.suppress(RalphstateError):  # next time again: nothing is lost
        ledger.approve(store.paths, state, {"kind": "unknown"}, contract, None)


def _extend(store: Store, state: st.State, contract: proof.Contract) -> None:
    """Additions to the contract stand: the approved contract becomes the current one."""

    def edit(entry: dict[str, Any]) -> None:
        if entry.get("loop") == state.get("loopId"):
            entry["approved"] = contract

    with contextlib.suppress(RalphstateError):
        ledger.change(store.paths, edit)


def _actors(store: Store, state: st.State, since: str) -> list[str]:
    """Who changed the contract since `since`, from the history; a change no history
    line recorded was a hand edit of state.json."""
    from ralphstate.storage.loopdir.store import of_loop

    try:
        entries = of_loop(store.history(500), state.get("loopId"))
    except RalphstateError:
        entries = []
    names: list[str] = []
    for entry in entries:
        if actor.is_person(entry.get("actor")):
            continue  # a person's own change was approved by making it
        if entry.get("event") in CONTRACT_EVENTS and str(entry.get("at") or "") >= since:
            name = actor.describe(entry.get("actor"))
            if name not in names:
                names.append(name)
    return names or [actor.describe({"kind": "edit"})]


def approve(
    store: Store,
    by: actor.Actor,
    run: dict[str, object] | None = None,
    env: list[str] | None = None,
) -> st.State:
    """The person approves the loop's contract and guarded files as they are now, and
    trusts its checks (and the run settings `run`, with the environment `env` names,
    see `truststore.record`) on this machine. A loop paused for review completes when
    every criterion stands met, else goes on."""
    from ralphstate.loop.person import require_person
    from ralphstate.storage.peruser import truststore

    require_person(store.paths, "approving this loop's proof")
    if actor.is_person(by):
        by = actor.current()  # the person, as `require_person` found them there
    state = store.load()
    truststore.record(store.paths, state, run, env)
    tree = _guard_tree(store, state)
    ledger.approve(store.paths, state, by, proof.contract_of(state), tree)
    record_git_settings(store.paths)
    _record_strength(store, state)

    def change(current: st.State, events: list[Event]) -> st.State:
        events.append({"event": "approved", "contract": proof.contract_of(current)})
        for evidence in current["evidence"].values():
            evidence.pop("weakened", None)  # the counts it ran are the baseline now
        if current["status"] == "paused" and current["pauseReason"] == "review":
            from ralphstate.core import queries

            done = not queries.unmet(current)
            current["status"] = "complete" if done else "in_progress"
            current["pauseReason"] = None
            events.append({"event": "complete" if done else "resumed", "after": "review"})
        return current

    return store.update(change)


def revert(store: Store) -> st.State:
    """Put the approved contract back into state.json, and the guarded files as they
    were approved back into the work tree; a loop paused for review goes on. Only the
    person may (loop/person.py)."""
    from ralphstate.loop.person import require_person

    require_person(store.paths, "putting back this loop's approved proof")
    state = store.load()
    entry = ledger.of_loop(store.paths, state)
    approved = (entry or {}).get("approved")
    if not isinstance(approved, dict):
        raise RalphstateError("there is no approved contract to go back to for this loop.")
    tree = (entry or {}).get("guardTree")
    if isinstance(tree, str) and state.get("guards"):
        from ralphstate.storage.repo import guarded

        found = guarded.compare(store.paths, tree, list(state["guards"] or []))
        back = [*found.changed, *found.deleted, *found.new_config] if found else []
        if back:
            guarded.restore(store.paths, tree, back)

    def change(current: st.State, events: list[Event]) -> st.State:
        proof.restored(current, approved)
        if current["status"] == "paused" and current["pauseReason"] == "review":
            current["status"], current["pauseReason"] = "in_progress", None
        events.append({"event": "reverted", "contract": approved})
        return current

    return store.update(change)


def _guard_tree(store: Store, state: st.State) -> str | None:
    raw: dict[str, Any] = dict(state)
    if not raw.get("guards"):
        return None
    from ralphstate.loop import approvedfiles
    from ralphstate.storage.repo import guarded

    tree = guarded.snapshot(store.paths, list(raw["guards"]))
    approvedfiles.keep(store.paths, tree)
    return tree


def files_diff(store: Store, state: st.State, files: list[str]) -> str:
    """The diff of the guarded `files` from their approved content to now, bounded."""
    entry = ledger.of_loop(store.paths, state) or {}
    tree = entry.get("guardTree")
    if not isinstance(tree, str):
        return ""
    from ralphstate.storage.repo import guarded

    return guarded.diff(store.paths, tree, files, limits.MAX_GUARD_DIFF_BYTES) or ""


def summary(store: Store, state: st.State) -> dict[str, Any]:
    """What `status` says about the loop's proof: who approved it, what waits for
    review, whether it ended outside ralphstate, and who ended it."""
    entry = ledger.of_loop(store.paths, state) or {}
    outside = ledger.ended_outside(store.paths, state)
    pending = pending_or_none(store, state)
    return {
        "approvedBy": actor.describe(entry["approvedBy"]) if "approvedBy" in entry else None,
        "approvedAs": provenance.approval(entry["approvedBy"]) if "approvedBy" in entry else None,
        "approvedAt": entry.get("approvedAt"),
        "author": actor.describe(entry["author"]) if "author" in entry else None,
        "review": pending.changes if pending else [],
        "reviewBy": pending.by if pending else [],
        "newTests": pending.new_tests if pending else [],
        "endedOutside": outside,
        "gateOff": gateoff.was_off(entry),
        "endedByAgent": _ending_said(store, state),
    }


def _ending_said(store: Store, state: st.State) -> str | None:
    ended = agent_ending(store, state)
    if ended is None:
        return None
    who, what, at = ended
    return f"{what} by the agent itself ({who}) at {at}; no check proved it done"


def pending_or_none(store: Store, state: st.State) -> proof.Pending | None:
    """`pending` for a loop not over; None for one that is (nothing will complete it).
    Without the toolchain's fingerprint, which may ask the check's runner (seconds):
    `status` and the report show a toolchain change once a stop or a run found it."""
    if state["status"] not in st.ACTIVE:
        return None
    return pending(store, state, adopt=False, toolchain=False)


def agent_ending(store: Store, state: st.State) -> tuple[str, str, str] | None:
    """(who, "cancelled" or "paused", when) when the newest pause or cancel of this
    loop was an agent's own command (a pause it gave a reason of its own, such as
    `--blocked`, is not: it asks for a person)."""
    from ralphstate.storage.loopdir.store import of_loop

    if state["status"] not in ("paused", "cancelled"):
        return None
    try:
        entries = of_loop(store.history(50), state.get("loopId"))
    except RalphstateError:
        return None
    for entry in reversed(entries):
        if entry.get("event") in ("paused", "cancelled"):
            who = entry.get("actor")
            if actor.is_person(who) or not isinstance(who, dict):
                return None
            if entry.get("reason") not in (None, "agent"):
                return None
            return actor.describe(who), str(entry["event"]), str(entry.get("at") or "")
    return None


def headline(found: dict[str, Any]) -> str | None:
    """A pending review as the loop's headline, the first line `status` and `resume`
    print (`found`: `summary`); None when nothing waits for one."""
    if not found["review"]:
        return None
    n = len(found["review"])
    who = ", ".join(found["reviewBy"]) or "someone unknown"
    return (
        f"NEEDS YOUR REVIEW: what proves this loop done changed ({n} change{'s' if n > 1 else ''}"
        f" by {who}); it cannot complete until you run `ralphstate review`."
    )


def summary_lines(found: dict[str, Any]) -> list[str]:
    """`summary` as `status` prints it."""
    lines = []
    if found["endedOutside"]:
        lines.append(
            "ENDED OUTSIDE RALPHSTATE, NOT VERIFIED: state.json says it is over, but no"
            " ralphstate command ended it (a hand edit)."
        )
    if found.get("endedByAgent"):
        lines.append(f"{found['endedByAgent']}.")
    if found.get("gateOff"):
        lines.append(found["gateOff"])
    if found["review"]:
        who = ", ".join(found["reviewBy"]) or "someone unknown"
        lines.append(
            f"proof: NEEDS YOUR REVIEW ({len(found['review'])} change(s) by {who}); it cannot"
            " complete until you run `ralphstate review`:"
        )
        lines += [f"  - {c}" for c in found["review"][:10]]
    elif found["approvedBy"]:
        lines.append(
            f"proof: as approved {found.get('approvedAs') or approved_by(found['approvedBy'])}"
            f" at {found['approvedAt']}"
        )
    if found["author"] and found["author"] != "you":
        lines.append(f"started by: {found['author']}")
    if found["newTests"]:
        lines.append(f"new test files since approval: {len(found['newTests'])}")
    return lines


def approved_by(described: str) -> str:
    """`by claude session 1a2b3c4d`, or, for an approval made from a shell with no agent
    variable (described as "you"), `outside the agent`: a person's presence there is not
    proven (core/provenance.py)."""
    person = actor.describe(actor.PERSON)
    return provenance.OUTSIDE_AGENT if described == person else f"by {described}"
