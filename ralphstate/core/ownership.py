"""Who a loop belongs to: the one home of the ownership rules (docs/explanation/design.md,
"Ownership").

A loop is owned by one session of one agent (`sessionId`, `ownerAgent`). The hooks
and `ralphstate adopt` ask `judge` what a session may do with a loop, and `take`
makes a session the owner. Both run inside `Store.update`, under the state lock, so
two sessions starting at once cannot both take the same loop.

The facts that cost a file read (whether this machine knows the loop, whether the
owner is the very agent process that asks) are passed as functions and asked only
when a rule needs them: a loop owned by the asking session never touches the
per-user registry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from ralphstate.core.state import DEFAULT_AGENT, State

# owner:   the asking session owns the loop.
# adopt:   nobody owns it and this machine made or adopted it: the session may take it.
# reown:   another session of the same agent owns it, in the very agent process that asks,
#          and the person ran /clear there (Claude Code gives it a new session id).
# foreign: another session, or a session of another agent, owns it.
# unknown: nobody owns it and it arrived with a clone: only `ralphstate adopt` takes it.
Verdict = Literal["owner", "adopt", "reown", "foreign", "unknown"]
Event = dict[str, object]

# Set in the environment of the agents `ralphstate run` starts: the runner owns the loop,
# so its iterations' hooks restore the loop and take nothing.
ENV_RUNNER = "RALPHSTATE_RUNNER"


def owner_agent(state: State) -> str:
    """The agent of the owning session; files from before `ownerAgent` were Claude Code's."""
    return state.get("ownerAgent") or DEFAULT_AGENT


def judge(
    state: State,
    session_id: str | None,
    agent: str,
    *,
    known: Callable[[], bool],
    cleared_here: Callable[[], bool] | None = None,
) -> Verdict:
    """What the session `session_id` of `agent` may do with the loop.

    `known()`: this machine made or adopted this very loop (the registry). `cleared_here()`:
    the session starts after /clear in the agent process that owns the loop (SessionStart
    only; the Stop hook never re-owns)."""
    owner = state.get("sessionId")
    if not owner:
        return "adopt" if known() else "unknown"
    if owner == session_id and owner_agent(state) == agent:
        return "owner"
    if cleared_here is not None and owner_agent(state) == agent and known() and cleared_here():
        return "reown"
    return "foreign"


def take(state: State, session_id: str | None, agent: str | None, by: str) -> Event:
    """Make `session_id` of `agent` the owner (None: nobody, the next session may adopt)
    and return the history event that says so."""
    previous = state.get("sessionId")
    state["sessionId"] = session_id
    state["ownerAgent"] = agent if session_id else None
    return {"event": "adopted", "session": session_id, "agent": agent, "from": previous, "by": by}
