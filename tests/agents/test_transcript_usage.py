"""The tokens a session spent since the last stop, read from the transcript's new bytes
(`agents/transcript_usage.py`), on transcripts recorded from the real clients: each
reply counted once, only whole lines, at most the bound a stop, never twice after the
file shrank or was replaced."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from ralphstate.agents.table import get
from ralphstate.agents.transcript_usage import count
from ralphstate.core import fields
from tests.helpers import FIXTURES

# Recorded from Claude Code against the scripted API, which reported each reply as 100
# input, 30 cache creation, 7 cache read and 20 output tokens: four replies, the first
# split over two lines (a text block and a tool call) with the same message id.
CLAUDE = FIXTURES / "agents" / "claude_transcript.jsonl"
FORKED = FIXTURES / "agents" / "claude_transcript_forked.jsonl"
GEMINI = FIXTURES / "agents" / "gemini_transcript.jsonl"
SESSION = "249254c0-c2cb-49ee-a15b-41ab03aafaf3"
FORK = "175ad930-e5c7-4344-97bf-4108c3de94be"
REPLY = 157
LAST = "msg_000000000000000000000006"
STARTED = "2026-11-23T02:26:30Z"


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def reply_lines(data: list[bytes]) -> list[int]:
    """The indexes of the assistant lines."""
    return [i for i, line in enumerate(data) if orjson.loads(line).get("type") == "assistant"]


def read(
    path: Path,
    since: fields.TranscriptUsage | None = None,
    session: str = SESSION,
    kind: str = "claude",
    started: str | None = STARTED,
    bound: int = 4 * 1024 * 1024,
) -> tuple[int, fields.TranscriptUsage]:
    found = count(str(path), get(kind).usage_format, session, since, started, bound)
    assert found is not None
    return found


def test_a_whole_transcript_counts_each_reply_once_as_run_counts_a_result(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(CLAUDE.read_bytes())
    tokens, reading = read(path)
    assert tokens == 4 * REPLY  # what `claude -p --output-format json` reported: 628
    assert reading == {
        "session": SESSION,
        "file": reading["file"],
        "offset": path.stat().st_size,
        "lastMessageId": LAST,
        "resync": False,
        "midLine": False,
        "countedAt": "2026-11-23T02:26:31.520Z",
    }


def test_stops_count_only_what_was_appended_and_a_split_reply_once(tmp_path: Path) -> None:
    data = lines(CLAUDE)
    first, second = reply_lines(data)[:2]  # the two lines of the first reply
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(data[: first + 1]))
    tokens, reading = read(path)
    assert (tokens, reading["lastMessageId"]) == (REPLY, "msg_000000000000000000000001")
    assert read(path, reading) == (0, reading)  # nothing new: nothing counted
    with path.open("ab") as handle:
        handle.write(b"".join(data[first + 1 :]))
    tokens, reading = read(path, reading)
    assert second == first + 1
    assert tokens == 3 * REPLY  # its second line is not counted again
    assert reading["offset"] == path.stat().st_size


def test_a_half_written_last_line_waits_for_the_next_stop(tmp_path: Path) -> None:
    data = lines(CLAUDE)
    last = reply_lines(data)[-1]
    whole = b"".join(data[:last])
    path = tmp_path / "t.jsonl"
    path.write_bytes(whole + data[last][:100])
    tokens, reading = read(path)
    assert tokens == 3 * REPLY
    assert reading["offset"] == len(whole)  # at the start of the half line
    with path.open("ab") as handle:
        handle.write(b"".join([data[last][100:], *data[last + 1 :]]))
    assert read(path, reading)[0] == REPLY


def test_replies_copied_into_a_forked_session_are_not_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(FORKED.read_bytes())
    assert read(path, session=FORK)[0] == REPLY  # its own reply only


def test_replies_before_the_loop_started_are_not_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(CLAUDE.read_bytes())
    assert read(path, started="2026-11-23T02:26:31Z")[0] == 3 * REPLY  # 31.079, .264, .520
    assert read(path, started="2026-11-23T02:27:00Z")[0] == 0
    assert read(path, started=None)[0] == 4 * REPLY


def new_reply(number: int) -> bytes:
    """An assistant line like the recorded ones, with its own message id."""
    entry = orjson.loads(lines(CLAUDE)[reply_lines(lines(CLAUDE))[-1]])
    entry["message"]["id"] = f"msg_{number:024d}"
    return orjson.dumps(entry) + b"\n"


def test_a_replaced_transcript_counts_only_what_follows_the_last_reply_counted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(CLAUDE.read_bytes())
    tokens, reading = read(path)
    assert tokens == 4 * REPLY
    other = tmp_path / "new.jsonl"  # the same lines and one more, put in its place
    other.write_bytes(CLAUDE.read_bytes() + new_reply(99))
    other.replace(path)
    tokens, again = read(path, reading)
    assert tokens == REPLY
    assert again["file"] != reading["file"]
    assert (again["lastMessageId"], again["resync"]) == ("msg_" + "0" * 22 + "99", False)


def test_a_transcript_that_shrank_counts_nothing_it_cannot_place(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(CLAUDE.read_bytes())
    reading = read(path)[1]
    path.write_bytes(new_reply(40) + new_reply(41))  # shorter, without the last reply
    tokens, again = read(path, reading)
    assert tokens == 0  # they may have been counted before: never twice
    assert (again["resync"], again["offset"]) == (False, path.stat().st_size)
    with path.open("ab") as handle:
        handle.write(new_reply(42))
    assert read(path, again)[0] == REPLY


def test_a_new_session_counts_its_own_transcript(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(CLAUDE.read_bytes())
    earlier: fields.TranscriptUsage = {
        "session": "an-earlier-session",
        "file": "0" * 16,
        "offset": 10**9,
        "lastMessageId": LAST,  # another session's reply: no resync here
        "resync": False,
        "midLine": False,
        "countedAt": None,
    }
    tokens, reading = read(path, earlier)
    assert (tokens, reading["session"], reading["resync"]) == (4 * REPLY, SESSION, False)


def reply_at(number: int, at: str) -> bytes:
    """A reply like `new_reply`'s, written at `at`."""
    entry = orjson.loads(new_reply(number))
    entry["timestamp"] = at
    return orjson.dumps(entry) + b"\n"


def test_a_session_that_owns_the_loop_again_counts_none_of_its_replies_twice(
    tmp_path: Path,
) -> None:
    """A counts its transcript, another session B counts its own (after /clear, or an
    adopt), then A owns the loop again (resumed): A's transcript is read from its tail
    again, and the replies counted at A's earlier stops are not counted a second time."""
    mine = tmp_path / "a.jsonl"
    mine.write_bytes(CLAUDE.read_bytes())
    tokens, reading = read(mine)
    assert tokens == 4 * REPLY
    theirs = tmp_path / "b.jsonl"
    theirs.write_bytes(reply_at(50, "2026-11-23T02:30:00.000Z"))
    tokens, reading = read(theirs, reading, session="session-b")
    assert tokens == REPLY
    with mine.open("ab") as handle:
        handle.write(reply_at(60, "2026-11-23T02:40:00.000Z"))
    tokens, reading = read(mine, reading)
    assert tokens == REPLY  # the new reply only, not the four counted before
    assert reading["lastMessageId"] == "msg_" + "0" * 22 + "60"
    # B again: its reply came before A's last reply counted, and is not counted again
    assert read(theirs, reading, session="session-b")[0] == 0


@pytest.mark.parametrize("bound", [3000, 20_000, 70_000])
def test_each_stop_reads_at_most_the_bound_and_the_sum_is_the_whole(
    tmp_path: Path, bound: int
) -> None:
    data = CLAUDE.read_bytes()
    longest = max(map(len, lines(CLAUDE)))
    path = tmp_path / "t.jsonl"
    path.write_bytes(data[:0])
    tokens, reading = read(path, bound=bound)
    path.write_bytes(data)
    total, stops = tokens, 0
    while reading["offset"] < len(data):
        before = reading["offset"]
        tokens, reading = read(path, reading, bound=bound)
        assert 0 < reading["offset"] - before <= bound
        total, stops = total + tokens, stops + 1
    assert stops >= len(data) // bound
    # Lines longer than 3,000 bytes are passed over; no reply's line is that long.
    assert longest > 3000
    assert (total, reading["midLine"]) == (4 * REPLY, False)


def test_a_line_longer_than_the_bound_is_passed_over(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    huge = b'{"type":"user","message":{"content":"' + b"x" * 9000 + b'"}}\n'
    path.write_bytes(b"")
    reading = read(path, bound=2000)[1]  # read from its start: this session's own file
    path.write_bytes(huge + new_reply(1))
    tokens, reading = read(path, reading, bound=2000)
    assert (tokens, reading["offset"], reading["midLine"]) == (0, 2000, True)
    while reading["midLine"]:
        tokens, reading = read(path, reading, bound=2000)
        assert tokens == 0
    assert reading["offset"] == len(huge)  # the reply that follows is whole, unread
    assert read(path, reading, bound=2000)[0] == REPLY


def test_a_new_session_starts_at_the_tail_of_a_large_transcript(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with path.open("wb") as handle:
        handle.truncate(10**8)  # sparse: 100 MB without a line break
        handle.seek(0, os.SEEK_END)
        handle.write(b"\n" + new_reply(1) + new_reply(2))
    tokens, reading = read(path, bound=4096)
    assert (tokens, reading["offset"]) == (2 * REPLY, path.stat().st_size)


def test_a_tail_that_starts_at_a_line_start_keeps_that_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(new_reply(1) + new_reply(2))
    tokens, reading = read(path, bound=len(new_reply(2)))
    assert (tokens, reading["lastMessageId"]) == (REPLY, "msg_" + "0" * 23 + "2")


def test_gemini_replies_are_counted_once_by_their_total(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(GEMINI.read_bytes())
    tokens, reading = read(path, session="s", kind="gemini", started="2026-11-22T00:00:00Z")
    # three replies of 15 tokens; the one that called a tool is written twice
    assert (tokens, reading["lastMessageId"]) == (45, "745023ca-dbd9-43c3-96e4-b07374ae8bdb")


@pytest.mark.parametrize("what", ["missing", "directory", "fifo", "unknown kind"])
def test_a_transcript_that_cannot_be_read_gives_none(tmp_path: Path, what: str) -> None:
    path = tmp_path / "t.jsonl"
    if what == "directory":
        path.mkdir()
    elif what == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        os.mkfifo(path)
    elif what == "unknown kind":
        path.write_bytes(CLAUDE.read_bytes())
    kind = "codex" if what == "unknown kind" else "claude"
    assert count(str(path), get(kind).usage_format, SESSION, None, None) is None
