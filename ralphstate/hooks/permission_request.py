"""PermissionRequest (Claude Code, Bash): a loop that cannot start here says so.

Claude Code runs this hook when it is about to ask the person for permission, or to
deny a call on its own because nobody can answer (`claude -p`, an Agent SDK program).
Where nobody can, a `ralphstate init` the person has not allowed never runs: the
session (`claude -p "/ralphstate:start ..."`) would end having started nothing, and
exit 0. The hook denies it and interrupts the session instead, so Claude Code exits 1
(`is_error`, "Execution error"), the agent reads why, and the sentence goes to stderr
(shown with `--verbose`) and ralphstate's log. Wherever a person can answer, and for
any other command, it says nothing: the client asks, or denies, as it would.

The entry (`hooks.entry`) runs it before looking for a loop: there is none yet.
"""

from __future__ import annotations

import os

from ralphstate.agents import claude
from ralphstate.core import approving

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from ralphstate.agents.contract import Agent
    from ralphstate.hooks.base import HookInput, Output
    from ralphstate.storage.system.paths import LoopPaths

# Told to the agent, the log and stderr: what happened, and the ways to start it.
CANNOT_START = (
    "ralphstate: the loop cannot start here: `ralphstate init` needs the person's"
    " approval, and nobody can give it in this session (`claude -p` cannot ask). Start"
    " the loop in an interactive `claude` session, run the `ralphstate init` command in a"
    " terminal first, or allow it for this run with --allowedTools"
    " 'Bash(ralphstate init:*)'."
)


def handle(agent: Agent, hook_input: HookInput, loop: LoopPaths) -> Output | None:
    tool_input = hook_input.get("tool_input")
    if agent.name != "claude" or hook_input.get("tool_name") != "Bash":
        return None
    if not isinstance(tool_input, dict) or not isinstance(tool_input.get("command"), str):
        return None
    if claude.attended(os.environ) or not approving.starts_loop(tool_input["command"]):
        return None  # a person answers the prompt, or it is not the loop's start
    from ralphstate.hooks.faults import note

    note("permission-request", CANNOT_START.removeprefix("ralphstate: ").rstrip("."))
    decision = {"behavior": "deny", "message": CANNOT_START, "interrupt": True}
    out = {"hookEventName": "PermissionRequest", "decision": decision}
    return {"hookSpecificOutput": out, "systemMessage": CANNOT_START}
