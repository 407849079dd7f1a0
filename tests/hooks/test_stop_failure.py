"""StopFailure (a turn that ended on an API error) recorded by a real hook process, and
told once by the next SessionStart; lessons restored with the loop."""

from __future__ import annotations

import time
from pathlib import Path

import orjson

from tests.helpers import FIXTURES
from tests.helpers.loops import SID, make_loop
from tests.hooks.test_hooks import hook

# What Claude Code 2.1.330 sent (tests/fixtures/outputs/), in this test's session.
RECORDED = orjson.loads((FIXTURES / "outputs" / "claude_stop_failure_input.json").read_bytes())
MESSAGE = RECORDED["last_assistant_message"]
RATE_LIMIT = {k: v for k, v in RECORDED.items() if k != "cwd"} | {"session_id": SID}
FOREGROUND = {"RALPHSTATE_HOOK_FOREGROUND": "1"}


def history(root: Path) -> list[dict[str, object]]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


def test_the_failure_is_recorded_then_told_once(root: Path) -> None:
    path = make_loop(root)
    out, err = hook("stop-failure", root, RATE_LIMIT, FOREGROUND)
    assert (out, err) == (None, "")
    state = orjson.loads(path.read_bytes())
    failure = state["lastFailure"]
    assert (failure["error"], failure["message"]) == ("rate_limit", MESSAGE)
    assert state["errors"][-1]["message"] == (
        f"the turn ended on an API error (rate_limit): {MESSAGE}"
    )
    recorded = [e for e in history(root) if e["event"] == "stop_failure"]
    assert [(e["error"], e["message"]) for e in recorded] == [("rate_limit", MESSAGE)]

    out, _ = hook("session-start", root, {"session_id": SID, "source": "resume"})
    assert out is not None
    told = f"The last turn ended on an API error (rate_limit) at {failure['at']}"
    assert told in out["hookSpecificOutput"]["additionalContext"]
    assert told in out["systemMessage"]
    assert orjson.loads(path.read_bytes())["lastFailure"] is None
    assert [e["event"] for e in history(root)][-1] == "failure_told"

    out, _ = hook("session-start", root, {"session_id": SID, "source": "resume"})
    assert out is not None
    assert "API error" not in out["hookSpecificOutput"]["additionalContext"]
    assert "API error" not in out["systemMessage"]


def test_another_sessions_loop_is_left_alone(root: Path) -> None:
    path = make_loop(root, session="someone-else")
    before = path.read_bytes()
    out, err = hook("stop-failure", root, RATE_LIMIT, FOREGROUND)
    assert (out, err) == (None, "")
    assert path.read_bytes() == before


def test_a_finished_loop_and_no_loop_are_left_alone(root: Path) -> None:
    out, err = hook("stop-failure", root, RATE_LIMIT, FOREGROUND)
    assert (out, err) == (None, "")
    assert not (root / ".loop").exists()
    path = make_loop(root, status="complete")
    before = path.read_bytes()
    assert hook("stop-failure", root, RATE_LIMIT, FOREGROUND) == (None, "")
    assert path.read_bytes() == before


def test_a_bad_input_allows_and_says_so(root: Path) -> None:
    make_loop(root)
    out, err = hook("stop-failure", root, b"[1, 2]", FOREGROUND)
    assert out is None
    assert err.startswith("ralphstate hook stop-failure: input is not a JSON object")


def test_lessons_are_restored_with_the_loop(root: Path) -> None:
    make_loop(root)
    (root / ".loop" / "lessons.md").write_text("- run `make fixtures` before the tests\n")
    out, _ = hook("session-start", root, {"session_id": SID, "source": "startup"})
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert (
        "Lessons (.loop/lessons.md, the newest last):\n- run `make fixtures` before the tests"
        in context
    )
    assert context.index("Lessons") < context.index("</loop-state>")


def test_the_hook_returns_at_once_and_records_in_a_process_of_its_own(root: Path) -> None:
    """Claude Code in print mode exits right after StopFailure and its hook dies with it
    (tens of milliseconds): the hook leaves the client's process group and finishes."""
    path = make_loop(root)
    out, err = hook("stop-failure", root, RATE_LIMIT)
    assert (out, err) == (None, "")
    deadline = time.monotonic() + 20
    while orjson.loads(path.read_bytes())["lastFailure"] is None:
        assert time.monotonic() < deadline, "the detached hook never recorded the failure"
        time.sleep(0.05)
    assert orjson.loads(path.read_bytes())["lastFailure"]["error"] == "rate_limit"
