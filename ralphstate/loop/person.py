"""Only the person trusts and approves (docs/explanation/proof.md, "Only a person approves").

`ralphstate trust` (and the approval of a changed contract) decides what proves a loop
done, so it must be the person's act, never the agent's. A command that runs in an
agent session or in a `ralphstate run` iteration (`core.actor`) is refused with one
sentence telling the agent to ask the person, unless it carries a one-time approval
(`storage.approvals`): Claude Code's PreToolUse hook gives one to the command the person
let run at its permission prompt. Other agents have no such prompt: there the person
runs the command in their own terminal.
"""

from __future__ import annotations

import os

from ralphstate.core import actor
from ralphstate.core.approving import APPROVAL_ENV
from ralphstate.core.errors import RalphstateError
from ralphstate.loop.project import current_actor
from ralphstate.storage.peruser import approvals
from ralphstate.storage.system.paths import LoopPaths

# What the person did, when a command runs as theirs through an approval.
APPROVED_AT_PROMPT = "permission prompt"


def require_person(paths: LoopPaths, what: str) -> None:
    """Let `what` (the command, as the person would type it: "`ralphstate trust`") go
    on for the loop at `paths` only when the person runs it: from their own shell, or
    approved at Claude Code's permission prompt (then this process's changes are
    recorded as the person's). Else RalphstateError, one sentence for the agent."""
    found = current_actor()
    if actor.is_person(found):
        return
    token = os.environ.get(APPROVAL_ENV)
    if token and found.get("kind") == "agent":
        why = approvals.consume(token, paths, found.get("session"))
        if why is None:
            person = {**actor.PERSON, "via": APPROVED_AT_PROMPT}
            if found.get("session"):
                person["session"] = found["session"]
            actor.set_current(person)
            return
        if why == approvals.EXPIRED:
            minutes = approvals.TTL_SECONDS // 60
            raise RalphstateError(
                f"the person's approval of {what} expired ({minutes} minutes after Claude"
                " Code asked them): ask them again."
            )
    raise RalphstateError(refusal(what, found))


def refusal(what: str, found: actor.Actor) -> str:
    """Why `what` does not run for `found`, an agent or a run, and what to do instead:
    one sentence, read by the agent."""
    lead = f"{what} approves what proves this loop done, so only the person may run it"
    if found.get("kind") == "run":
        return f"{lead}, never an iteration of `ralphstate run`: tell them it waits for them."
    if found.get("agent") == "claude":
        return (
            f"{lead}: ask them to run it in their own terminal, or to approve it when"
            " Claude Code asks them."
        )
    return f"{lead}: ask them to run it in their own terminal."
