"""StopFailure: a turn of the session ended on an API error, recorded for the next
SessionStart to tell."""

from __future__ import annotations

import os

from ralphstate.agents.contract import Agent
from ralphstate.core import clock, limits, ownership
from ralphstate.core import state as st
from ralphstate.hooks import base
from ralphstate.hooks.base import HookInput, Output
from ralphstate.storage.loopdir.store import Event
from ralphstate.storage.peruser import registry
from ralphstate.storage.system import paths


@base.telling("stop-failure")
def handle(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    """A turn of this session ended on an API error (Claude Code's StopFailure: `error`
    is `rate_limit`, `overloaded`, `billing_error`, ...): record it in history and in the
    state's `errors` and `lastFailure`, for the next SessionStart to tell. The output is
    ignored by the client; nothing is printed."""
    found = base.load(loop)
    if found is None:
        return None
    store, state = found
    session_id = agent.session_id(hook_input)
    kind = str(hook_input.get("error") or "unknown")[:40]
    text = hook_input.get("error_details") or hook_input.get("last_assistant_message") or ""
    message = " ".join(str(text).split())[: limits.MAX_PROBLEM_CHARS]

    def record(current: st.State, events: list[Event]) -> None:
        if current["status"] not in st.ACTIVE:
            return
        verdict = ownership.judge(
            current, session_id, agent.name, known=lambda: registry.knows(loop, current)
        )
        runner = bool(os.environ.get(ownership.ENV_RUNNER))
        if verdict not in ("owner", "adopt") and not runner:
            return  # another session's loop, or one that came with a clone
        now = clock.now_iso()
        current["lastFailure"] = {"at": now, "error": kind, "message": message}
        st.add_error(current, f"the turn ended on an API error ({kind}): {message}", at=now)
        events.append({"event": "stop_failure", "error": kind, "message": message})

    base.update(store, record, read=state)
    return None
