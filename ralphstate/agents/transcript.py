"""The current reply's last assistant text, read from the end of a Claude Code transcript.

The transcript is JSONL and only ever grows, so it is read backwards in chunks and
never in full: the answer is near the end. Each content block of a reply is its own
line; tool results come back as `user` lines carrying `tool_result` blocks and are
passed over, while any other `user` line is a prompt (or hook feedback) that opened
the current reply, so the search stops there.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from ralphstate.core import limits

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
# What one line decides: (done, answer). An assistant text line ends the search with its
# text; a prompt line ends it with None (the current reply had no text); others go on.
_GO_ON: tuple[bool, str | None] = (False, None)
_PROMPT: tuple[bool, str | None] = (True, None)


def last_assistant_text(
    path: str | os.PathLike[str],
    max_bytes: int = limits.MAX_TRANSCRIPT_TAIL_BYTES,
    chunk: int = limits.TRANSCRIPT_CHUNK_BYTES,
) -> str | None:
    """The text of the newest assistant text line of the current reply, its text
    blocks joined with newlines. None when the reply has no text, when it is not found
    within the last `max_bytes`, or when the path is not a readable regular file.
    Never raises."""
    try:
        name = os.fspath(path)
        # stat before open: a FIFO or a device is never opened, so it cannot block.
        if not isinstance(name, str) or not stat.S_ISREG(Path(name).stat().st_mode):
            return None
        fd = os.open(name, _OPEN_FLAGS)
    except (OSError, TypeError, ValueError):
        return None
    try:
        info = os.fstat(fd)  # the path may have been swapped since the stat
        if not stat.S_ISREG(info.st_mode):
            return None
        return _scan_backwards(fd, info.st_size, max_bytes, max(1, chunk))
    except OSError:
        return None
    finally:
        os.close(fd)


def _scan_backwards(fd: int, size: int, max_bytes: int, chunk: int) -> str | None:
    floor = max(0, size - max(0, max_bytes))
    end = size
    partial: list[bytes] = []  # the line whose start is not read yet, in reverse file order
    while end > floor:
        start = max(floor, end - chunk)
        data = _read_at(fd, start, end - start)
        if data is None:
            return None
        end = start
        cut = data.rfind(b"\n")
        if cut < 0:
            partial.append(data)
            continue
        partial.append(data[cut + 1 :])
        lines = data[:cut].split(b"\n")
        lines.append(b"".join(reversed(partial)))
        partial = [lines[0]]
        for line in reversed(lines[1:]):
            done, answer = _judge(line)
            if done:
                return answer
    if end > 0:  # the budget ran out mid-file; the oldest piece may be half a line
        return None
    return _judge(b"".join(reversed(partial)))[1]


def _read_at(fd: int, offset: int, length: int) -> bytes | None:
    os.lseek(fd, offset, os.SEEK_SET)
    data = os.read(fd, length)
    while len(data) < length:
        more = os.read(fd, length - len(data))
        if not more:  # the file shrank under us: not an appended transcript
            return None
        data += more
    return data


def _judge(line: bytes) -> tuple[bool, str | None]:
    try:
        entry = orjson.loads(line.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return _GO_ON
    if not isinstance(entry, dict) or entry.get("isSidechain") is True:
        return _GO_ON
    message = entry.get("message")
    if not isinstance(message, dict):
        return _GO_ON
    content = message.get("content")
    kind = entry.get("type")
    if kind == "assistant":
        text = text_of(content)
        return (True, text) if text is not None else _GO_ON
    if kind == "user" and entry.get("isMeta") is not True:
        if isinstance(content, list) and any(
            isinstance(block, dict) and block.get("type") == "tool_result" for block in content
        ):
            return _GO_ON
        if isinstance(content, (str, list)):
            return _PROMPT
    return _GO_ON


def text_of(content: object) -> str | None:
    """A message's text: a string as it is, or the `text` blocks of a list of content
    blocks joined with newlines; None when there is no text (a reply that only called
    tools)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(texts) if texts else None
