"""Token usage inside a session: real `ralphstate hook stop` processes read the tokens
of the replies appended to a recorded Claude Code transcript since the last stop, add
them to the loop's `usage`, and pause the loop once `maxTokens` is reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import limits, ownership
from ralphstate.core import state as st
from tests.helpers import FIXTURES, run_process
from tests.helpers.loops import SID, make_loop

CLAUDE = FIXTURES / "agents" / "claude_transcript.jsonl"
# Each reply of the recording: 100 input, 30 cache creation, 7 cache read, 20 output.
REPLY = 157


def stop(
    root: Path, transcript: Path, env: dict[str, str] | None = None
) -> tuple[dict[str, Any] | None, str]:
    data = {
        "session_id": SID,
        "cwd": str(root),
        "transcript_path": str(transcript),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "Still working on it.",
    }
    done = run_process(["hook", "stop"], cwd=root, input=orjson.dumps(data), env=env)
    assert done.returncode == 0
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    return out, done.stderr.decode()


def state(root: Path) -> st.State:
    return st.parse((root / ".loop" / "state.json").read_bytes())


def tokens(root: Path) -> int | None:
    usage = state(root)["usage"]
    return None if usage is None else usage["tokens"]


def recorded() -> list[bytes]:
    return CLAUDE.read_bytes().splitlines(keepends=True)


def test_stops_count_what_was_appended_since_the_last_and_each_reply_once(
    root: Path, tmp_path: Path
) -> None:
    make_loop(root)
    lines = recorded()
    first = next(i for i, line in enumerate(lines) if b'"type":"assistant"' in line)
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(b"".join(lines[: first + 1]))  # the first line of the first reply
    out, err = stop(root, transcript)
    assert out is not None and out["decision"] == "block" and err == ""
    assert tokens(root) == REPLY
    with transcript.open("ab") as handle:
        handle.write(b"".join(lines[first + 1 :]))  # its second line, and three replies
    stop(root, transcript)
    assert tokens(root) == 4 * REPLY  # 628, what `claude -p` reported for the session
    stop(root, transcript)
    assert tokens(root) == 4 * REPLY
    reading = state(root)["transcriptUsage"]
    assert reading is not None
    assert (reading["session"], reading["offset"]) == (SID, transcript.stat().st_size)
    assert str(tmp_path) not in (root / ".loop" / "state.json").read_text()  # no path kept


def test_a_half_written_last_line_is_counted_at_the_next_stop(root: Path, tmp_path: Path) -> None:
    make_loop(root)
    data = CLAUDE.read_bytes()
    last = data.rindex(b'{"parentUuid"', 0, data.rindex(b'"type":"assistant"'))
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(data[: last + 50])  # the last reply's line, cut short
    stop(root, transcript)
    assert tokens(root) == 3 * REPLY
    transcript.write_bytes(data)
    stop(root, transcript)
    assert tokens(root) == 4 * REPLY


@pytest.mark.parametrize("how", ["replaced", "truncated"])
def test_a_replaced_or_truncated_transcript_never_counts_a_reply_twice(
    root: Path, tmp_path: Path, how: str
) -> None:
    make_loop(root)
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(CLAUDE.read_bytes())
    stop(root, transcript)
    assert tokens(root) == 4 * REPLY
    lines = recorded()
    if how == "replaced":  # the same lines and more, as another file at the path
        other = tmp_path / "rewritten.jsonl"
        other.write_bytes(CLAUDE.read_bytes() + b"".join(lines[-5:]))
        other.replace(transcript)
    else:  # shorter than what was read: from the third reply on, already counted
        third = [i for i, line in enumerate(lines) if b'"type":"assistant"' in line][3]
        transcript.write_bytes(b"".join(lines[third:]))
    stop(root, transcript)
    assert tokens(root) == 4 * REPLY


def test_a_budget_reached_pauses_the_loop_and_says_which(root: Path, tmp_path: Path) -> None:
    make_loop(root, maxTokens=600)
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(CLAUDE.read_bytes())
    out, err = stop(root, transcript)
    assert err == ""
    assert out is not None and "decision" not in out  # the stop is allowed
    assert out["systemMessage"] == (
        "ralphstate: loop paused, its budget is reached (tokens 628 of the loop's 600). Raise"
        " it (`ralphstate config max-tokens N`), then `ralphstate resume`."
    )
    assert out["terminalSequence"] == (
        "\x1b]9;ralphstate: loop paused: its budget is reached, tokens 628 of the loop's 600"
        " (Build the parser)\x07"
    )
    after = state(root)
    assert (after["status"], after["pauseReason"], tokens(root)) == ("paused", "budget", 628)
    events = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    assert orjson.loads(events[-1])["event"] == "budget"
    assert orjson.loads(events[-1])["budget"] == "tokens 628 of the loop's 600"


def test_inside_run_the_hook_counts_nothing(root: Path, tmp_path: Path) -> None:
    path = make_loop(root)
    before = path.read_bytes()
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(CLAUDE.read_bytes())
    out, _ = stop(root, transcript, env={ownership.ENV_RUNNER: "1"})
    assert out is None
    assert path.read_bytes() == before  # the run counts the agent's own report


def test_another_sessions_loop_is_not_counted(root: Path, tmp_path: Path) -> None:
    path = make_loop(root, session="session-b")
    before = path.read_bytes()
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(CLAUDE.read_bytes())
    assert stop(root, transcript)[0] is None
    assert path.read_bytes() == before


def test_a_transcript_that_cannot_be_read_leaves_the_stop_to_decide(
    root: Path, tmp_path: Path
) -> None:
    make_loop(root)
    transcript = tmp_path / "session.jsonl"
    transcript.mkdir()  # there, but no file
    out, err = stop(root, transcript)
    assert out is not None and out["decision"] == "block"
    assert err == (
        "ralphstate hook stop: the transcript could not be read, so this stop's tokens are"
        " not counted.\n"
    )
    after = state(root)
    assert (after["iteration"], after["usage"], after["transcriptUsage"]) == (1, None, None)


def test_each_stop_reads_at_most_the_bound_and_the_next_goes_on(root: Path, tmp_path: Path) -> None:
    make_loop(root)
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(b"")
    stop(root, transcript)  # this session's transcript, read from its start
    lines = recorded()
    reply = next(line for line in lines if b'"type":"assistant"' in line)
    filler = b'{"type":"progress","data":"' + b"." * 1000 + b'"}\n'
    padding = filler * (limits.MAX_TRANSCRIPT_USAGE_BYTES // len(filler) + 10)
    later = reply.replace(b"msg_000000000000000000000001", b"msg_000000000000000000000099")
    transcript.write_bytes(reply + padding + later)
    stop(root, transcript)
    first = state(root)["transcriptUsage"]
    assert first is not None and first["offset"] <= limits.MAX_TRANSCRIPT_USAGE_BYTES
    assert tokens(root) == REPLY
    stop(root, transcript)
    assert tokens(root) == 2 * REPLY
    reading = state(root)["transcriptUsage"]
    assert reading is not None and reading["offset"] == transcript.stat().st_size


def test_a_loop_the_hooks_ignore_has_its_transcript_left_unread(root: Path, tmp_path: Path) -> None:
    """A loop that came with a clone (no session, not known on this machine) is left
    alone by the stop, so its transcript is not read either: a directory in its place
    goes unremarked."""
    path = make_loop(root, session=None, known=False)
    before = path.read_bytes()
    transcript = tmp_path / "session.jsonl"
    transcript.mkdir()  # a read would be said on stderr
    out, err = stop(root, transcript)
    assert out is not None and set(out) == {"systemMessage"}  # named once, nothing read
    assert err == ""
    assert path.read_bytes() == before
