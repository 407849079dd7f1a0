"""`ralphstate config`: a running loop's settings, each change a history line, each bad
value one sentence that changes nothing; and what the Stop hook makes of a change."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import checkrun, grading
from ralphstate.core import state as st
from ralphstate.loop import configure
from tests.helpers import run_process


def state_of(project: Path) -> st.State:
    return st.parse((project / ".loop" / "state.json").read_bytes())


def configs(project: Path) -> list[dict[str, Any]]:
    lines = (project / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [e for e in map(orjson.loads, lines) if e["event"] == "config"]


@pytest.fixture
def loop(project: Path, rs: Any) -> Path:
    done = rs("init", "Build the parser\nwith a second line", "-c", "tests pass", "-s", "lex")
    assert done.code == 0, done
    return project


def test_config_lists_every_setting(loop: Path, rs: Any) -> None:
    assert rs("config").out == (
        "max-iterations: 20\n"
        "stall-limit: 5\n"
        "marker: <loop-complete>\n"
        "continue-message: (none)\n"
        "spec: Build the parser…\n"
        "verify-on-stop: default (on)\n"
        "guard: (none)\n"
        "clean-verify: default (on)\n"
        "verify-budget: default (120s)\n"
        f"verify-jobs: default ({checkrun.default_jobs()} here)\n"
        "max-cost: none\n"
        "max-tokens: none\n"
        "max-duration: none\n"
        "owner-timeout: default (30m)\n"
        f"reviewer: default ({grading.DEFAULT_REVIEWER})\n"
    )
    assert rs("config", "spec").out == "Build the parser\nwith a second line\n"


@pytest.mark.parametrize(
    ("key", "text", "field", "value", "shown"),
    [
        ("max-iterations", "40", "maxIterations", 40, "40"),
        ("stall-limit", " 3 ", "stallLimit", 3, "3"),
        ("marker", "ALL DONE", "completionMarker", "ALL DONE", "ALL DONE"),
        ("continue-message", "Read PLAN.md first.", "continueMessage", "Read PLAN.md first.", None),
        ("spec", "Build the lexer", "spec", "Build the lexer", "Build the lexer"),
        ("max-tokens", "200000", "maxTokens", 200000, "200000"),
        ("clean-verify", "off", "cleanVerify", False, "off"),
        ("clean-verify", "ON", "cleanVerify", True, "on"),
        ("owner-timeout", "2h", "ownerTimeout", 7200.0, "2h"),
        ("owner-timeout", "off", "ownerTimeout", 0.0, "off"),
        ("verify-budget", "45", "verifyBudget", 45.0, "45s"),
        ("verify-jobs", "2", "verifyJobs", 2, "2"),
    ],
)
def test_each_setting_changes_the_running_loop_with_a_history_line(
    loop: Path, rs: Any, key: str, text: str, field: str, value: object, shown: str | None
) -> None:
    before = state_of(loop)
    done = rs("config", key, text)
    assert (done.code, done.out, done.err) == (0, f"{key}: {shown or text}\n", "")
    after = state_of(loop)
    assert after[field] == value  # type: ignore[literal-required]
    changed = {k for k in after if after[k] != before[k]}  # type: ignore[literal-required]
    assert field in changed and changed <= {field, "updatedAt"}
    assert [{k: v for k, v in e.items() if k != "at"} for e in configs(loop)] == [
        {
            "event": "config",
            "iteration": 0,
            "loop": after["loopId"],
            "key": field,
            "value": value,
            "from": before[field],  # type: ignore[literal-required]
            "actor": {"kind": "person"},
        }
    ]
    again = rs("config", key, text)  # the same value again: nothing written
    assert again.out == f"{key}: {shown or text} (unchanged)\n"
    assert len(configs(loop)) == 1


def test_an_empty_continue_message_removes_it(loop: Path, rs: Any) -> None:
    rs("config", "continue-message", "Keep going.")
    assert rs("config", "continue-message", "").out == "continue-message: (none)\n"
    assert state_of(loop)["continueMessage"] is None


SPACES = (
    "a marker has single spaces between words: no tabs, line breaks or double spaces, so that"
    " it can be repeated exactly as quoted."
)
FRAME = "a marker cannot hold <loop-state>, which frames the loop's restored state."
TICK = "a marker cannot hold a backtick: in backticks it is code, where it does not count."
UNKNOWN = (
    "no setting 'colour'; the settings are: max-iterations, stall-limit, marker,"
    " continue-message, spec, verify-on-stop, clean-verify, verify-budget, verify-jobs,"
    " max-cost, max-tokens, max-duration, owner-timeout, reviewer."
)
BAD = [
    ("max-iterations", "0", "max-iterations must be a whole number from 1 to 100000, not '0'."),
    ("max-iterations", "ten", "max-iterations must be a whole number from 1 to 100000, not 'ten'."),
    ("stall-limit", "100001", "stall-limit must be a whole number from 1 to 100000, not '100001'."),
    ("stall-limit", "2.5", "stall-limit must be a whole number from 1 to 100000, not '2.5'."),
    ("marker", "", "a marker cannot be empty."),
    ("marker", "   ", "a marker cannot be empty."),
    ("marker", " DONE", "a marker cannot start or end with a space."),
    (
        "marker",
        "ALL\tDONE",
        SPACES,
    ),
    ("marker", "ALL  DONE", SPACES),
    ("marker", "x" * 101, "a marker is at most 100 characters, not 101."),
    ("marker", "</loop-state>", FRAME),
    ("marker", "`done`", TICK),
    ("spec", " \n", "a loop needs a spec; it cannot be empty."),
    (
        "max-tokens",
        "0",
        "max-tokens must be a whole number from 1 to 1,000,000,000,000,000, or none, not '0'.",
    ),
    (
        "max-tokens",
        "lots",
        "max-tokens must be a whole number from 1 to 1,000,000,000,000,000, or none, not 'lots'.",
    ),
    (
        "colour",
        "red",
        UNKNOWN,
    ),
    (
        "owner-timeout",
        "soon",
        "owner-timeout must be a duration such as 30m or 2h, off, or default, not 'soon'.",
    ),
    (
        "verify-budget",
        "lots",
        "verify-budget must be seconds from 0 to 3600, or default, not 'lots'.",
    ),
    ("verify-jobs", "0", "verify-jobs must be a whole number from 1 to 64, or default, not '0'."),
]


@pytest.mark.parametrize(
    ("key", "text", "sentence"), BAD, ids=[f"{k} {t!r}"[:40] for k, t, _ in BAD]
)
def test_a_bad_value_is_one_sentence_and_changes_nothing(
    loop: Path, rs: Any, key: str, text: str, sentence: str
) -> None:
    path = loop / ".loop" / "state.json"
    before = (path.read_bytes(), (loop / ".loop" / "history.jsonl").read_bytes())
    done = rs("config", key, text)
    assert (done.code, done.out, done.err) == (1, "", f"ralphstate: {sentence}\n")
    assert (path.read_bytes(), (loop / ".loop" / "history.jsonl").read_bytes()) == before


def test_a_marker_that_passes_is_the_one_the_stop_hook_quotes_and_hears(
    loop: Path, rs: Any
) -> None:
    rs("criteria", "set", "tests pass", "true")
    rs("config", "marker", "<all-done>")
    rs("config", "continue-message", "Read PLAN.md first.")
    data = {"session_id": "s1", "cwd": str(loop), "last_assistant_message": "finished"}
    hook = run_process(["hook", "stop"], cwd=loop, input=orjson.dumps(data))
    reason = orjson.loads(hook.stdout)["reason"]
    assert reason.startswith("Read PLAN.md first.\n")
    assert "end your reply with <all-done> (outside code blocks)" in reason
    data["last_assistant_message"] = "All done. <all-done>"
    hook = run_process(["hook", "stop"], cwd=loop, input=orjson.dumps(data))
    assert state_of(loop)["status"] == "complete", hook


def test_a_lower_cap_pauses_the_loop_at_the_next_stop(loop: Path, rs: Any) -> None:
    data = {"session_id": "s1", "cwd": str(loop), "last_assistant_message": "working"}
    run_process(["hook", "stop"], cwd=loop, input=orjson.dumps(data))
    assert state_of(loop)["iteration"] == 1
    assert rs("config", "max-iterations", "1").code == 0
    run_process(["hook", "stop"], cwd=loop, input=orjson.dumps(data))
    after = state_of(loop)
    assert (after["status"], after["pauseReason"]) == ("paused", "max_iterations")


def test_no_token_budget_is_none(loop: Path, rs: Any) -> None:
    assert rs("config", "max-tokens", "1,000").out == "max-tokens: 1000\n"
    assert rs("config", "max-tokens", "none").out == "max-tokens: none\n"
    assert state_of(loop)["maxTokens"] is None


def test_every_setting_is_in_the_help(rs: Any) -> None:
    text = rs("config", "--help").out
    for name in configure.SETTINGS:
        assert re.search(rf"\n +{name} +\S", text), name
