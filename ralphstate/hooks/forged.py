"""Hook inputs a shell made up: whether an ending came from the client
(docs/explanation/proof.md, "Hook inputs the agent forged").

The agent can run ralphstate's hooks from its own shell with an input it wrote: a
SessionEnd that hands its loop back (and a SessionStart of a session that does not
exist that takes it), so that no session of its own owns the loop any more and its
Stop hook lets it go. Claude Code names in every hook input the transcript of the
session (`transcript_path`): a file it writes under its own directory
(`$CLAUDE_CONFIG_DIR/projects/`, else `~/.claude/projects/`), named after the session.
A SessionEnd whose input names no such file, another session's, or none at all, is
not taken for the client's: the loop is not released, and the person is told (on
stderr, in the log and in the loop's history, which `ralphstate log` shows). A
session that really ended without a transcript keeps the loop until its owner is
taken for gone (its process gone, or `ownerTimeout`), or the person runs `ralphstate
adopt`. A shell can still name a real transcript of the very session: that evidence
cannot tell it apart (SECURITY.md, promise 33).

Other agents name no transcript ralphstate can place: their endings are taken as
they come.
"""

from __future__ import annotations

import os
from pathlib import Path

from ralphstate.agents.contract import Agent
from ralphstate.core.text import visible

# Claude Code's own directory: the variable that moves it, and where it is by default.
ENV_CONFIG = "CLAUDE_CONFIG_DIR"
DEFAULT_CONFIG = ".claude"
PROJECTS = "projects"


def doubt(agent: Agent, hook_input: dict[str, object], session_id: str) -> str | None:
    """Why the input may not be the client's, in a few words; None when its transcript
    is the session's own, under the client's directory, or the agent names none."""
    if agent.name != "claude":
        return None
    named = hook_input.get("transcript_path")
    if not isinstance(named, str) or not named:
        return "it names no transcript"
    config = os.environ.get(ENV_CONFIG) or str(Path.home() / DEFAULT_CONFIG)
    projects = Path(config).expanduser().resolve() / PROJECTS
    path = Path(named).expanduser().resolve()
    shown = visible(named)[:200]
    if projects not in path.parents:
        return f"its transcript ({shown}) is not under Claude Code's own directory ({projects})"
    if not path.is_file():
        return f"its transcript ({shown}) does not exist"
    if path.stem != session_id:
        return f"its transcript ({shown}) is not session {visible(session_id)[:40]}'s"
    return None
