"""The tokens a session spent since the last stop, read from the end of its transcript.

An agent whose transcript gives each reply's tokens (Claude Code's
`~/.claude/projects/<project>/<session>.jsonl`, Gemini CLI's session file: JSONL files
that only grow) has a `UsageFormat`: its module's judge says which reply a line belongs
to and its tokens (`agents.claude`, `agents.gemini`). The Stop hook reads only the bytes
appended since the last stop, from the offset kept in the state (`transcriptUsage`),
at most `MAX_TRANSCRIPT_USAGE_BYTES` a stop, and only whole lines: its cost does not
grow with the transcript. The rules (docs/explanation/design.md, "Tokens inside a session"):

- A reply written on several lines (each content block, or again once its tool calls
  ran) is counted once, by the most any of its lines says.
- Replies older than the loop (`startedAt`, to the second) are not counted (`contract.older`).
- When another session counted last (this one owns the loop again, after /clear or an
  adopt), no reply written at or before the newest reply counted so far (`countedAt`,
  the transcript's own timestamp) is counted: this session's earlier stops counted it.
- A new session starts at the tail of its transcript (its last
  `MAX_TRANSCRIPT_USAGE_BYTES`, from the first whole line). When this session's
  transcript shrank or was replaced (another file at the path, or a size below the
  offset), the tail is read again, but nothing is counted up to and including the last
  reply already counted (`resync`); if that reply is not found, nothing of what the
  file held is counted.
- A line longer than the bound is passed over (`midLine`: the next stop drops the
  rest of it); a half-written last line waits for the next stop.

Never raises: a transcript that cannot be read gives None, and the loop's usage and
offset stay as they were.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson

from ralphstate.core import limits

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from ralphstate.agents.contract import UsageFormat
    from ralphstate.core.fields import TranscriptUsage

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)


def fingerprint(path: str, info: os.stat_result) -> str:
    """Which file this is: its path, device and inode, hashed (no path in the state)."""
    import hashlib

    basis = f"{path}\0{info.st_dev}\0{info.st_ino}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(basis).hexdigest()[:16]


def count(
    path: str,
    form: UsageFormat | None,
    session: str,
    since: TranscriptUsage | None,
    started: str | None,
    bound: int = limits.MAX_TRANSCRIPT_USAGE_BYTES,
) -> tuple[int, TranscriptUsage] | None:
    """(tokens of the replies appended since `since`, where the reading stopped), or
    None when the transcript at `path`, in `form`, cannot be read, or when the agent's
    transcript gives no tokens (no `form`)."""
    if form is None:
        return None
    try:
        # stat before open: a FIFO or a device is never opened, so it cannot block.
        if not stat.S_ISREG(Path(path).stat().st_mode):
            return None
        fd = os.open(path, _OPEN_FLAGS)
    except (OSError, TypeError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        return _read(fd, info, path, form, session, since, started or "", max(1, bound))
    except OSError:
        return None
    finally:
        os.close(fd)


def _read(
    fd: int,
    info: os.stat_result,
    path: str,
    form: UsageFormat,
    session: str,
    since: TranscriptUsage | None,
    started: str,
    bound: int,
) -> tuple[int, TranscriptUsage]:
    size, file = info.st_size, fingerprint(path, info)
    same = since is not None and since["session"] == session
    counted_at = since["countedAt"] if since is not None else None
    after = counted_at if since is not None and not same else None
    if since is not None and same and since["file"] == file and size >= since["offset"]:
        offset, mid = since["offset"], since["midLine"]
        last, resync = since["lastMessageId"], since["resync"]
    else:  # a new session, or this one's transcript shrank or was replaced: its tail
        offset = max(0, size - bound)
        mid = offset > 0 and _byte_at(fd, offset - 1) != b"\n"
        last = since["lastMessageId"] if since is not None and same else None
        resync = last is not None
    os.lseek(fd, offset, os.SEEK_SET)
    data = os.read(fd, min(bound, size - offset))
    end = offset + len(data)
    start = 0
    if mid:  # the rest of a line begun before `offset`
        cut = data.find(b"\n")
        if cut < 0:
            return 0, _record(session, file, end, last, resync, counted_at, mid=True)
        start, mid = cut + 1, False
    cut = data.rfind(b"\n", start)
    if cut < 0:
        whole = b""
        if start == 0 and len(data) >= bound:  # a line longer than the bound: passed over
            return 0, _record(session, file, end, last, resync, counted_at, mid=True)
        position = offset + start  # a half-written line: read again at the next stop
    else:
        whole = data[start : cut + 1]
        position = offset + cut + 1
    tokens, last, resync, newest = _tally(whole, form, session, started, last, resync, after)
    if resync and end >= size:
        resync = False  # the file's end without the last reply counted: count what comes
    if newest is not None and (counted_at is None or newest > counted_at):
        counted_at = newest
    return tokens, _record(session, file, position, last, resync, counted_at, mid=False)


def _byte_at(fd: int, offset: int) -> bytes:
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, 1)


def _tally(
    data: bytes,
    form: UsageFormat,
    session: str,
    started: str,
    last: str | None,
    resync: bool,
    after: str | None = None,
) -> tuple[int, str | None, bool, str | None]:
    """The tokens of the replies in `data`'s lines, each reply once (the most any of its
    lines says), none up to `last` while `resync`, none written at or before `after`;
    the newest reply, `resync`, and the newest timestamp of a line counted."""
    hints, judge = form.hints, form.judge
    replies: dict[str, int] = {}
    newest: str | None = None
    for line in data.split(b"\n"):
        if not all(hint in line for hint in hints):
            continue
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        found = judge(entry, session, started) if isinstance(entry, dict) else None
        if found is None:
            continue
        reply, tokens = found
        at = entry.get("timestamp")
        at = at if isinstance(at, str) else None
        if after is not None and (at is None or at <= after):
            continue  # counted by this session before another session counted
        if resync:
            resync = reply != last
            continue
        if reply == last and reply not in replies:
            continue  # counted at an earlier stop (its first lines came before)
        replies[reply] = max(tokens, replies.get(reply, 0))
        last = reply
        if at is not None and (newest is None or at > newest):
            newest = at
    return sum(replies.values()), last, resync, newest


def _record(
    session: str,
    file: str,
    offset: int,
    last: str | None,
    resync: bool,
    counted_at: str | None,
    *,
    mid: bool,
) -> TranscriptUsage:
    return {
        "session": session,
        "file": file,
        "offset": offset,
        "lastMessageId": last,
        "resync": resync,
        "midLine": mid,
        "countedAt": counted_at,
    }
