"""Reading the current reply's last text off the end of a real-format transcript."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ralphstate.agents.claude import last_assistant_text
from ralphstate.core import limits

SESSION = "3f1c2a9e-5b7d-4e8f-9a0b-1c2d3e4f5a6b"

# --- lines in Claude Code's transcript format -------------------------------------------


def _envelope(kind: str, message: dict[str, Any], **extra: Any) -> bytes:
    entry: dict[str, Any] = {
        "parentUuid": "0c4a3a52-8a59-4b6f-9b51-2f8f0e2b7d11",
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/project",
        "sessionId": SESSION,
        "version": "2.1.330",
        "gitBranch": "main",
        "type": kind,
        "message": message,
        "uuid": "5e0b6f3c-1d2e-4f5a-8b9c-0d1e2f3a4b5c",
        "timestamp": "2026-05-09T07:35:25.123Z",
        **extra,
    }
    return orjson.dumps(entry) + b"\n"


def assistant(*blocks: dict[str, Any]) -> bytes:
    return _envelope(
        "assistant",
        {
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": list(blocks),
            "stop_reason": None,
            "usage": {"input_tokens": 12, "output_tokens": 34},
        },
        requestId="req_011CVh6x2Yw",
    )


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(command: str = "pytest -q") -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": "toolu_01A09q90qw90lq917835lq9",
        "name": "Bash",
        "input": {"command": command, "description": "Run the tests"},
    }


def thinking() -> dict[str, Any]:
    return {"type": "thinking", "thinking": "Let me check.", "signature": "EqoBCkgIBx"}


def tool_result(output: str = "3 passed") -> bytes:
    return _envelope(
        "user",
        {
            "role": "user",
            "content": [
                {
                    "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                    "type": "tool_result",
                    "content": output,
                    "is_error": False,
                }
            ],
        },
        toolUseResult={"stdout": output, "stderr": "", "interrupted": False},
    )


def prompt(value: str = "Build the thing.") -> bytes:
    return _envelope("user", {"role": "user", "content": value})


def prompt_blocks(value: str) -> bytes:
    return _envelope("user", {"role": "user", "content": [text(value)]})


def summary() -> bytes:
    return orjson.dumps({"type": "summary", "summary": "Work", "leafUuid": "a1b2"}) + b"\n"


def snapshot() -> bytes:
    entry = {"type": "file-history-snapshot", "messageId": "m1", "snapshot": {"files": {}}}
    return orjson.dumps(entry) + b"\n"


def system_line() -> bytes:
    entry = {"type": "system", "subtype": "stop_hook_summary", "content": "ok", "level": "info"}
    return orjson.dumps(entry) + b"\n"


def write(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture
def bytes_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Sizes of every os.read the reader makes."""
    sizes: list[int] = []
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        sizes.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counting_read)
    yield sizes


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every path the reader opens."""
    paths: list[str] = []
    real_open = os.open

    def recording_open(path: str, flags: int, *args: Any, **kwargs: Any) -> int:
        paths.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    yield paths


# --- the reply ------------------------------------------------------------------------


def test_simple_reply(tmp_path: Path, opened: list[str]) -> None:
    path = write(tmp_path / "t.jsonl", summary(), prompt(), assistant(text("All done.")))
    assert last_assistant_text(path) == "All done."
    assert opened == [str(path)]


def test_str_path(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", prompt(), assistant(text("All done.")))
    assert last_assistant_text(str(path)) == "All done."


def test_newest_reply_wins(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        prompt("one"),
        assistant(text("first answer")),
        prompt("two"),
        assistant(text("second answer")),
    )
    assert last_assistant_text(path) == "second answer"


def test_reply_ending_in_tool_call(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        prompt(),
        assistant(thinking()),
        assistant(text("Running the tests.")),
        assistant(tool_use()),
    )
    assert last_assistant_text(path) == "Running the tests."


def test_text_after_tool_result(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        prompt(),
        assistant(text("Running the tests.")),
        assistant(tool_use()),
        tool_result(),
        assistant(text("They pass. <loop-complete>")),
        system_line(),
        snapshot(),
    )
    assert last_assistant_text(path) == "They pass. <loop-complete>"


def test_text_before_tool_result_counts(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        prompt(),
        assistant(text("Checking.")),
        assistant(tool_use()),
        tool_result(),
        assistant(tool_use("ruff check")),
        tool_result("All checks passed!"),
    )
    assert last_assistant_text(path) == "Checking."


def test_prompt_line_stops_the_search(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        prompt("one"),
        assistant(text("old reply <loop-complete>")),
        prompt("two"),
        assistant(tool_use()),
        tool_result(),
    )
    assert last_assistant_text(path) is None


def test_block_content_prompt_stops_the_search(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        assistant(text("old reply")),
        prompt_blocks("Stop hook feedback:\nCriterion unmet: tests pass"),
        assistant(tool_use()),
    )
    assert last_assistant_text(path) is None


def test_prompt_as_last_line(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", assistant(text("old reply")), prompt())
    assert last_assistant_text(path) is None


def test_meta_and_sidechain_lines_are_passed_over(tmp_path: Path) -> None:
    meta = _envelope(
        "user", {"role": "user", "content": [text("Base directory for this skill")]}, isMeta=True
    )
    side = assistant(text("a subagent's words")).replace(
        b'"isSidechain":false', b'"isSidechain":true'
    )
    path = write(tmp_path / "t.jsonl", prompt(), assistant(text("mine")), meta, side)
    assert last_assistant_text(path) == "mine"


def test_several_text_blocks_joined_with_newlines(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        prompt(),
        assistant(text("first"), tool_use(), text("second"), text("third")),
    )
    assert last_assistant_text(path) == "first\nsecond\nthird"


def test_string_content_assistant_line(tmp_path: Path) -> None:
    line = _envelope("assistant", {"role": "assistant", "content": "plain string"})
    path = write(tmp_path / "t.jsonl", prompt(), line)
    assert last_assistant_text(path) == "plain string"


def test_empty_text_block_is_the_answer(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", prompt(), assistant(text("earlier")), assistant(text("")))
    assert last_assistant_text(path) == ""


def test_unparseable_and_odd_lines_skipped(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        prompt(),
        assistant(text("the answer")),
        b"{not json\n",
        b"\xff\xfe\x00garbage\n",
        b"[1, 2, 3]\n",
        b'"a string"\n',
        b'{"type": "assistant"}\n',
        b'{"type": "assistant", "message": {"content": 7}}\n',
        b'{"type": "assistant", "message": {"content": [{"type": "text", "text": 5}, 3]}}\n',
        b'{"type": "user", "message": "nope"}\n',
        b'{"type": "user", "message": {"content": null}}\n',
        b"\n   \n\r\n",
        b'{"type": "assistant", "message": {"content": [{"type": "text", "text": "torn',
    )
    assert last_assistant_text(path) == "the answer"


def test_crlf_line_endings(tmp_path: Path) -> None:
    lines = [prompt(), assistant(text("windows")), system_line()]
    path = write(tmp_path / "t.jsonl", *(line.replace(b"\n", b"\r\n") for line in lines))
    assert last_assistant_text(path) == "windows"


def test_no_trailing_newline(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", prompt(), assistant(text("last")).rstrip(b"\n"))
    assert last_assistant_text(path) == "last"


def test_only_line_in_file_found_with_tiny_chunks(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", assistant(text("alone")).rstrip(b"\n"))
    assert last_assistant_text(path, chunk=3) == "alone"


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl")
    assert last_assistant_text(path) is None


def test_invalid_utf8_in_text_is_replaced(tmp_path: Path) -> None:
    line = assistant(text("caf\u00e9 done")).replace("\u00e9".encode(), b"\xe9")
    path = write(tmp_path / "t.jsonl", prompt(), line)
    assert last_assistant_text(path) == "caf\ufffd done"


# --- chunking -------------------------------------------------------------------------


def test_line_longer_than_chunk(tmp_path: Path) -> None:
    long_text = "x" * 5000 + " <loop-complete>"
    path = write(
        tmp_path / "t.jsonl", prompt(), assistant(text(long_text)), tool_result("y" * 3000)
    )
    assert last_assistant_text(path, chunk=64) == long_text


def test_chunk_boundary_inside_multibyte_character(tmp_path: Path) -> None:
    emoji_text = "done \U0001f389\U0001f680 \u00e9\u4e2d <loop-complete> \U0001f44d"
    line = assistant(text(emoji_text))
    path = write(tmp_path / "t.jsonl", prompt(), line)
    # orjson writes the characters raw, so a 4-byte emoji straddles many 7-byte reads.
    assert "\U0001f389".encode() in line
    for chunk in range(1, 12):
        assert last_assistant_text(path, chunk=chunk) == emoji_text, chunk


@pytest.mark.parametrize("chunk", [0, -5])
def test_nonpositive_chunk_reads_byte_by_byte(tmp_path: Path, chunk: int) -> None:
    path = write(tmp_path / "t.jsonl", prompt(), assistant(text("ok")))
    assert last_assistant_text(path, chunk=chunk) == "ok"


def test_max_bytes_exceeded_gives_none(tmp_path: Path, bytes_read: list[int]) -> None:
    reply = assistant(text("far back"))
    filler = tool_result("z" * 2000)
    path = write(tmp_path / "t.jsonl", prompt(), reply, filler)
    assert last_assistant_text(path, max_bytes=len(filler) + 10, chunk=100) is None
    assert sum(bytes_read) == len(filler) + 10


def test_max_bytes_just_enough(tmp_path: Path, bytes_read: list[int]) -> None:
    reply = assistant(text("far back"))
    filler = tool_result("z" * 2000)
    path = write(tmp_path / "t.jsonl", prompt(), reply, filler)
    # The reply line and the newline before it: the whole line is known to be complete.
    budget = len(reply) + len(filler) + 1
    assert last_assistant_text(path, max_bytes=budget, chunk=100) == "far back"
    assert sum(bytes_read) == budget


@pytest.mark.parametrize("short", [0, 1, 2])
def test_max_bytes_without_the_newline_before_the_reply(tmp_path: Path, short: int) -> None:
    # Without the byte before it, the reply line cannot be known to be whole: give up.
    reply = assistant(text("far back"))
    filler = tool_result("z" * 2000)
    path = write(tmp_path / "t.jsonl", prompt(), reply, filler)
    assert last_assistant_text(path, max_bytes=len(filler) + len(reply) - short) is None


def test_zero_max_bytes_reads_nothing(tmp_path: Path, bytes_read: list[int]) -> None:
    path = write(tmp_path / "t.jsonl", prompt(), assistant(text("ok")))
    assert last_assistant_text(path, max_bytes=0) is None
    assert bytes_read == []


def test_reads_only_the_tail(tmp_path: Path, bytes_read: list[int]) -> None:
    history = b"".join([prompt(), assistant(text("old")), tool_result("q" * 500)] * 400)
    path = write(tmp_path / "t.jsonl", history, prompt(), assistant(text("new")))
    assert path.stat().st_size > 100 * 1024
    assert last_assistant_text(path, chunk=1024) == "new"
    assert sum(bytes_read) == 1024


# --- paths that are not transcripts ---------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    assert last_assistant_text(tmp_path / "nope.jsonl") is None


def test_directory(tmp_path: Path, opened: list[str]) -> None:
    assert last_assistant_text(tmp_path) is None
    assert opened == []


@pytest.mark.parametrize("bad", ["", "a\0b", 3, None, b"/etc/passwd"])
def test_nonsense_paths(bad: Any) -> None:
    assert last_assistant_text(bad) is None


@pytest.mark.skipif(sys.platform == "win32", reason="Windows has no /dev/zero")
def test_dev_zero(opened: list[str]) -> None:
    assert last_assistant_text("/dev/zero") is None
    assert opened == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX only")
def test_fifo_is_not_opened(tmp_path: Path, opened: list[str]) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    results: list[str | None] = ["unset"]

    def call() -> None:
        results[0] = last_assistant_text(fifo)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout=30)
    if worker.is_alive():  # it opened the FIFO and blocks: release it, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=5)
        pytest.fail("last_assistant_text blocked on a FIFO")
    assert results == [None]
    assert opened == []


def test_read_error_gives_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "t.jsonl", prompt(), assistant(text("ok")))

    def failing_read(fd: int, n: int) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "read", failing_read)
    assert last_assistant_text(path) is None


def test_file_shrinking_while_read_gives_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "t.jsonl", prompt(), assistant(text("ok")))
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, n)[: n // 2])
    assert last_assistant_text(path) is None


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="needs POSIX permissions, not root"
)
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", prompt(), assistant(text("ok")))
    path.chmod(0)
    try:
        assert last_assistant_text(path) is None
    finally:
        path.chmod(0o644)


# --- a gigabyte -----------------------------------------------------------------------

GIB = 1 << 30

sparse_only = pytest.mark.skipif(
    sys.platform == "win32",
    reason="NTFS zero-fills a file extended by truncate unless it is marked sparse",
)


def _sparse(path: Path, tail: bytes) -> Path:
    with path.open("wb") as handle:
        handle.truncate(GIB)
        handle.seek(GIB)
        handle.write(tail)
    return path


@sparse_only
def test_gigabyte_transcript_reads_one_chunk(tmp_path: Path, bytes_read: list[int]) -> None:
    tail = b"\n" + prompt() + assistant(text("Verified. <loop-complete>")) + assistant(tool_use())
    path = _sparse(tmp_path / "t.jsonl", tail)
    assert last_assistant_text(path) == "Verified. <loop-complete>"
    assert sum(bytes_read) == limits.TRANSCRIPT_CHUNK_BYTES


@sparse_only
def test_gigabyte_of_zeros_gives_none_within_budget(tmp_path: Path, bytes_read: list[int]) -> None:
    path = _sparse(tmp_path / "t.jsonl", b"")
    assert path.stat().st_size == GIB
    assert last_assistant_text(path) is None
    assert sum(bytes_read) == limits.MAX_TRANSCRIPT_TAIL_BYTES


# --- properties -----------------------------------------------------------------------

# One event of a session, in order: what it writes, and how it changes the expected answer.
Event = tuple[bytes, Callable[[str | None], str | None]]


def _keep(answer: str | None) -> str | None:
    return answer


def _reset(answer: str | None) -> str | None:
    return None


def _text_event(blocks: list[str], with_tool: bool) -> Event:
    parts = [text(block) for block in blocks]
    if with_tool:
        parts.append(tool_use())
    return assistant(*parts), lambda _answer: "\n".join(blocks)


events = st.one_of(
    st.builds(
        _text_event,
        st.lists(st.text(min_size=0, max_size=40), min_size=1, max_size=3),
        st.booleans(),
    ),
    st.builds(lambda out: (tool_result(out), _keep), st.text(max_size=40)),
    st.builds(lambda: (assistant(tool_use()), _keep)),
    st.builds(lambda: (assistant(thinking()), _keep)),
    st.builds(lambda words: (prompt(words), _reset), st.text(max_size=40)),
    st.builds(lambda words: (prompt_blocks(words), _reset), st.text(max_size=40)),
    st.sampled_from([(summary(), _keep), (snapshot(), _keep), (system_line(), _keep)]),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session=st.lists(events, max_size=12), chunk=st.integers(min_value=1, max_value=64))
def test_property_returns_the_current_replys_last_text(
    tmp_path: Path, session: list[Event], chunk: int
) -> None:
    expected: str | None = None
    for _line, effect in session:
        expected = effect(expected)
    path = write(tmp_path / "t.jsonl", *(line for line, _effect in session))
    assert last_assistant_text(path, chunk=chunk) == expected


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.binary(max_size=400)
    | st.lists(st.sampled_from([prompt(), assistant(text("a")), b"{", b"\xf0\x9f", b"\n"])).map(
        b"".join
    ),
    chunk=st.integers(min_value=-2, max_value=64),
    max_bytes=st.integers(min_value=-2, max_value=500),
)
def test_property_never_raises(tmp_path: Path, data: bytes, chunk: int, max_bytes: int) -> None:
    path = write(tmp_path / "t.jsonl", data)
    result = last_assistant_text(path, max_bytes=max_bytes, chunk=chunk)
    assert result is None or isinstance(result, str)
