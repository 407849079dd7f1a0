"""Reading what a report tells: the state, the newest history lines, the tree the
work tree holds now (to tell stale evidence) and the loop's ledger (to tell a criterion
already true before any work), each read once and bounded."""

from __future__ import annotations

from typing import Any

from ralphstate.core import limits, queries
from ralphstate.core import state as st
from ralphstate.report.story import Story, gather
from ralphstate.storage.loopdir.store import Store, of_loop
from ralphstate.storage.repo import git


def story(store: Store) -> Story:
    from ralphstate.storage.peruser import ledger

    state = store.load()
    ledger.disown_grades(store.paths, state)  # a verdict written by hand is not graded
    history = store.history(limits.MAX_REPORT_HISTORY_LINES + 1)
    cut = len(history) > limits.MAX_REPORT_HISTORY_LINES
    if cut:
        # Cut only when what was left out is this loop's (a loop without an id: unknown).
        cut = bool(of_loop(history[:1], state["loopId"])) or not state["loopId"]
        history = history[1:]
    history = of_loop(history, state["loopId"])  # an earlier loop here is not this story
    tree = None
    if any(e.get("tree") for e in state["evidence"].values()):
        code = git.snapshot(store.paths)  # None: failed (some evidence names a tree)
        tree = code.tree if code else queries.UNKNOWN_TREE
    from ralphstate.core import redgreen

    already = redgreen.already_true(state, ledger.of_loop(store.paths, state))
    told = gather(state, history, str(store.paths.root), tree, cut, already)
    told.proof = proof_lines(store, state, history)
    return told


# History events that change who stands behind the proof, and how a report says them.
_PROOF_EVENTS = {
    "approved": "approved the loop's proof",
    "reverted": "reverted the loop's proof to the approved one",
    "trusted": "trusted the checks",
    "ended_outside": "state.json was set to {status} outside ralphstate (not verified)",
    "cancelled": "cancelled the loop",
    "paused": "paused the loop",
    "review": "a completion paused for review",
}


def proof_lines(store: Store, state: st.State, history: list[dict[str, Any]]) -> list[str]:
    """The report's proof section: the summary `status` prints, then who approved,
    reverted or ended what, when."""
    from ralphstate.core import actor
    from ralphstate.loop import proofreview

    lines = proofreview.summary_lines(proofreview.summary(store, state))
    for entry in history:
        name = str(entry.get("event"))
        said = _PROOF_EVENTS.get(name)
        if said is None:
            continue
        who = entry.get("actor")
        if name == "paused" and (
            actor.is_person(who) or entry.get("reason") not in (None, "agent")
        ):
            continue  # a person's pause is in the pauses; an agent's own is said here
        text = said.format(status=entry.get("status", "?"))
        by = "" if name in ("ended_outside", "review") else f"{_who(name, who)} "
        lines.append(f"{entry.get('at', '?')} #{entry.get('iteration', '?')}: {by}{text}")
    return lines


def _who(event: str, who: object) -> str:
    """Who did `event`: for a person-only act, "you" only where the person's presence
    was shown (core/provenance.py, `acted`)."""
    from ralphstate.core import actor, provenance

    if event in ("approved", "reverted", "trusted"):
        return provenance.acted(who)
    return actor.describe(who)
