"""The reply that ended a turn, read backwards in chunks from the end of a transcript.

A JSONL transcript only ever grows, so it is read backwards in chunks and never in
full: the answer is near the end. The agent's module judges each line (Claude Code's:
`agents.claude`): a reply's text ends the search with that text, a prompt that opened
the current reply ends it with None, anything else goes on.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from ralphstate.agents.contract import GO_ON
from ralphstate.core import limits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ralphstate.agents.contract import ReplyJudge

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)


def read_backwards(
    path: str | os.PathLike[str],
    judge: ReplyJudge,
    max_bytes: int = limits.MAX_TRANSCRIPT_TAIL_BYTES,
    chunk: int = limits.TRANSCRIPT_CHUNK_BYTES,
) -> str | None:
    """The reply `judge` finds nearest the end of the transcript at `path`. None when
    the reply has no text, when it is not found within the last `max_bytes`, or when
    the path is not a readable regular file. Never raises."""
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
        return _scan_backwards(fd, info.st_size, max_bytes, max(1, chunk), judge)
    except OSError:
        return None
    finally:
        os.close(fd)


def _scan_backwards(
    fd: int, size: int, max_bytes: int, chunk: int, judge: ReplyJudge
) -> str | None:
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
            done, answer = _judge(line, judge)
            if done:
                return answer
    if end > 0:  # the budget ran out mid-file; the oldest piece may be half a line
        return None
    return _judge(b"".join(reversed(partial)), judge)[1]


def _read_at(fd: int, offset: int, length: int) -> bytes | None:
    os.lseek(fd, offset, os.SEEK_SET)
    data = os.read(fd, length)
    while len(data) < length:
        more = os.read(fd, length - len(data))
        if not more:  # the file shrank under us: not an appended transcript
            return None
        data += more
    return data


def _judge(line: bytes, judge: ReplyJudge) -> tuple[bool, str | None]:
    try:
        entry = orjson.loads(line.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return GO_ON
    return judge(entry) if isinstance(entry, dict) else GO_ON
