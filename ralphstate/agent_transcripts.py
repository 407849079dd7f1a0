"""The reply that ended a turn, read from the tail of another agent's transcript.

Claude Code's transcript has its own reader (`transcript`). GitHub Copilot CLI and
Cursor give their stop hooks no last message, only a transcript path, so the Stop
hook reads the end of that file:

- Copilot CLI (`~/.copilot/session-state/<session>/events.jsonl`): one event a line;
  `{"type": "assistant.message", "data": {"content": TEXT}}` is a reply (the client
  writes it before `agentStop` runs), `{"type": "user.message", ...}` a prompt.
- Cursor (agent transcripts): one message a line, `{"role": "assistant"|"user",
  "message": {"content": [{"type": "text", "text": ...}]}}`.

Only the last `MAX_TRANSCRIPT_TAIL_BYTES` are read; the search goes backwards from
the end and stops at the prompt that opened the reply. Never raises.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from ralphstate import limits

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


def _text_of(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
        return "\n".join(texts) if texts else None
    return None


def _cursor(entry: dict[str, object]) -> Verdict:
    role = entry.get("role")
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else entry.get("content")
    if role == "assistant":
        text = _text_of(content)
        return (True, text) if text and text.strip() else _GO_ON
    if role == "user":
        return _PROMPT
    return _GO_ON


JUDGES: dict[str, Callable[[dict[str, object]], Verdict]] = {
    "copilot": _copilot,
    "cursor": _cursor,
}


def last_reply(
    path: str, kind: str, max_bytes: int = limits.MAX_TRANSCRIPT_TAIL_BYTES
) -> str | None:
    """The text of the newest reply in the `kind` transcript at `path`, or None."""
    judge = JUDGES.get(kind)
    if judge is None:
        return None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None  # a FIFO or a device is never opened
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = max(0, size - max(0, max_bytes))
            handle.seek(start)
            data = handle.read(size - start)
    except (OSError, TypeError, ValueError):
        return None
    import orjson

    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first piece may be half a line
    for line in reversed(lines):
        if not line.strip():
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            done, answer = judge(entry)
            if done:
                return answer
    return None
