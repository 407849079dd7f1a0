"""Endings the person did not see coming: a loop that became complete or cancelled
outside ralphstate (a hand edit of state.json), or that the agent cancelled or paused
itself (docs/explanation/proof.md, "Endings outside ralphstate"). The Stop hook tells
the person once, in a `systemMessage` and a notification; the history says so."""

from __future__ import annotations

import contextlib

from ralphstate.core import actor
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.storage import ledger
from ralphstate.storage.store import Store, of_loop

# How far back the history is read for the event that ended the loop.
_TAIL = 50


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
    if state["status"] not in ("paused", "cancelled"):
        return None
    ended = _agent_ending(store, state)
    if ended is None:
        return None
    who, what, at = ended
    if not ledger.told(paths, state, f"agent:{what}:{at}"):
        return None
    return (
        f"ralphstate: the agent itself ({who}) {what} the loop; no check proved it done."
        " `ralphstate status` shows where it stands; `ralphstate resume` goes on."
    )


def _agent_ending(store: Store, state: st.State) -> tuple[str, str, str] | None:
    """(who, "cancelled" or "paused", when) when the newest pause or cancel of this
    loop was an agent's own command."""
    try:
        entries = of_loop(store.history(_TAIL), state.get("loopId"))
    except RalphstateError:
        return None
    for entry in reversed(entries):
        if entry.get("event") in ("paused", "cancelled"):
            who = entry.get("actor")
            if actor.is_person(who) or not isinstance(who, dict):
                return None
            if entry.get("reason") not in (None, "agent"):
                return None  # a pause the agent said it needs a person for, or the hooks'
            return actor.describe(who), str(entry["event"]), str(entry.get("at") or "")
    return None


def _record(store: Store, state: st.State) -> None:
    from ralphstate.storage.store import append_history

    event: dict[str, object] = {"event": "ended_outside", "status": state["status"]}
    with contextlib.suppress(RalphstateError):
        append_history(store.paths.history, [event], state["iteration"], loop_id=state["loopId"])
