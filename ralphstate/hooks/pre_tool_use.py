"""PreToolUse (Claude Code, Bash): the person answers for the agent's approvals
(docs/explanation/proof.md, "Only a person approves").

On Edit, Write, MultiEdit and Bash it also has the person answer for a change to what
runs ralphstate's hooks (hooks/gatefiles.py).

Runs before each command of the agent's Bash tool; the entry has already let every
command that does not name ralphstate go (`hooks.entry`). A command that approves what
proves the loop done (`core.approving`: `ralphstate trust`, `ralphstate review
--approve` or `--revert`) is handed to the person: the hook answers `ask`, so Claude Code
shows its permission prompt, in every permission mode (bypassPermissions and dontAsk
too), and gives the command a one-time approval (`storage.approvals`) in its
environment, which `loop.person.require_person` accepts once. Where nobody can answer a
prompt (`claude -p`, an Agent SDK program, a `ralphstate run` iteration) it answers
`deny`, with one sentence telling the agent to ask the person. A command that names the
approval's variable itself is denied.

It fails open as every hook does (`hooks.faults`), and here that means no decision:
the command then runs without an approval, and `require_person` refuses it. It never
answers `allow`.
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

# Told to the agent (a `deny` reason reaches the model).
ASK_THE_PERSON = (
    "Approving what proves this loop done is the person's decision, and nobody can"
    " answer a permission prompt here: ask the person to approve it themselves."
)
NAMED_ITSELF = (
    f"{approving.APPROVAL_ENV} is set by ralphstate alone, for a command the person"
    " approved at the permission prompt: run the command without it."
)
# A change to what runs ralphstate's hooks (hooks/gatefiles.py): asked of the person,
# told to the agent where nobody can answer.
GATE_QUESTION = (
    "ralphstate: the agent asks to change {what}, which decides whether ralphstate's hooks"
    " run while the loop is on. Without them nothing checks the loop's stops. Only you"
    " may: say yes if you mean to change how the loop is enforced."
)
GATE_NOBODY = (
    "Changing {what} decides whether ralphstate's hooks run while the loop is on; that is"
    " the person's decision, and nobody can answer a permission prompt here: ask the"
    " person to make the change themselves."
)
_WHAT = {
    "trust": "to trust {checks} to run on this machine and to approve what proves the"
    " loop done as it is now",
    "review --approve": "to approve the changes to what proves the loop done",
    "review --revert": "to put back what proves the loop done as you last approved it",
    approving.UNCLEAR: "to run a command ralphstate cannot read word by word (a variable"
    " or a substitution as its program, `eval`, `sh -c`, or too long), which may approve"
    " what proves the loop done",
}


def handle(agent: Agent, hook_input: HookInput, loop: LoopPaths) -> Output | None:
    tool_input = hook_input.get("tool_input")
    tool_name = hook_input.get("tool_name")
    if agent.name != "claude" or not isinstance(tool_input, dict):
        return None
    gate = _gate(str(tool_name), tool_input, loop)
    if gate is not None:
        return gate
    if tool_name != "Bash" or not isinstance(tool_input.get("command"), str):
        return None
    command: str = tool_input["command"]
    if approving.names_approval(command):
        return _decision("deny", NAMED_ITSELF)
    found = approving.approving(command)
    if found is None:
        return None
    from ralphstate.core.ownership import ENV_RUNNER

    if os.environ.get(ENV_RUNNER) or not claude.attended(os.environ):
        return _decision("deny", ASK_THE_PERSON)
    from ralphstate.core.errors import RalphstateError
    from ralphstate.hooks.faults import Fault
    from ralphstate.storage.peruser import approvals

    try:
        call, transcript = hook_input.get("tool_use_id"), hook_input.get("transcript_path")
        token = approvals.mint(
            loop,
            agent.session_id(hook_input),
            call if isinstance(call, str) else "",
            transcript if isinstance(transcript, str) else "",
        )
    except RalphstateError as exc:
        raise Fault(str(exc).rstrip(".")) from None
    asked = {**tool_input, "command": approving.with_approval(command, token)}
    return _decision("ask", _question(found, loop), asked)


def _gate(tool_name: str, tool_input: dict[str, object], loop: LoopPaths) -> Output | None:
    """A call that would change what runs ralphstate's hooks (hooks/gatefiles.py):
    asked of the person, denied where nobody can answer; None for any other call."""
    from ralphstate.hooks.gatefiles import gate_file

    found = gate_file(tool_name, tool_input, loop)
    if found is None:
        return None
    from ralphstate.core.ownership import ENV_RUNNER

    if os.environ.get(ENV_RUNNER) or not claude.attended(os.environ):
        return _decision("deny", GATE_NOBODY.format(what=found))
    return _decision("ask", GATE_QUESTION.format(what=found))


def _question(found: str, loop: LoopPaths) -> str:
    """What the person is asked at the prompt: what the command approves."""
    checks = "its checks"
    if found == "trust":
        import contextlib

        from ralphstate.core.text import count
        from ralphstate.storage.loopdir.store import Store
        from ralphstate.storage.peruser import truststore

        with contextlib.suppress(Exception):  # a loop it cannot read: asked all the same
            checks = count(len(truststore.armed(Store(loop).load())), "check")
    what = _WHAT[found].format(checks=checks)
    read = "them (`ralphstate status`)" if found == "trust" else "the changes (`ralphstate review`)"
    if found == approving.UNCLEAR:
        read = "the command"
    return f"ralphstate: the agent asks {what}. Only you may: say yes if you have read {read}."


def _decision(decision: str, reason: str, updated: dict[str, object] | None = None) -> Output:
    out: dict[str, object] = {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }
    if updated is not None:
        out["updatedInput"] = updated
    return {"hookSpecificOutput": out}
