"""The reply that ended a turn, read from the tail of an agent's JSONL transcript.

For an agent whose stop input gives no reply, or gives every reply of the prompt
joined (`Agent.read_transcript`): the agent's module judges each entry (a reply, a
prompt that opened the reply, or neither), and this module reads the file. Only the
last `MAX_TRANSCRIPT_TAIL_BYTES` are read; the search goes backwards from the end and
stops at the prompt that opened the reply. Never raises.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ralphstate.core import limits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ralphstate.agents.contract import ReplyJudge

    # Whether an entry is the one the agent writes as this very hook starts.
    Anchor = Callable[[dict[str, object]], bool]


def last_reply(
    path: str,
    judge: ReplyJudge,
    max_bytes: int = limits.MAX_TRANSCRIPT_TAIL_BYTES,
    anchor: Anchor | None = None,
    wait: float = 0.0,
) -> str | None:
    """The text of the newest reply `judge` finds in the transcript at `path`, or None.

    An agent may write its transcript behind the hook (Copilot CLI): the reply that
    ended the turn may reach the file after the hook starts. With `anchor` (the entry
    the agent writes as this very hook starts), the search waits up to `wait` seconds
    for that entry, and reads the reply before it; after that it reads what is there."""
    if anchor is None or wait <= 0:
        return _scan(path, judge, max_bytes, None)[1]
    import time

    deadline = time.monotonic() + wait
    while True:
        found, answer = _scan(path, judge, max_bytes, anchor)
        if found or time.monotonic() >= deadline:
            return answer if found else _scan(path, judge, max_bytes, None)[1]
        time.sleep(0.05)


def newest_reply(path: str, judge: ReplyJudge) -> tuple[bool, str | None]:
    """(found, text) of the newest reply `judge` finds in the transcript at `path`:
    found is False when the file cannot be read or its tail holds neither a reply nor
    the prompt that opened it, so the caller knows the transcript did not answer."""
    return _scan(path, judge, limits.MAX_TRANSCRIPT_TAIL_BYTES, None, decided=True)


def _scan(
    path: str,
    judge: ReplyJudge,
    max_bytes: int,
    anchor: Anchor | None,
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
        if not seen and anchor is not None:
            seen = anchor(entry)
            continue
        done, answer = judge(entry)
        if done:
            return True, answer
    return (False if decided else seen), None
