"""The reply that ended a turn, read from the tail of another agent's transcript.

Claude Code's transcript has its own reader (`transcript`). GitHub Copilot CLI and
Cursor give their stop hooks no last message, only a transcript path, so the Stop
hook reads the end of that file:

- Copilot CLI (`~/.copilot/session-state/<session>/events.jsonl`): one event a line;
  `{"type": "assistant.message", "data": {"content": TEXT}}` is a reply (the client
  writes it before `agentStop` runs), `{"type": "user.message", ...}` a prompt.
- Cursor (agent transcripts): one message a line, `{"role": "assistant"|"user",
  "message": {"content": [{"type": "text", "text": ...}]}}`.
- Gemini CLI (`~/.gemini/tmp/<project>/chats/session-*.jsonl`): one record a line;
  `{"type": "gemini", "content": TEXT}` is a model reply (written before `AfterAgent`
  runs; a reply that called tools is written again with its `toolCalls`), `{"type":
  "user", "content": [{"text": ...}]}` a prompt or a block's reason, and a `user`
  record of `functionResponse` parts a tool's result; `{"$set": ...}` lines update the
  session's metadata. Its `AfterAgent` input does carry a reply field, but that field
  joins every reply of the prompt (see `table.GEMINI`).

Only the last `MAX_TRANSCRIPT_TAIL_BYTES` are read; the search goes backwards from
the end and stops at the prompt that opened the reply. Never raises.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from ralphstate.agents.transcript import text_of
from ralphstate.core import limits

# What one entry decides: (done, answer); see `transcript` for the same convention.
Verdict = tuple[bool, str | None]
_GO_ON: Verdict = (False, None)
_PROMPT: Verdict = (True, None)


def _copilot(entry: dict[str, object]) -> Verdict:
    kind = entry.get("type")
    data = entry.get("data")
    if not isinstance(data, dict):
        return _GO_ON
    if kind == "assistant.message":
        content = data.get("content")
        if isinstance(content, str) and content.strip():
            return True, content
        return _GO_ON  # a reply that only called tools
    if kind == "user.message":
        return _PROMPT
    return _GO_ON


def _cursor(entry: dict[str, object]) -> Verdict:
    role = entry.get("role")
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else entry.get("content")
    if role == "assistant":
        text = text_of(content)
        return (True, text) if text and text.strip() else _GO_ON
    if role == "user":
        return _PROMPT
    return _GO_ON


def _gemini(entry: dict[str, object]) -> Verdict:
    kind = entry.get("type")
    if kind == "gemini":
        # The newest reply is the one that ended the turn: AfterAgent runs only once no
        # tool call is pending. A reply without text is answered as none.
        text = text_of(entry.get("content"))
        return True, text if text and text.strip() else None
    if kind == "user":
        content = entry.get("content")
        if (
            isinstance(content, list)
            and content
            and all(isinstance(part, dict) and "functionResponse" in part for part in content)
        ):
            return _GO_ON  # a tool's result, within the reply
        return _PROMPT
    return _GO_ON


JUDGES: dict[str, Callable[[dict[str, object]], Verdict]] = {
    "copilot": _copilot,
    "cursor": _cursor,
    "gemini": _gemini,
}


def last_reply(
    path: str,
    kind: str,
    max_bytes: int = limits.MAX_TRANSCRIPT_TAIL_BYTES,
    anchor: object = None,
    wait: float = 0.0,
) -> str | None:
    """The text of the newest reply in the `kind` transcript at `path`, or None.

    Copilot CLI writes its events file behind the hook: the reply that ended the turn
    may reach the file after `agentStop` starts. With `anchor` (the hook input's
    `timestamp`), the search waits up to `wait` seconds for the `hook.start` event of
    this very hook, and reads the reply before it; after that it reads what is there."""
    judge = JUDGES.get(kind)
    if judge is None:
        return None
    if anchor is None or wait <= 0:
        return _scan(path, judge, max_bytes, None)[1]
    import time

    deadline = time.monotonic() + wait
    while True:
        found, answer = _scan(path, judge, max_bytes, anchor)
        if found or time.monotonic() >= deadline:
            return answer if found else _scan(path, judge, max_bytes, None)[1]
        time.sleep(0.05)


def newest_reply(
    path: str, kind: str, max_bytes: int = limits.MAX_TRANSCRIPT_TAIL_BYTES
) -> tuple[bool, str | None]:
    """(found, text) of the newest reply in the `kind` transcript at `path`: found is
    False when the file cannot be read or its tail holds neither a reply nor the prompt
    that opened it, so the caller knows the transcript did not answer."""
    judge = JUDGES.get(kind)
    if judge is None:
        return False, None
    return _scan(path, judge, max_bytes, None, decided=True)


def _is_anchor(entry: dict[str, object], anchor: object) -> bool:
    data = entry.get("data")
    if entry.get("type") != "hook.start" or not isinstance(data, dict):
        return False
    hook_input = data.get("input")
    return isinstance(hook_input, dict) and hook_input.get("timestamp") == anchor


def _scan(
    path: str,
    judge: Callable[[dict[str, object]], Verdict],
    max_bytes: int,
    anchor: object,
    decided: bool = False,
) -> tuple[bool, str | None]:
    """(anchor seen or not asked for, reply). Without an anchor, the newest reply.
    With `decided`, the flag says instead whether an entry decided the answer."""
    try:
        if not stat.S_ISREG(Path(path).stat().st_mode):
            return False, None  # a FIFO or a device is never opened
        with Path(path).open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = max(0, size - max(0, max_bytes))
            handle.seek(start)
            data = handle.read(size - start)
    except (OSError, TypeError, ValueError):
        return False, None
    import orjson

    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first piece may be half a line
    seen = anchor is None
    for line in reversed(lines):
        if not line.strip():
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        if not seen:
            seen = _is_anchor(entry, anchor)
            continue
        done, answer = judge(entry)
        if done:
            return True, answer
    return (False if decided else seen), None
