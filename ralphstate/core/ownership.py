"""Who a loop belongs to: the one home of the ownership rules (docs/explanation/design.md,
"Ownership").

A loop is owned by one session of one agent (`sessionId`, `ownerAgent`). The hooks
and `ralphstate adopt` ask `judge` what a session may do with a loop, `take` makes a
session the owner and `release` hands the loop back when its session ends. Each runs
inside `Store.update`, under the state lock, so two sessions starting at once cannot
both take the same loop.

An owner is gone when its session ended (it released the loop: no owner), or when
nothing changed in the loop for `ownerTimeout` (a session that crashed, or a terminal
closed without the agent's session-end hook): the next session that starts in the
project takes it. The person can always say so at once: `ralphstate adopt`.

The facts that cost a file read (whether this machine knows the loop, whether the
owner is the very agent process that asks) are passed as functions and asked only
when a rule needs them: a loop owned by the asking session never touches the
per-user registry.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Literal

from ralphstate.core import clock
from ralphstate.core.schema import DEFAULT_AGENT
from ralphstate.core.state import State

# owner:    the asking session owns the loop.
# adopt:    nobody owns it and this machine made or adopted it: the session may take it.
# reown:    another session of the same agent owns it, in the very agent process that asks,
#           and the person ran /clear there (Claude Code gives it a new session id).
# takeover: another session owns it, but did nothing in it for `ownerTimeout`, and this
#           machine knows the loop: a session that starts here takes it.
# foreign:  another session, or a session of another agent, owns it.
# unknown:  nobody owns it and it arrived with a clone: only `ralphstate adopt` takes it.
Verdict = Literal["owner", "adopt", "reown", "takeover", "foreign", "unknown"]
Event = dict[str, object]

# Set in the environment of the agents `ralphstate run` starts: the runner owns the loop,
# so its iterations' hooks restore the loop and take nothing.
ENV_RUNNER = "RALPHSTATE_RUNNER"

# How long an owner may leave the loop untouched before a new session takes it
# (`ownerTimeout` null); `ownerTimeout` 0 turns the hand-over by time off.
DEFAULT_OWNER_TIMEOUT = 30 * 60.0


def owner_agent(state: State) -> str:
    """The agent of the owning session; files from before `ownerAgent` were Claude Code's."""
    return state.get("ownerAgent") or DEFAULT_AGENT


def owner_timeout(state: State) -> float | None:
    """Seconds without a change to the loop after which its owner counts as gone; None:
    never (`ownerTimeout` 0)."""
    value = state.get("ownerTimeout")
    if value is None:
        return DEFAULT_OWNER_TIMEOUT
    return float(value) if value > 0 else None


def idle_for(
    state: State, modified: dt.datetime | None = None, now: dt.datetime | None = None
) -> float | None:
    """Seconds since the loop last changed: its `updatedAt`, or `modified` (the state
    file's modification time: a change made by hand) when that is later; None when
    neither says, or the last says a time still to come."""
    times = [t for t in (clock.parse_iso(state.get("updatedAt")), modified) if t is not None]
    if not times:
        return None
    seconds = ((now or clock.now()) - max(times)).total_seconds()
    return seconds if seconds >= 0 else None


def gone(state: State, modified: dt.datetime | None = None, now: dt.datetime | None = None) -> bool:
    """The owner left the loop untouched for its `ownerTimeout` (a crashed session)."""
    limit = owner_timeout(state)
    idle = idle_for(state, modified, now)
    return limit is not None and idle is not None and idle >= limit


def judge(
    state: State,
    session_id: str | None,
    agent: str,
    *,
    known: Callable[[], bool],
    cleared_here: Callable[[], bool] | None = None,
    gone: Callable[[], bool] | None = None,
) -> Verdict:
    """What the session `session_id` of `agent` may do with the loop.

    `known()`: this machine made or adopted this very loop (the registry). `cleared_here()`:
    the session starts after /clear in the agent process that owns the loop. `gone()`:
    the owner left the loop untouched for its `ownerTimeout`. The last two are asked at
    SessionStart only: the Stop hook never re-owns nor takes a loop over."""
    owner = state.get("sessionId")
    if not owner:
        return "adopt" if known() else "unknown"
    if owner == session_id and owner_agent(state) == agent:
        return "owner"
    if cleared_here is not None and owner_agent(state) == agent and known() and cleared_here():
        return "reown"
    if gone is not None and session_id and gone() and known():
        return "takeover"
    return "foreign"


def take(state: State, session_id: str | None, agent: str | None, by: str) -> Event:
    """Make `session_id` of `agent` the owner (None: nobody, the next session may adopt)
    and return the history event that says so. A loop with no `startedAt` (a state file
    written by hand) is given one: the registry knows a loop by it."""
    previous = state.get("sessionId")
    state["sessionId"] = session_id
    state["ownerAgent"] = agent if session_id else None
    if not state["startedAt"]:
        state["startedAt"] = clock.now_iso()
    return {"event": "adopted", "session": session_id, "agent": agent, "from": previous, "by": by}


def release(state: State, reason: str) -> Event:
    """Hand the loop back when its owner's session ends (`reason`: the agent's word for
    why), and return the history event that says so: the next session takes it."""
    previous, agent = state.get("sessionId"), state.get("ownerAgent")
    state["sessionId"] = None
    state["ownerAgent"] = None
    return {"event": "released", "session": previous, "agent": agent, "reason": reason}
