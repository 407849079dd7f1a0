"""A settings change that switches the gate off mid-loop, blocked and told

(ConfigChange; docs/explanation/proof.md, "The gate switched off")

Claude Code runs this hook when a settings file changes during a session (the user's,
the project's, the local one), after the file changed on disk and before it applies
the change to the running session. When the loop is not over, was enforced by hooks
(loop/gateoff.py remembers it) and nothing enforces it with the files as they now stand
(its hooks removed, `disableAllHooks` set, the plugin switched off), the change is
blocked (`{"decision": "block"}`): the session keeps running ralphstate's hooks. The
file keeps the edit, so every `ralphstate` command, the status line and the next
session's start say the loop is no longer enforced; and a notification says it now,
since Claude Code shows a blocked change to nobody. A person who means to switch
ralphstate off mid-loop cancels the loop first (`ralphstate cancel`), or starts a new
session. A managed policy change cannot be blocked (the client ignores the decision);
any other change passes untouched.
"""

from __future__ import annotations

import os

from ralphstate.agents.contract import Agent
from ralphstate.core import state as st
from ralphstate.hooks import base
from ralphstate.hooks.base import HookInput, Output
from ralphstate.storage.system import paths

# What the notification leads with: the change did not reach the running session.
BLOCKED = "ralphstate kept its hooks in this session:"


@base.telling("config-change")
def handle(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    found = base.load(loop)
    if found is None:
        return None
    _, state = found
    if state["status"] not in st.ACTIVE:
        return None
    from ralphstate.loop import gateoff

    said = gateoff.no_longer(loop, state)
    if said is None:
        return None
    from ralphstate.hooks import notify

    out: Output = {"decision": "block", "reason": said}
    return notify.attach(out, agent.name, f"{BLOCKED} {said}", os.environ) or out
