"""Hook inputs a shell made up: whether a handover, an ending or a stop came from the
client (docs/explanation/proof.md, "Hook inputs the agent forged").

The agent can run ralphstate's hooks from its own shell with an input it wrote: a
SessionEnd that hands its loop back, a SessionStart of a session that does not exist
that takes it, or a Stop run by hand. Claude Code names in every hook input the
transcript of the session (`transcript_path`): a file it writes under its own
directory (`$CLAUDE_CONFIG_DIR/projects/`, else `~/.claude/projects/`), named after the
session. The evidence, and what each hook does with it:

- SessionEnd (`doubt`): an input that names no such file, another session's, or none
  at all, is not taken for the client's: the loop is not released, and the person is
  told (on stderr, in the log and in the loop's history, which `ralphstate log` shows).
  A session that really ended without a transcript keeps the loop until its owner is
  taken for gone (its process gone, or `ownerTimeout`), or the person runs `ralphstate
  adopt`.
- Stop (`shell_stop`): the client runs it once the assistant's turn has ended, so the
  last assistant entry of the session's transcript waits on no tool. While the agent's
  Bash tool runs a command, its call is written there with no result yet: a Stop whose
  own transcript ends in a call still waiting is a shell's, and counts for nothing. An
  input that names none of the session's is looked up by the session's id, where the
  client keeps the project's transcripts.
- SessionStart (`shell_start`): on `resume` and `compact` the transcript is there and
  must be the session's own, as for SessionEnd. On `startup` and `clear` the client has
  written none yet, so the evidence is elsewhere: the loop's owner (or any session of
  the project, in the directory the input's transcript would be in) in the middle of a
  tool call. A `clear` that would hand the loop on from its owner in the same process
  while the owner's own call waits is a shell's (the process is busy, not clearing):
  the loop is not taken. An owner that crashed or timed out in a call left it waiting:
  no evidence. Another session's call waiting cannot be told from a real start beside
  it: the loop is taken, and said.

Only the end of a transcript is read (`limits.FORGED_TAIL_BYTES`), and only when a loop
is there. A shell can still name a real transcript of the very session while no call
of the agent's waits (a command it left running in the background after its turn): that
evidence cannot tell it apart (SECURITY.md, promise 33). Other agents name no transcript
ralphstate can place: their hooks are taken as they come.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ralphstate.agents.contract import Agent
from ralphstate.core import limits
from ralphstate.core.state import State
from ralphstate.core.text import visible
from ralphstate.storage.system.paths import LoopPaths

# Claude Code's own directory: the variable that moves it, and where it is by default.
ENV_CONFIG = "CLAUDE_CONFIG_DIR"
DEFAULT_CONFIG = ".claude"
PROJECTS = "projects"

# The sources of a SessionStart whose transcript exists already: it must be the session's.
CONTINUING = ("resume", "compact")


def doubt(agent: Agent, hook_input: dict[str, object], session_id: str) -> str | None:
    """Why the input may not be the client's, in a few words; None when its transcript
    is the session's own, under the client's directory, or the agent names none."""
    if agent.name != "claude":
        return None
    named = hook_input.get("transcript_path")
    if not isinstance(named, str) or not named:
        return "it names no transcript"
    projects = _projects()
    path = _resolved(named)
    shown = visible(named)[:200]
    if path is None:
        return f"its transcript ({shown}) is no path a file can have"
    if projects not in path.parents:
        return f"its transcript ({shown}) is not under Claude Code's own directory ({projects})"
    if not path.is_file():
        return f"its transcript ({shown}) does not exist"
    if path.stem != session_id:
        return f"its transcript ({shown}) is not session {visible(session_id)[:40]}'s"
    return None


def shell_stop(
    agent: Agent, hook_input: dict[str, object], session_id: str, root: str
) -> str | None:
    """Why this Stop was run by a shell, not the client, in a few words; None when the
    evidence does not say so (the session's own transcript waits on no tool call). An
    input that names no transcript of the session's own is looked up where the client
    writes it for the project at `root` (or at the input's `cwd`), by the session's id."""
    if agent.name != "claude":
        return None
    if doubt(agent, hook_input, session_id) is None:
        found = [str(hook_input["transcript_path"])]
    else:
        named = {root, str(hook_input.get("cwd") or root)}
        found = [str(_projects() / _folder(where) / f"{session_id}.jsonl") for where in named]
    for path in found:
        waiting = waiting_call(path)
        if waiting is not None:
            return f"the session's transcript shows a tool call still running ({waiting})"
    return None


def _folder(where: str) -> str:
    """The directory Claude Code keeps a project's transcripts in, named after its path."""
    return re.sub(r"[^A-Za-z0-9]", "-", where)


def shell_start(
    agent: Agent,
    hook_input: dict[str, object],
    session_id: str,
    source: str,
    owner: str | None,
    reown: bool = False,
) -> tuple[bool, str] | None:
    """Whether a SessionStart that would take the loop is a shell's: (True, why) when the
    evidence says so, (False, why) when it cannot be told from the client's, None when
    nothing speaks against it. `owner`: the session that owns the loop now; `reown`:
    whether it would take the loop from that owner as the session after its /clear (a
    takeover's owner is gone or timed out: a call it left waiting says nothing)."""
    if agent.name != "claude":
        return None
    doubted = doubt(agent, hook_input, session_id)
    if doubted is None:
        return None
    if source in CONTINUING:  # its transcript is written already: it must be there
        return True, doubted
    named = hook_input.get("transcript_path")
    path = _resolved(named) if isinstance(named, str) and named else None
    if isinstance(named, str) and named:
        if path is None or "does not exist" not in doubted or path.stem != session_id:
            return True, doubted  # outside the client's directory, or another's
        folder = path.parent
    else:  # where the client keeps this project's transcripts
        folder = _projects() / _folder(str(hook_input.get("cwd") or ""))
    if reown and owner and owner != session_id:
        waiting = waiting_call(str(folder / f"{owner}.jsonl"))
        if waiting is not None:
            return True, f"the loop's owner is in the middle of a tool call ({waiting})"
    for other in _newest(folder, (session_id, owner or session_id)):
        waiting = waiting_call(str(other))
        if waiting is not None:
            shown = visible(other.stem)[:40]
            return False, f"session {shown} of this project is in a tool call ({waiting})"
    return None


def waiting_call(path: str) -> str | None:
    """The tool call the end of the transcript at `path` shows still waiting for its
    result, in a few words (a Bash call: its command); None when none waits, or the file
    cannot be read. A call the client resolved, a reply that followed or a new prompt
    ends the wait; only the last `limits.FORGED_TAIL_BYTES` are read."""
    import orjson

    waiting: dict[str, str] = {}
    for line in _tail(path):
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        kind = entry.get("type") if isinstance(entry, dict) else None
        message = entry.get("message") if kind in ("user", "assistant") else None
        content = message.get("content") if isinstance(message, dict) else None
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if kind == "assistant" and uses:
            waiting.update({str(b.get("id")): _described(b) for b in uses})
        elif results:
            for block in results:
                waiting.pop(str(block.get("tool_use_id")), None)
        elif kind in ("user", "assistant") and any(b.get("type") == "text" for b in blocks):
            waiting.clear()  # a reply, or a new prompt: the turn moved on
        elif kind == "user" and isinstance(content, str):
            waiting.clear()
    return next(iter(waiting.values()), None) if waiting else None


def _described(block: dict[str, object]) -> str:
    """A tool call in a few words: a Bash call's command, else the tool's name."""
    given = block.get("input")
    command = given.get("command") if isinstance(given, dict) else None
    if isinstance(command, str):
        return f"Bash: {visible(command)[:120]}"
    return visible(block.get("name") or "a tool")[:40]


def _tail(path: str) -> list[bytes]:
    """The whole lines in the last `limits.FORGED_TAIL_BYTES` of the file; none when it
    cannot be read, or is not a regular file (a FIFO the agent left there is never
    waited on)."""
    from ralphstate.storage.system import fsio

    try:
        with fsio.open_regular(Path(path)) as handle:
            size = os.fstat(handle.fileno()).st_size
            start = max(0, size - limits.FORGED_TAIL_BYTES)
            handle.seek(start)
            data = handle.read(limits.FORGED_TAIL_BYTES)
    except (OSError, ValueError):
        return []
    lines = data.splitlines()
    return lines[1:] if start > 0 else lines  # the first may be cut short


def _newest(folder: Path, sessions: tuple[str, ...]) -> list[Path]:
    """The transcripts in `folder` of sessions other than `sessions`, the newest
    `limits.FORGED_SIBLINGS`."""
    try:
        found = [p for p in folder.glob("*.jsonl") if p.stem not in sessions]
        found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return []
    return found[: limits.FORGED_SIBLINGS]


def _resolved(named: str) -> Path | None:
    """The absolute path `named` names; None when it names none (a NUL byte in it, a
    `~user` with no home)."""
    try:
        return Path(named).expanduser().resolve()
    except (OSError, ValueError, RuntimeError):
        return None


def _projects() -> Path:
    config = os.environ.get(ENV_CONFIG) or str(Path.home() / DEFAULT_CONFIG)
    return Path(config).expanduser().resolve() / PROJECTS


def refused(hook: str, loop: LoopPaths, state: State, event: dict[str, object], said: str) -> None:
    """Tell the person of an input taken for a shell's: `said` on stderr and in the log,
    and `event` in the loop's history (`ralphstate log`), when it can be written."""
    import contextlib

    from ralphstate.core.errors import RalphstateError
    from ralphstate.hooks.faults import note
    from ralphstate.storage.loopdir.store import append_history

    note(hook, said.removeprefix("ralphstate: "))
    with contextlib.suppress(RalphstateError):  # the note above has said it
        append_history(loop.history, [event], state["iteration"], loop_id=state["loopId"])
