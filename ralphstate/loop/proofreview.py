"""What a person must review before a loop may complete: its contract against the one
they approved, and its guarded files against the approved tree
(docs/explanation/proof.md).

`pending` gathers it for the Stop hook, `ralphstate run`, `status` and `review`; it
reads the ledger (storage/peruser/ledger.py), the history's tail (who made each change) and,
for a loop with guards, asks git. `approve` and `revert` are the person's answers.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ralphstate.core import actor, limits, proof
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
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


def pending(store: Store, state: st.State, adopt: bool = True) -> proof.Pending:
    """What changed in the loop's proof since a person approved it (nothing to review:
    `Pending.changes` is empty). A loop this machine has no record of is taken as it is
    now (a loop from before the ledger, or one whose record was lost: said by `status`);
    a state.json that is another loop than the one ralphstate started here is itself a
    change to review."""
    paths = store.paths
    entry = ledger.read(paths)
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
    if adopt and not changes and current != approved and not guard.changes:
        _extend(store, state, current)  # only additions: they stand without a review
    by = _actors(store, state, str(entry.get("approvedAt") or "")) if changes else []
    if changes and entry.get("replaced"):
        who = actor.describe(entry.get("author"))
        replaced = "(`init --force`, or `init` after a deleted state.json)"
        by = [f"{who}, who started a new loop over yours {replaced}"]
    return proof.Pending(
        [*changes, *guard.changes],
        [*by, *guard.by],
        guard.new_tests,
        guard.files,
        _approvals(entry),
    )


def _approvals(entry: dict[str, Any]) -> list[str]:
    """The changes a person approved during the loop, as a completion names them."""
    said = []
    for record in entry.get("approvals") or []:
        if isinstance(record, dict) and actor.is_person(record.get("by")):
            changes = "; ".join(str(c) for c in (record.get("changes") or [])[:3])
            said.append(f"{changes} (approved by you at {record.get('at')})")
    return said


GIT_SETTINGS = (
    "git's checkout settings changed since approval (a `filter.*` in git config, or"
    " .git/info/attributes): a filter can rewrite the files the checks run on"
)


def _git_settings_changed(store: Store, entry: dict[str, Any]) -> list[str]:
    """[GIT_SETTINGS] when the repository's checkout filters differ from those the
    person approved (storage/repo/git.py `checkout_settings`); [] otherwise."""
    known = entry.get("gitSettings")
    if not isinstance(known, str):
        return []
    from ralphstate.storage.repo import git

    now = git.checkout_settings(store.paths.root)
    return [GIT_SETTINGS] if now is not None and now != known else []


def record_git_settings(paths: Any) -> None:
    """Keep the repository's checkout settings as approved now (at `init`, at an
    approval); nothing outside a repository."""
    from ralphstate.storage.repo import git

    found = git.checkout_settings(paths.root)
    if found is None:
        return

    def edit(entry: dict[str, Any]) -> None:
        entry["gitSettings"] = found

    with contextlib.suppress(RalphstateError):
        ledger.change(paths, edit)


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


def approve(store: Store, by: actor.Actor, run: dict[str, object] | None = None) -> st.State:
    """The person approves the loop's contract and guarded files as they are now, and
    trusts its checks (and the run settings `run`, see `truststore.record`) on this
    machine. A loop paused for review completes when every criterion stands met, else
    goes on."""
    from ralphstate.storage.peruser import truststore

    state = store.load()
    truststore.record(store.paths, state, run)
    tree = _guard_tree(store, state)
    ledger.approve(store.paths, state, by, proof.contract_of(state), tree)
    record_git_settings(store.paths)

    def change(current: st.State, events: list[Event]) -> st.State:
        events.append({"event": "approved", "contract": proof.contract_of(current)})
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
    were approved back into the work tree; a loop paused for review goes on."""
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
    from ralphstate.storage.repo import guarded

    return guarded.snapshot(store.paths, list(raw["guards"]))


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
        "approvedAt": entry.get("approvedAt"),
        "author": actor.describe(entry["author"]) if "author" in entry else None,
        "review": pending.changes if pending else [],
        "reviewBy": pending.by if pending else [],
        "newTests": pending.new_tests if pending else [],
        "endedOutside": outside,
        "endedByAgent": _ending_said(store, state),
    }


def _ending_said(store: Store, state: st.State) -> str | None:
    ended = agent_ending(store, state)
    if ended is None:
        return None
    who, what, at = ended
    return f"{what} by the agent itself ({who}) at {at}; no check proved it done"


def pending_or_none(store: Store, state: st.State) -> proof.Pending | None:
    """`pending` for a loop not over; None for one that is (nothing will complete it)."""
    if state["status"] not in st.ACTIVE:
        return None
    return pending(store, state, adopt=False)


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
    if found["review"]:
        who = ", ".join(found["reviewBy"]) or "someone unknown"
        lines.append(
            f"proof: NEEDS YOUR REVIEW ({len(found['review'])} change(s) by {who}); it cannot"
            " complete until you run `ralphstate review`:"
        )
        lines += [f"  - {c}" for c in found["review"][:10]]
    elif found["approvedBy"]:
        lines.append(f"proof: as approved by {found['approvedBy']} at {found['approvedAt']}")
    if found["author"] and found["author"] != "you":
        lines.append(f"started by: {found['author']}")
    if found["newTests"]:
        lines.append(f"new test files since approval: {len(found['newTests'])}")
    return lines
