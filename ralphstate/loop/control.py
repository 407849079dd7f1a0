"""The loop's status and its owner, `ralphstate pause|resume|cancel|adopt`: each a
change through the store (locked, atomic, logged to history), noted in the registry."""

from __future__ import annotations

import contextlib

from ralphstate.core import actor, clock, ownership, queries
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.loop.project import claude_pid, current_session
from ralphstate.storage.loopdir.store import Change, Event, Store
from ralphstate.storage.peruser import ledger, registry


def _lifecycle(store: Store, fn: Change[st.State]) -> st.State:
    """A change of status, also noted in the registry's summary of a loop known here
    (`ralphstate list` shows it for a loop whose directory is gone). The agent's own
    commands (criteria, steps) leave the registry alone: they run dozens of times a loop
    and `list` reads a loop's live file while it exists."""
    new = store.update(fn)
    with contextlib.suppress(OSError, RalphstateError):
        registry.refresh(store.paths, new)
    return new


def pause(store: Store, reason: str) -> tuple[st.State, bool]:
    """Pause the loop; (the state, whether it changed). A paused loop stays as it is,
    its reason too: `pause` twice is not a mistake, as `resume` twice is not. An agent's
    own pause without a reason of its own is recorded as the agent's (`agent`), never
    as the person's (`user`)."""
    if reason == "user" and not actor.is_person(actor.current()):
        reason = "agent"

    def fn(state: st.State, events: list[Event]) -> bool:
        if state["status"] == "paused":
            return False
        if state["status"] != "in_progress":
            raise RalphstateError(f"the loop is {state['status']}, not in progress.")
        state["status"], state["pauseReason"] = "paused", reason
        events.append({"event": "paused", "reason": reason})
        return True

    return _lifecycle_changed(store, fn)


def _lifecycle_changed(store: Store, fn: Change[bool]) -> tuple[st.State, bool]:
    """`_lifecycle` for a change that says whether it changed anything."""
    said: list[bool] = []

    def change(state: st.State, events: list[Event]) -> st.State:
        said[:] = [fn(state, events)]
        return state

    return _lifecycle(store, change), said[0]


def resume(store: Store, more: int | None) -> tuple[st.State, bool]:
    """Resume the loop; (the state, whether it changed). An in-progress loop without
    `more` stays as it is."""

    def fn(state: st.State, events: list[Event]) -> bool:
        if state["status"] == "cancelled":
            raise RalphstateError("the loop was cancelled; start a new one with `ralphstate init`.")
        if state["status"] == "in_progress" and more is None:
            return False
        extra = more
        if extra is None and state["iteration"] >= state["maxIterations"]:
            extra = 10
        if extra:
            state["maxIterations"] = max(state["maxIterations"], state["iteration"]) + extra
        if (
            state["status"] == "complete"
            and not queries.unmet(state)
            and not ledger.ended_outside(store.paths, state)
        ):
            raise RalphstateError(
                "the loop is complete; set a criterion back to false first"
                " (ralphstate criteria set NAME false) or start a new loop."
            )
        state["status"], state["pauseReason"] = "in_progress", None
        state["blocksWithoutProgress"] = 0
        state["lastProgress"] = None
        events.append({"event": "resumed", "maxIterations": state["maxIterations"]})
        return True

    return _lifecycle_changed(store, fn)


def cancel(store: Store) -> tuple[st.State, bool]:
    """Cancel the loop; (the state, whether it changed): a cancelled loop stays as it is."""

    def fn(state: st.State, events: list[Event]) -> bool:
        if state["status"] == "complete":
            raise RalphstateError(
                "the loop is complete; there is nothing to cancel (it stays complete)."
            )
        if state["status"] == "cancelled":
            return False
        state["status"], state["pauseReason"] = "cancelled", None
        events.append({"event": "cancelled"})
        return True

    return _lifecycle_changed(store, fn)


def adopt(store: Store) -> st.State:
    """Own the loop from this agent session (or, outside one, let the next adopt it)."""
    agent, sid = current_session()

    def fn(state: st.State, events: list[Event]) -> st.State:
        events.append(ownership.take(state, sid, agent, "cli"))
        if not state["startedAt"]:  # the registry knows a loop by it (registry.knows)
            state["startedAt"] = clock.now_iso()
        return state

    registry.check_writable()  # adopting is recording: say so before the owner changes
    new = store.update(fn)
    registry.record(store.paths, new, claude_pid())
    return new
