"""PostToolUse: the agent's task tools mirrored into the loop (docs/explanation/design.md,
"Task tools").

Runs after every call of a task tool (`TaskCreate`, `TaskUpdate`, `TodoWrite`), so it
holds to the Stop hook's speed: no transcript is read, nothing is imported that the
mirror does not use, and a call of any other tool ends before the state is read. It
never blocks a tool call: it prints nothing (a loop it cannot use is told once, as the
other hooks do), and a fault lets the call stand. The rules are `core.tasklist`'s.
"""

from __future__ import annotations

import os
from typing import Any

from ralphstate.agents.contract import Agent
from ralphstate.core import ownership, tasklist
from ralphstate.core import state as st
from ralphstate.core.limits import MAX_TASK_ID_CHARS
from ralphstate.hooks import base
from ralphstate.hooks.base import HookInput, Output
from ralphstate.hooks.faults import Fault, Unusable
from ralphstate.storage.loopdir.store import Event
from ralphstate.storage.peruser import registry
from ralphstate.storage.system import paths


@base.telling("post-tool-use")
def handle(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    tool = hook_input.get("tool_name")
    if tool not in tasklist.TOOLS:
        return None  # installed without a matcher: every other tool passes untouched
    found = base.load(loop)
    if found is None:
        return None
    store, state = found
    if state["status"] != "in_progress":
        return None  # a paused or finished loop is not changed by the agent's plan
    session_id = agent.session_id(hook_input)
    if session_id is None:
        raise Fault("input has no session id")
    mirror = _Mirror(agent, hook_input, loop, session_id, str(tool))
    # Another session's loop, or one that came with a clone, is judged on the file as
    # read: no lock is taken, nothing is written.
    if mirror.allowed(state) is None:
        return None
    base.update(store, mirror.change)
    if mirror.adopted is not None:
        base.record("post-tool-use", loop, mirror.adopted, agent.process_id(os.environ))
    return None


class _Mirror:
    """One call of a task tool, mirrored into the loop under the state lock."""

    def __init__(
        self, agent: Agent, hook_input: HookInput, loop: paths.LoopPaths, session_id: str, tool: str
    ) -> None:
        self.agent = agent
        self.hook_input = hook_input
        self.loop = loop
        self.session_id = session_id
        self.tool = tool
        shared = os.environ.get(agent.task_list_env or "", "")
        self.list_id = (
            shared if 0 < len(shared) <= MAX_TASK_ID_CHARS else session_id[:MAX_TASK_ID_CHARS]
        )
        self.runner = bool(os.environ.get(ownership.ENV_RUNNER))
        self.adopted: st.State | None = None  # the state as this call adopted it

    def allowed(self, current: st.State) -> ownership.Verdict | None:
        """The verdict when this session may mirror into the loop: its own, one it may
        adopt, or (inside `ralphstate run`, which owns the loop) one known here."""

        def known() -> bool:
            return registry.knows(self.loop, current)

        verdict = ownership.judge(current, self.session_id, self.agent.name, known=known)
        if verdict in ("owner", "adopt") or (self.runner and known()):
            return verdict
        return None

    def change(self, current: st.State, events: list[Event]) -> None:
        self.adopted = None
        if current["status"] != "in_progress":
            return
        verdict = self.allowed(current)
        if verdict is None:
            return
        if verdict == "adopt" and not self.runner:
            by = "post-tool-use"
            events.append(ownership.take(current, self.session_id, self.agent.name, by))
            self.adopted = current
        _mirror(self.loop, current, events, self.tool, self.hook_input, self.list_id)


def _mirror(
    loop: paths.LoopPaths,
    state: st.State,
    events: list[Event],
    tool: str,
    hook_input: HookInput,
    list_id: str,
) -> None:
    """The call mirrored into `state`; with a task file, its boxes are the steps (read
    here, under the state lock) and a completed task's box is ticked in it."""
    name = state["tasksFile"]
    texts: list[str] | None = None
    if name:
        from ralphstate.loop import taskfile

        try:
            boxes = taskfile.boxes(taskfile.read(loop.root, name))
        except taskfile.TaskFileError as exc:
            raise Unusable(str(exc).rstrip(".")) from None
        taskfile.apply(state, boxes)
        texts = [b.text for b in boxes]
    tool_input: Any = hook_input.get("tool_input")
    ticks = tasklist.mirror(
        state, events, tool, tool_input, hook_input.get("tool_response"), list_id, texts
    )
    if not ticks or not name:
        return
    from ralphstate.loop import taskfile

    try:
        ticked = [text for text in ticks if taskfile.tick(loop.root, name, text, True)]
        taskfile.sync(state, loop.root)
    except taskfile.TaskFileError as exc:
        raise Unusable(str(exc).rstrip(".")) from None
    events.extend({"event": "step_done", "step": text, "by": "task"} for text in ticked)
