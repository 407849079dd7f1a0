"""PreCompact: the time of the last compaction of an active loop's session, in the state
(`lastCheckpoint`) and the history (`checkpoint`), for the SessionStart after it."""

from __future__ import annotations

from ralphstate.agents.contract import Agent
from ralphstate.core import clock, ownership
from ralphstate.core import state as st
from ralphstate.hooks import base
from ralphstate.hooks.base import HookInput, Output
from ralphstate.hooks.faults import Fault
from ralphstate.storage.loopdir.store import Event
from ralphstate.storage.peruser import registry
from ralphstate.storage.system import paths


@base.telling("pre-compact")
def handle(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    found = base.load(loop)
    if found is None:
        return None
    store, state = found
    session_id = agent.session_id(hook_input)
    if session_id is None:  # whose checkpoint it would be is unknown: change nothing
        raise Fault("input has no session id")
    trigger = str(hook_input.get("trigger") or "")[:20]

    def checkpoint(current: st.State, events: list[Event]) -> None:
        """An active loop of this session's, or one it may adopt; not another session's,
        nor a loop that arrived with a clone (left alone, without the lock)."""
        if current["status"] not in st.ACTIVE:
            return
        verdict = ownership.judge(
            current, session_id, agent.name, known=lambda: registry.knows(loop, current)
        )
        if verdict in ("owner", "adopt"):
            current["lastCheckpoint"] = clock.now_iso()
            events.append({"event": "checkpoint", "trigger": trigger})

    base.update(store, checkpoint, read=state)
    return None
