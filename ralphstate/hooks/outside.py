"""Endings the person did not see coming: a loop that became complete or cancelled
outside ralphstate (a hand edit of state.json), or that the agent cancelled or paused
itself (docs/explanation/proof.md, "Endings outside ralphstate"). The Stop hook tells
the person once, in a `systemMessage` and a notification; the history says so."""

from __future__ import annotations

import contextlib

from ralphstate.agents.contract import Agent
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import ledger
from ralphstate.storage.system.paths import LoopPaths

Output = dict[str, object]


def notice(store: Store, state: st.State) -> str | None:
    """The one-time message for the person about how this loop ended, if it ended in
    a way they must hear of; None otherwise (or once they were told)."""
    paths = store.paths
    if ledger.ended_outside(paths, state):
        key = f"outside:{state['status']}"
        if not ledger.told(paths, state, key):
            return None
        _record(store, state)
        return (
            f"ralphstate: state.json says the loop is {state['status']}, but ralphstate did"
            " not write that: it ended outside ralphstate (a hand edit) and is not verified."
            " `ralphstate status` shows what ralphstate knows; `ralphstate resume` puts it"
            " back in progress."
        )
    if ledger.paused_outside(paths, state):
        if not ledger.told(paths, state, f"outside:paused:{state['pauseReason']}"):
            return None
        _record(store, state)
        return (
            "ralphstate: state.json says the loop is paused"
            f" ({visible(str(state['pauseReason']))[:40]}), but ralphstate did not write that:"
            " it was paused outside ralphstate (a hand edit), not by a person's command."
            " `ralphstate resume` goes on."
        )
    from ralphstate.loop.proofreview import agent_ending

    ended = agent_ending(store, state)
    if ended is None:
        return None
    who, what, at = ended
    if not ledger.told(paths, state, f"agent:{what}:{at}"):
        return None
    return (
        f"ralphstate: the agent itself ({who}) {what} the loop; no check proved it done."
        " `ralphstate status` shows where it stands; `ralphstate resume` goes on."
    )


def _record(store: Store, state: st.State) -> None:
    from ralphstate.storage.loopdir.store import append_history

    event: dict[str, object] = {"event": "ended_outside", "status": state["status"]}
    with contextlib.suppress(RalphstateError):
        append_history(store.paths.history, [event], state["iteration"], loop_id=state["loopId"])


def told_gone(
    event: str, agent: Agent, loop: LoopPaths, hidden_by: LoopPaths | None = None
) -> Output | None:
    """A hook that found no state.json (`event`: the Stop hook, SessionStart) says once
    that it was deleted while its loop was not over, if it was: on stderr and in the log,
    as a fault is said (the hook goes on as with no loop), and to the person in the
    hook's answer. Whichever of them comes first tells it; None otherwise. `hidden_by`:
    the outer loop the hooks found instead of the deleted one, named too, and a session
    start tells the agent as well."""
    told = gone(loop, hidden_by)
    if told is None:
        return None
    from ralphstate.hooks.faults import note

    note(event, told.removeprefix("ralphstate: ").rstrip("."))
    if hidden_by is not None and event == "session-start":
        return agent.render_context(told, told)
    return agent.render_notice(told)


def gone(loop: LoopPaths, hidden_by: LoopPaths | None = None) -> str | None:
    """The one-time message for a loop whose state.json was deleted while it was not
    over (ralphstate last wrote it in progress or paused); None otherwise."""
    loop_id = ledger.in_progress_gone(loop)
    if loop_id is None:
        return None

    def edit(entry: ledger.Entry) -> None:
        entry["status"] = "deleted"  # told once: the next stop finds nothing to tell

    try:
        ledger.change(loop, edit)
    except RalphstateError:
        return None
    if hidden_by is not None:  # the hooks find an outer loop now: name both
        return (
            f"ralphstate: the loop's directory ({visible(str(loop.dir))}) was deleted outside"
            " ralphstate while the loop was not over: it ended outside ralphstate, not"
            " verified; the hooks now find the loop of the project above it"
            f" ({visible(str(hidden_by.dir))}) instead. `ralphstate init` in"
            f" {visible(str(loop.root))} starts a new one there."
        )
    if not loop.dir.is_dir():  # the whole directory went: nothing is made again there
        return (
            f"ralphstate: the loop's directory ({loop.display(loop.dir)}) was deleted outside"
            " ralphstate while the loop was not over: it ended outside ralphstate, not"
            " verified. `ralphstate init` starts a new one."
        )
    with contextlib.suppress(RalphstateError):
        from ralphstate.storage.loopdir.store import append_history

        append_history(
            loop.history,
            [{"event": "ended_outside", "status": "deleted"}],
            0,
            loop_id=loop_id or None,
        )
    return (
        "ralphstate: the loop's state.json was deleted outside ralphstate while the loop was"
        " not over: it ended outside ralphstate, not verified. `ralphstate init` starts a new one."
    )


def replaced(store: Store, state: st.State) -> str | None:
    """The one-time message for a state.json that holds another loop than the one
    ralphstate started here while that one was not over (its `loopId` changed by
    hand): the hooks leave such a loop alone, and the person hears why."""
    paths = store.paths
    entry = ledger.read(paths)
    if entry is None or entry.get("loop") in (None, state.get("loopId")):
        return None
    told = entry.get("toldReplaced", False)  # a file with no loop id is told as None
    if entry.get("status") not in st.ACTIVE or told == state.get("loopId"):
        return None

    def edit(found: ledger.Entry) -> None:
        found["toldReplaced"] = state.get("loopId")

    try:
        ledger.change(paths, edit)
    except RalphstateError:
        return None
    return (
        "ralphstate: state.json now holds another loop than the one ralphstate started here"
        " (its loop id was changed by hand), so the Stop hook no longer holds the agent;"
        " `ralphstate review` shows what changed."
    )
