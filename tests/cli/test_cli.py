"""Every command and subcommand, with exact output, and every user error: exit 1,
one line on stderr starting `ralphstate: `, no traceback, nothing changed on disk."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from freezegun import freeze_time

from ralphstate.core import state as st
from ralphstate.storage import ledger, registry
from ralphstate.storage.paths import LoopPaths
from tests.helpers import colleague

NOW = "2026-01-02T03:04:05Z"
NO_LOOP = (
    "ralphstate: no loop here: no .loop/ in this directory or above"
    " (start one with `ralphstate init`).\n"
)


def state_of(project: Path) -> st.State:
    return st.parse((project / ".loop" / "state.json").read_bytes())


def history_of(project: Path) -> list[dict[str, Any]]:
    path = project / ".loop" / "history.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def write_raw(project: Path, raw: dict[str, Any]) -> Path:
    path = project / ".loop" / "state.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(raw))
    return path


def edit(project: Path, **changes: Any) -> None:
    path = project / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw.update(changes)
    path.write_bytes(orjson.dumps(raw))


# What `init` says about the guarded files of a project outside git (every test here).
NOT_GUARDED = "not guarding any files: the project is not in a git repository\n"


def assert_lines_start(out: str, expected: list[str]) -> None:
    """Each line starts as expected (other features may annotate a line's end)."""
    lines = out.splitlines()
    assert len(lines) == len(expected), out
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start), (line, start)
    assert out.endswith("\n")


def registered(project: Path) -> dict[str, Any] | None:
    return registry.entry(LoopPaths(project, project / ".loop"))


@pytest.fixture
def loop(project: Path, rs: Any) -> Path:
    """A loop with two criteria and three steps, made at NOW."""
    with freeze_time(NOW):
        result = rs(
            "init",
            "Build it",
            "-c",
            "tests pass",
            "-c",
            "lint clean",
            "-s",
            "write it",
            "-s",
            "test it",
            "-s",
            "ship it",
        )
    assert result.code == 0, result.err
    return project


# -- init ------------------------------------------------------------------------------


@freeze_time(NOW)
def test_init(project: Path, rs: Any) -> None:
    result = rs(
        "init",
        "Add CSV export",
        "-c",
        "tests pass",
        "-c",
        "button works",
        "-s",
        "exporter",
        "--max-iterations",
        "30",
        "--stall-limit",
        "3",
        "--marker",
        "<done>",
        "--continue-message",
        "Keep going.",
    )
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "started a loop in .loop/state.json: 2 criteria, 1 step, max 30 iterations\n"
        + NOT_GUARDED
        + colleague(
            4,
            "give 2 criteria a check (--check NAME COMMAND); say the request in 8 to 2000 words"
            " (it has 3); guard the files that prove it (--guard PATH)",
        )
    )
    state = state_of(project)
    expected = {
        "version": 1,
        "spec": "Add CSV export",
        "criteria": ["tests pass", "button works"],
        "criteriaStatus": {"tests pass": False, "button works": False},
        "checks": {},
        "steps": ["exporter"],
        "completedSteps": [],
        "remainingSteps": ["exporter"],
        "iteration": 0,
        "maxIterations": 30,
        "stallLimit": 3,
        "completionMarker": "<done>",
        "continueMessage": "Keep going.",
        "status": "in_progress",
        "pauseReason": None,
        "sessionId": None,
        "startedAt": NOW,
        "updatedAt": NOW,
        "lastCheckpoint": None,
        "errors": [],
    }
    stored: dict[str, Any] = dict(state)
    assert {k: stored[k] for k in expected} == expected
    assert history_of(project) == [
        {
            "at": NOW,
            "event": "init",
            "iteration": 0,
            "loop": state["loopId"],
            "spec": "Add CSV export",
            "criteria": 2,
            "steps": 1,
            "session": None,
            "actor": {"kind": "person"},
        }
    ]
    entry = registered(project)
    assert entry is not None
    assert (entry["startedAt"], entry["status"], entry["criteriaTotal"]) == (NOW, "in_progress", 2)


def test_init_defaults(project: Path, rs: Any) -> None:
    assert rs("init", "Just a spec").out == (
        "started a loop in .loop/state.json: 0 criteria, 0 steps, max 20 iterations\n"
        + NOT_GUARDED
        + "no criteria: the loop cannot complete until some are added"
        " (`ralphstate criteria add NAME`); `init --no-criteria` starts a loop that the"
        " completion marker alone ends\n"
        + colleague(
            0,
            "name what done means (-c NAME); give each criterion a check (--check NAME"
            " COMMAND); plan the work in steps (-s STEP); say the request in 8 to 2000 words"
            " (it has 3)",
        )
    )
    state = state_of(project)
    assert (state["maxIterations"], state["stallLimit"], state["completionMarker"]) == (
        20,
        5,
        "<loop-complete>",
    )


def test_init_inside_a_session_is_owned_by_it(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "0d8e6f1b-2c47-4c3e-9a52-5f0c2a9e7b1d")
    monkeypatch.setenv("CLAUDE_PID", "4242")
    result = rs("init", "Build it", "-c", "tests pass")
    assert result.out == (
        "started a loop in .loop/state.json: 1 criterion, 0 steps, max 20 iterations,"
        " owned by session 0d8e6f1b…\n"
        + NOT_GUARDED
        + colleague(
            3,
            "give 1 criterion a check (--check NAME COMMAND); plan the work in steps (-s STEP);"
            " say the request in 8 to 2000 words (it has 2); guard the files that prove it"
            " (--guard PATH)",
        )
    )
    assert state_of(project)["sessionId"] == "0d8e6f1b-2c47-4c3e-9a52-5f0c2a9e7b1d"
    entry = registered(project)
    assert entry is not None
    assert (entry["sessionId"], entry["claudePid"]) == (
        "0d8e6f1b-2c47-4c3e-9a52-5f0c2a9e7b1d",
        "4242",
    )


def test_init_creates_the_loop_here_not_above(project: Path, rs: Any) -> None:
    (project / ".loop").mkdir()
    sub = project / "sub dir"
    sub.mkdir()
    os.chdir(sub)
    assert rs("init", "Nested").code == 0
    assert (sub / ".loop" / "state.json").is_file()
    assert not (project / ".loop" / "state.json").exists()


def test_init_in_ralphstate_dir(project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    target = project / "elsewhere" / ".loop"
    target.parent.mkdir()
    monkeypatch.setenv("RALPHSTATE_DIR", str(target))
    assert rs("init", "There").out == (
        f"started a loop in {target / 'state.json'}: 0 criteria, 0 steps, max 20 iterations\n"
        + NOT_GUARDED
        + "no criteria: the loop cannot complete until some are added"
        " (`ralphstate criteria add NAME`); `init --no-criteria` starts a loop that the"
        " completion marker alone ends\n"
        + colleague(
            0,
            "name what done means (-c NAME); give each criterion a check (--check NAME"
            " COMMAND); plan the work in steps (-s STEP); say the request in 8 to 2000 words"
            " (it has 1)",
        )
    )
    assert (target / "state.json").is_file()
    assert not (project / ".loop").exists()
    assert json.loads(rs("status", "--json").out)["spec"] == "There"


@pytest.mark.parametrize("status", ["in_progress", "paused"])
def test_init_refuses_to_replace_an_unfinished_loop(loop: Path, rs: Any, status: str) -> None:
    edit(loop, status=status)
    before = (loop / ".loop" / "state.json").read_bytes()
    result = rs("init", "Something else")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        f"ralphstate: an unfinished loop is already here ({status}, spec: 'Build it');"
        " use --force to replace it (a copy is kept).\n"
    )
    assert (loop / ".loop" / "state.json").read_bytes() == before


@pytest.mark.parametrize("status", ["complete", "cancelled"])
@freeze_time(NOW)
def test_init_replaces_a_finished_loop_keeping_a_copy(loop: Path, rs: Any, status: str) -> None:
    edit(loop, status=status)
    before = (loop / ".loop" / "state.json").read_bytes()
    result = rs("init", "The next thing")
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "kept the old state as .loop/state.20260102T030405.json.bak\n"
        "started a loop in .loop/state.json: 0 criteria, 0 steps, max 20 iterations\n"
        + NOT_GUARDED
        + "no criteria: the loop cannot complete until some are added"
        " (`ralphstate criteria add NAME`); `init --no-criteria` starts a loop that the"
        " completion marker alone ends\n"
        + colleague(
            0,
            "name what done means (-c NAME); give each criterion a check (--check NAME"
            " COMMAND); plan the work in steps (-s STEP); say the request in 8 to 2000 words"
            " (it has 3)",
        )
    )
    assert (loop / ".loop" / "state.20260102T030405.json.bak").read_bytes() == before
    assert state_of(loop)["spec"] == "The next thing"


@freeze_time(NOW)
def test_init_force_replaces_an_unfinished_loop_keeping_a_copy(loop: Path, rs: Any) -> None:
    before = (loop / ".loop" / "state.json").read_bytes()
    result = rs("init", "--force", "Start over", "-c", "x")
    assert result.out == (
        "kept the old state as .loop/state.20260102T030405.json.bak\n"
        "started a loop in .loop/state.json: 1 criterion, 0 steps, max 20 iterations\n"
        + NOT_GUARDED
        + colleague(
            2,
            "give 1 criterion a check (--check NAME COMMAND); plan the work in steps (-s STEP);"
            " say the request in 8 to 2000 words (it has 2); say what can be measured (a"
            " number, what passes or fails)",
        )
    )
    assert (loop / ".loop" / "state.20260102T030405.json.bak").read_bytes() == before
    assert state_of(loop)["criteria"] == ["x"]
    assert [e["event"] for e in history_of(loop)] == ["init", "init"]


def test_init_from_a_json_template(project: Path, rs: Any) -> None:
    template = project / "loop-template.json"
    template.write_text(
        json.dumps(
            {
                "spec": "From a template",
                "criteria": ["tests pass", "docs updated"],
                "criteriaStatus": {"docs updated": True},
                "checks": {"tests pass": "pytest -q"},
                "steps": ["plan", "build"],
                "completedSteps": ["plan"],
                "maxIterations": 40,
                "stallLimit": 3,
                "completionMarker": "<all-done>",
                "continueMessage": "Follow CONTRIBUTING.md.",
                "team": "billing",
                # A finished loop's lifecycle is not carried over.
                "status": "complete",
                "iteration": 9,
                "sessionId": "old-session",
                "startedAt": "2020-01-01T00:00:00Z",
            }
        )
    )
    result = rs("init", "--from", str(template), "-c", "changelog", "-s", "release")
    assert (result.code, result.err) == (0, "")
    assert result.out.splitlines()[0] == (
        "started a loop in .loop/state.json: 3 criteria, 3 steps, max 40 iterations"
    )
    state = state_of(project)
    assert state["spec"] == "From a template"
    assert state["criteria"] == ["tests pass", "docs updated", "changelog"]
    assert state["criteriaStatus"] == {
        "tests pass": False,
        "docs updated": True,
        "changelog": False,
    }
    assert state["checks"] == {"tests pass": "pytest -q"}
    assert (state["steps"], state["completedSteps"]) == (["plan", "build", "release"], ["plan"])
    assert (state["maxIterations"], state["stallLimit"], state["completionMarker"]) == (
        40,
        3,
        "<all-done>",
    )
    assert state["continueMessage"] == "Follow CONTRIBUTING.md."
    assert dict(state)["team"] == "billing"  # a key ralphstate does not know is kept
    assert (state["status"], state["iteration"], state["sessionId"]) == ("in_progress", 0, None)
    assert state["startedAt"] != "2020-01-01T00:00:00Z"


def test_command_line_options_win_over_the_template(project: Path, rs: Any) -> None:
    template = project / "t.json"
    template.write_text('{"spec": "T", "maxIterations": 40, "stallLimit": 3}')
    assert rs("init", "Mine", "--from", str(template), "--max-iterations", "7").code == 0
    state = state_of(project)
    assert (state["spec"], state["maxIterations"], state["stallLimit"]) == ("Mine", 7, 3)


MARKDOWN = """\
# Add CSV export

## Spec

Export the filtered invoices
as CSV from the report page.

## Success criteria

- [ ] tests pass
- [x] lint clean

## Steps

- [x] write the exporter
- [ ] wire the button
* [ ] update the changelog

## Notes

- [ ] not a criterion
"""


def test_init_from_a_markdown_template(project: Path, rs: Any) -> None:
    template = project / "TASK.md"
    template.write_text(MARKDOWN)
    result = rs("init", "--from", "TASK.md")
    assert result.out == (
        "started a loop in .loop/state.json: 2 criteria, 3 steps, max 20 iterations\n"
        + NOT_GUARDED
        + colleague(
            5,
            "give 2 criteria a check (--check NAME COMMAND); guard the files that prove it"
            " (--guard PATH)",
        )
    )
    state = state_of(project)
    assert state["spec"] == "Export the filtered invoices as CSV from the report page."
    assert state["criteriaStatus"] == {"tests pass": False, "lint clean": True}
    assert state["steps"] == ["write the exporter", "wire the button", "update the changelog"]
    assert state["completedSteps"] == ["write the exporter"]


def test_markdown_title_is_the_spec_without_a_spec_section(project: Path, rs: Any) -> None:
    (project / "t.md").write_text("# Fix the flaky login test\n\n## Criteria\n- [ ] green 10x\n")
    assert rs("init", "--from", "t.md").code == 0
    assert state_of(project)["spec"] == "Fix the flaky login test"


# -- status, show ----------------------------------------------------------------------


def test_status(loop: Path, rs: Any) -> None:
    assert rs("criteria", "set", "lint clean", "true").code == 0
    assert rs("step", "done", "1").code == 0
    with freeze_time("2026-01-02T05:04:05Z"):
        edit(loop, iteration=3, updatedAt="2026-01-02T04:04:05Z")
        result = rs("status")
    assert (result.code, result.err) == (0, "")
    assert_lines_start(
        result.out,
        [
            f"loop {loop}: in progress · iteration 3/20 · owner none · updated 1h ago",
            "spec: Build it",
            "criteria 1/2 (1 claimed):",
            "  [ ] tests pass",
            "  [x] lint clean",
            "guarded: no files",
            "steps 1/3:",
            "  [x] write it",
            "  [>] test it  (next)",
            "  [ ] ship it",
            f"proof: as approved by you at {NOW}",
        ],
    )


def test_status_paused_with_owner(loop: Path, rs: Any) -> None:
    edit(
        loop,
        status="paused",
        pauseReason="max_iterations",
        sessionId="abcdef0123",
        steps=[],
        completedSteps=[],
        remainingSteps=[],
    )
    with freeze_time("2026-01-04T03:04:05Z"):
        edit(loop, updatedAt=NOW)
        out = rs("status").out
    assert out.splitlines()[0] == (
        f"loop {loop}: paused (max_iterations) · iteration 0/20 · owner abcdef01…"
        " · updated 2d ago · idle past 30m: the next session to start here takes it"
    )
    assert "steps" not in out


def test_status_json_is_the_normalised_state(project: Path, rs: Any) -> None:
    write_raw(project, {"spec": "x", "steps": ["a", "b"], "completedSteps": ["b"], "extra": 1})
    result = rs("status", "--json")
    assert (result.code, result.err) == (0, "")
    shown = json.loads(result.out)
    assert list(shown) == [*st.FIELD_ORDER, "extra", "knownHere", "proof", "staleEvidence"]
    proof = shown.pop("proof")  # no ledger record: written by hand, not by init
    assert (proof["approvedBy"], proof["review"], proof["endedOutside"]) == (None, [], False)
    assert shown == {**state_of(project), "knownHere": False, "staleEvidence": []}
    assert shown["remainingSteps"] == ["a"]


@pytest.mark.parametrize(
    "data",
    [
        b'{"spec":"x","criteria":["a"],"odd":   [1,2]}',
        b'{\n    "spec": "\xc3\xbcnicode",\n    "zzz": true\n}\n',
    ],
)
def test_show_prints_the_file_as_stored(project: Path, rs: Any, data: bytes) -> None:
    (project / ".loop").mkdir()
    (project / ".loop" / "state.json").write_bytes(data)
    result = rs("show")
    assert (result.code, result.err) == (0, "")
    expected = data.decode()
    assert result.out == (expected if expected.endswith("\n") else expected + "\n")


# -- criteria --------------------------------------------------------------------------


def test_criteria_list(loop: Path, rs: Any) -> None:
    rs("criteria", "set", "2", "yes")
    assert rs("criteria", "list").out == "1. [ ] tests pass\n2. [x] lint clean\n"


def test_criteria_add(loop: Path, rs: Any) -> None:
    result = rs("criteria", "add", "docs updated", "--check", "mkdocs build --strict")
    assert (result.code, result.out) == (0, "added criterion 'docs updated'\n")
    # mkdocs is not installed here: said, not refused (the work may install it).
    assert result.err == (
        "ralphstate: warning: the check of 'docs updated' would fail now: no program"
        ' "mkdocs" on PATH; correct it with `ralphstate criteria check "docs updated"'
        ' "COMMAND"` unless the loop\'s work provides it.\n'
    )
    state = state_of(loop)
    assert state["criteria"] == ["tests pass", "lint clean", "docs updated"]
    assert state["criteriaStatus"]["docs updated"] is False
    assert state["checks"] == {"docs updated": "mkdocs build --strict"}
    assert history_of(loop)[-1]["event"] == "criterion_added"


@pytest.mark.parametrize(
    ("word", "value", "shown"),
    [
        ("true", True, "met"),
        ("TRUE", True, "met"),
        ("yes", True, "met"),
        ("1", True, "met"),
        ("false", False, "not met"),
        ("no", False, "not met"),
        ("0", False, "not met"),
        (" Yes ", True, "met"),
    ],
)
def test_criteria_set_words(loop: Path, rs: Any, word: str, value: bool, shown: str) -> None:
    if not value:
        rs("criteria", "set", "tests pass", "true")
    result = rs("criteria", "set", "tests pass", word)
    assert (result.code, result.out, result.err) == (0, f"tests pass: {shown}\n", "")
    assert state_of(loop)["criteriaStatus"]["tests pass"] is value


def test_criteria_set_by_number_with_a_note(loop: Path, rs: Any) -> None:
    result = rs("criteria", "set", "2", "true", "--note", "ruff check .: All checks passed!")
    assert result.out == "lint clean: met\n"
    last = history_of(loop)[-1]
    assert {k: last[k] for k in ("event", "criterion", "value", "note", "iteration")} == {
        "event": "criterion_set",
        "criterion": "lint clean",
        "value": True,
        "note": "ruff check .: All checks passed!",
        "iteration": 0,
    }
    # Setting it again changes nothing and logs nothing.
    assert rs("criteria", "set", "lint clean", "yes").out == "lint clean: met\n"
    assert len(history_of(loop)) == 2


def test_criteria_set_records_a_criterion_missing_from_the_map(project: Path, rs: Any) -> None:
    write_raw(project, {"spec": "x", "criteria": ["a"]})
    assert rs("criteria", "set", "a", "false").code == 0
    assert state_of(project)["criteriaStatus"] == {"a": False}


def test_a_criterion_named_by_a_number_is_found_by_name_first(project: Path, rs: Any) -> None:
    write_raw(project, {"spec": "x", "criteria": ["first", "1"]})
    assert rs("criteria", "set", "1", "true").out == "1: met\n"
    assert state_of(project)["criteriaStatus"] == {"1": True}


def test_criteria_remove(loop: Path, rs: Any) -> None:
    rs("criteria", "add", "docs", "--check", "make docs")
    assert rs("criteria", "remove", "docs").out == "removed criterion 'docs'\n"
    assert rs("criteria", "remove", "1").out == "removed criterion 'tests pass'\n"
    state = state_of(loop)
    assert state["criteria"] == ["lint clean"]
    assert state["criteriaStatus"] == {"lint clean": False}
    assert state["checks"] == {}
    assert [e["event"] for e in history_of(loop)][-2:] == ["criterion_removed"] * 2


# -- steps -----------------------------------------------------------------------------


def steps_of(project: Path) -> tuple[list[str], list[str], list[str]]:
    state = state_of(project)
    return state["steps"], state["completedSteps"], state["remainingSteps"]


def test_steps_by_text_and_number(loop: Path, rs: Any) -> None:
    assert rs("step", "done", "2").out == "done: test it\n"
    assert steps_of(loop) == (
        ["write it", "test it", "ship it"],
        ["test it"],
        ["write it", "ship it"],
    )
    assert rs("step", "done", "write it").out == "done: write it\n"
    assert steps_of(loop) == (
        ["write it", "test it", "ship it"],
        ["write it", "test it"],
        ["ship it"],
    )
    assert rs("step", "add", "tag the release").out == "added step 'tag the release'\n"
    assert steps_of(loop) == (
        ["write it", "test it", "ship it", "tag the release"],
        ["write it", "test it"],
        ["ship it", "tag the release"],
    )
    assert rs("step", "undo", "1").out == "not done: write it\n"
    assert rs("step", "undo", "test it").out == "not done: test it\n"
    assert steps_of(loop)[1] == []
    events = [(e["event"], e["step"]) for e in history_of(loop)[1:]]
    assert events == [
        ("step_done", "test it"),
        ("step_done", "write it"),
        ("step_added", "tag the release"),
        ("step_undone", "write it"),
        ("step_undone", "test it"),
    ]


def test_marking_a_step_twice_changes_nothing(loop: Path, rs: Any) -> None:
    rs("step", "done", "1")
    before = (loop / ".loop" / "state.json").read_bytes()
    assert rs("step", "done", "1").out == "done: write it\n"
    assert rs("step", "undo", "2").out == "not done: test it\n"
    assert (loop / ".loop" / "state.json").read_bytes() == before
    assert len(history_of(loop)) == 2


def test_steps_fix_a_hand_written_inconsistent_file(project: Path, rs: Any) -> None:
    write_raw(
        project,
        {"spec": "x", "steps": ["a"], "completedSteps": ["a"], "remainingSteps": ["a", "b"]},
    )
    assert rs("step", "done", "b").code == 0
    assert steps_of(project) == (["a", "b"], ["a", "b"], [])


# -- lifecycle -------------------------------------------------------------------------


def test_pause_and_resume(loop: Path, rs: Any) -> None:
    result = rs("pause", "--reason", "waiting for API keys")
    assert (result.code, result.out) == (0, "paused; continue with `ralphstate resume`\n")
    state = state_of(loop)
    assert (state["status"], state["pauseReason"]) == ("paused", "waiting for API keys")
    result = rs("resume")
    assert (result.code, result.out) == (0, "in progress: iteration 0/20\n")
    state = state_of(loop)
    assert (state["status"], state["pauseReason"]) == ("in_progress", None)
    assert [e["event"] for e in history_of(loop)][1:] == ["paused", "resumed"]
    assert history_of(loop)[1]["reason"] == "waiting for API keys"


def test_pause_default_reason(loop: Path, rs: Any) -> None:
    rs("pause")
    assert state_of(loop)["pauseReason"] == "user"


def test_resume_at_the_cap_allows_ten_more(loop: Path, rs: Any) -> None:
    edit(loop, iteration=20, status="paused", pauseReason="max_iterations", blocksWithoutProgress=4)
    assert rs("resume").out == "in progress: iteration 20/30\n"
    state = state_of(loop)
    assert (state["maxIterations"], state["blocksWithoutProgress"]) == (30, 0)


@pytest.mark.parametrize(
    ("iteration", "maximum", "status", "out"),
    [
        (20, 20, "paused", "in progress: iteration 20/25\n"),
        (3, 20, "in_progress", "in progress: iteration 3/25\n"),
        (3, 10, "paused", "in progress: iteration 3/15\n"),
    ],
)
def test_resume_more(
    loop: Path, rs: Any, iteration: int, maximum: int, status: str, out: str
) -> None:
    edit(loop, iteration=iteration, maxIterations=maximum, status=status)
    assert rs("resume", "--more", "5").out == out
    assert history_of(loop)[-1]["event"] == "resumed"


def test_resume_says_when_a_budget_is_still_reached(loop: Path, rs: Any) -> None:
    edit(loop, status="paused", pauseReason="budget", maxTokens=600, usage={"tokens": 628})
    assert rs("resume").out == (
        "in progress: iteration 0/20; its budget is still reached (tokens 628 of the loop's"
        " 600), so the next stop pauses it again: raise it first (`ralphstate config"
        " max-tokens N`)\n"
    )
    assert rs("config", "max-tokens", "2000").code == 0
    edit(loop, status="paused", pauseReason="budget")
    assert rs("resume").out == "in progress: iteration 0/20\n"


def test_resume_an_in_progress_loop_changes_nothing(loop: Path, rs: Any) -> None:
    before = (loop / ".loop" / "state.json").read_bytes()
    assert rs("resume").out == "already in progress: iteration 0/20\n"
    assert (loop / ".loop" / "state.json").read_bytes() == before


def test_resume_a_complete_loop_with_an_unmet_criterion(loop: Path, rs: Any) -> None:
    edit(loop, status="complete")
    assert rs("resume").code == 0
    assert state_of(loop)["status"] == "in_progress"


def test_cancel(loop: Path, rs: Any) -> None:
    result = rs("cancel")
    assert (result.code, result.out, result.err) == (0, "cancelled\n", "")
    assert state_of(loop)["status"] == "cancelled"
    assert rs("cancel").out == "already cancelled\n"
    assert [e["event"] for e in history_of(loop)] == ["init", "cancelled"]
    entry = registered(loop)
    assert entry is not None and entry["status"] == "cancelled"


def test_adopt_outside_a_session(project: Path, rs: Any) -> None:
    # A loop that arrived with a clone: this machine has never seen it.
    write_raw(
        project,
        {
            "spec": "cloned",
            "criteria": ["a"],
            "sessionId": "theirs",
            "startedAt": "2026-01-01T00:00:00Z",
        },
    )
    assert registered(project) is None
    result = rs("adopt")
    assert (result.code, result.out, result.err) == (
        0,
        "adopted; the next session here owns it\n",
        "",
    )
    assert state_of(project)["sessionId"] is None
    paths = LoopPaths(project, project / ".loop")
    assert registry.knows(paths, state_of(project))
    last = history_of(project)[-1]
    assert {k: last[k] for k in ("event", "session", "from", "by")} == {
        "event": "adopted",
        "session": None,
        "from": "theirs",
        "by": "cli",
    }


def test_adopt_inside_a_session(loop: Path, rs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "sess-2")
    monkeypatch.setenv("CLAUDE_PID", "777")
    assert rs("adopt").out == "adopted by session sess-2\n"
    assert state_of(loop)["sessionId"] == "sess-2"
    entry = registered(loop)
    assert entry is not None and (entry["sessionId"], entry["claudePid"]) == ("sess-2", "777")
    assert history_of(loop)[-1]["from"] is None


# -- log -------------------------------------------------------------------------------


def test_log(project: Path, rs: Any) -> None:
    with freeze_time(NOW) as frozen:
        rs("init", "Build it", "-c", "tests pass", "-s", "write it")
        frozen.tick(60)
        rs("criteria", "set", "1", "yes", "--note", "84 passed")
        frozen.tick(60)
        rs("step", "done", "write it")
        frozen.tick(60)
        rs("pause")
    result = rs("log")
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(
        "2026-01-02T03:04:05Z  #0   init             [you] spec='Build it' criteria=1 steps=1"
    )
    assert lines[1].startswith(
        "2026-01-02T03:05:05Z  #0   criterion_set    [you] criterion='tests pass' value=True"
    )
    assert lines[1].endswith(" note='84 passed'")
    assert lines[2:] == [
        "2026-01-02T03:06:05Z  #0   step_done        [you] step='write it'",
        "2026-01-02T03:07:05Z  #0   paused           [you] reason='user'",
    ]
    assert rs("log", "-n", "2").out == "".join(result.out.splitlines(keepends=True)[-2:])
    as_json = rs("log", "-n", "2", "--json")
    loop_id = state_of(project)["loopId"]
    assert [json.loads(line) for line in as_json.out.splitlines()] == [
        {
            "at": "2026-01-02T03:06:05Z",
            "event": "step_done",
            "iteration": 0,
            "loop": loop_id,
            "step": "write it",
            "actor": {"kind": "person"},
        },
        {
            "at": "2026-01-02T03:07:05Z",
            "event": "paused",
            "iteration": 0,
            "loop": loop_id,
            "reason": "user",
            "actor": {"kind": "person"},
        },
    ]


def test_log_skips_lines_that_do_not_parse(loop: Path, rs: Any) -> None:
    with (loop / ".loop" / "history.jsonl").open("ab") as handle:
        handle.write(b"{torn\n[1]\n")
    out = rs("log", "--json").out
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["init"]


def test_log_without_history(project: Path, rs: Any) -> None:
    write_raw(project, {"spec": "x"})
    result = rs("log")
    assert (result.code, result.out, result.err) == (0, "", "")


# -- list ------------------------------------------------------------------------------


def test_list_when_nothing_was_recorded(project: Path, rs: Any) -> None:
    assert rs("list").out == "no loops recorded on this machine\n"
    assert rs("list", "--json").out == "[]\n"


def test_list_and_prune(tmp_path: Path, rs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    for root, spec in ((kept, "Keep me"), (gone, "Delete me")):
        root.mkdir()
        monkeypatch.chdir(root)
        assert rs("init", spec, "-c", "a", "-c", "b").code == 0
    monkeypatch.chdir(kept)
    rs("criteria", "set", "a", "true")
    shutil.rmtree(gone)
    kept_path, gone_path = os.path.realpath(kept), os.path.realpath(gone)

    result = rs("list")
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        f"gone         0/2    {gone_path}  Delete me\nin_progress  1/2    {kept_path}  Keep me\n"
    )
    rows = json.loads(rs("list", "--json").out)
    assert [(r["path"], r["status"], r["exists"], r["criteriaMet"]) for r in rows] == [
        (gone_path, "gone", False, 0),
        (kept_path, "in_progress", True, 1),
    ]
    assert rows[1]["spec"] == "Keep me" and rows[1]["criteriaTotal"] == 2

    assert rs("list", "--prune").out == f"in_progress  1/2    {kept_path}  Keep me\n"
    assert list(registry.read()) == [str(Path(kept_path) / ".loop")]
    assert rs("list").out == f"in_progress  1/2    {kept_path}  Keep me\n"


def test_list_shows_an_unreadable_loop(loop: Path, rs: Any) -> None:
    (loop / ".loop" / "state.json").write_bytes(b"{oops")
    rows = json.loads(rs("list", "--json").out)
    assert [r["status"] for r in rows] == ["unreadable"]
    assert "line 1, column 2" in rows[0]["problem"]


# -- finding the loop --------------------------------------------------------------------


def test_commands_find_the_loop_above(loop: Path, rs: Any) -> None:
    deep = loop / "src" / "pkg"
    deep.mkdir(parents=True)
    os.chdir(deep)
    assert rs("criteria", "set", "tests pass", "true").code == 0
    assert state_of(loop)["criteriaStatus"]["tests pass"] is True


# -- user errors ------------------------------------------------------------------------

NEEDS_A_LOOP = [
    ("status",),
    ("status", "--json"),
    ("show",),
    ("log",),
    ("criteria", "list"),
    ("criteria", "add", "x"),
    ("criteria", "set", "a", "true"),
    ("criteria", "remove", "a"),
    ("step", "add", "x"),
    ("step", "done", "1"),
    ("step", "undo", "1"),
    ("pause",),
    ("resume",),
    ("adopt",),
    ("cancel",),
]

CRITERIA = "(criteria: 'tests pass', 'lint clean')"
STEPS = "(steps: 'write it', 'test it', 'ship it')"

ERRORS = [
    *[pytest.param("none", args, NO_LOOP, id="no-loop " + " ".join(args)) for args in NEEDS_A_LOOP],
    *[
        pytest.param(
            "empty-dir",
            args,
            "ralphstate: no loop here: .loop/state.json does not exist"
            " (start one with `ralphstate init`).\n",
            id="empty-dir " + " ".join(args),
        )
        for args in NEEDS_A_LOOP
    ],
    (
        "loop",
        ("criteria", "set", "nope", "true"),
        f"ralphstate: no criterion 'nope' in this loop {CRITERIA}.\n",
    ),
    (
        "loop",
        ("criteria", "set", "3", "true"),
        f"ralphstate: no criterion '3' in this loop {CRITERIA}.\n",
    ),
    (
        "loop",
        ("criteria", "set", "0", "no"),
        f"ralphstate: no criterion '0' in this loop {CRITERIA}.\n",
    ),
    (
        "loop",
        ("criteria", "remove", "nope"),
        f"ralphstate: no criterion 'nope' in this loop {CRITERIA}.\n",
    ),
    (
        "loop",
        ("criteria", "set", "tests pass", "maybe"),
        "ralphstate: 'maybe' is not true or false (use true/false, yes/no or 1/0).\n",
    ),
    (
        "loop",
        ("criteria", "set", "nope", "maybe"),
        "ralphstate: 'maybe' is not true or false (use true/false, yes/no or 1/0).\n",
    ),
    (
        "loop",
        ("criteria", "add", "tests pass"),
        "ralphstate: criterion 'tests pass' is already in this loop.\n",
    ),
    ("loop", ("criteria", "add", "  "), "ralphstate: a criterion needs a name, not only spaces.\n"),
    ("loop", ("step", "done", "nope"), f"ralphstate: no step 'nope' in this loop {STEPS}.\n"),
    ("loop", ("step", "done", "4"), f"ralphstate: no step '4' in this loop {STEPS}.\n"),
    ("loop", ("step", "undo", "nope"), f"ralphstate: no step 'nope' in this loop {STEPS}.\n"),
    ("loop", ("step", "add", "write it"), "ralphstate: step 'write it' is already in this loop.\n"),
    ("loop", ("step", "add", ""), "ralphstate: a step needs some text, not only spaces.\n"),
    (
        "loop",
        ("init", "Other"),
        (
            "ralphstate: an unfinished loop is already here (in_progress, spec: 'Build it');"
            " use --force to replace it (a copy is kept).\n"
        ),
    ),
    ("complete", ("pause",), "ralphstate: the loop is complete, not in progress.\n"),
    ("cancelled", ("pause",), "ralphstate: the loop is cancelled, not in progress.\n"),
    (
        "cancelled",
        ("resume",),
        "ralphstate: the loop was cancelled; start a new one with `ralphstate init`.\n",
    ),
    (
        "complete",
        ("resume",),
        (
            "ralphstate: the loop is complete; set a criterion back to false first"
            " (ralphstate criteria set NAME false) or start a new loop.\n"
        ),
    ),
    (
        "corrupt",
        ("criteria", "set", "tests pass", "true"),
        (
            "ralphstate: .loop/state.json is not valid JSON (line 1, column 20): trailing comma"
            " is not allowed; it was left untouched.\n"
        ),
    ),
    (
        "corrupt",
        ("status",),
        (
            "ralphstate: .loop/state.json is not valid JSON (line 1, column 20): trailing comma"
            " is not allowed; it was left untouched.\n"
        ),
    ),
    ("none", ("init",), 'ralphstate: a loop needs a spec: ralphstate init "what to build".\n'),
    ("none", ("init", "x", "--marker", " "), "ralphstate: a marker cannot be empty.\n"),
    (
        "none",
        ("init", "--from", "missing.json"),
        "ralphstate: cannot read template missing.json: No such file or directory.\n",
    ),
    (
        "none",
        ("init", "--from", "bad.json"),
        "ralphstate: template bad.json is not valid JSON (line 1, column 10).\n",
    ),
    (
        "none",
        ("init", "--from", "future.json"),
        (
            "ralphstate: template future.json has schema version 2, newer than this ralphstate"
            " understands (1); upgrade ralphstate to use it\n"
        ),
    ),
    (
        "none",
        ("init", "--from", "typo.json"),
        "ralphstate: template typo.json: 'maxIterations' must be between 1 and 100000, not 0\n",
    ),
    (
        "none",
        ("init", "--from", "empty.md"),
        "ralphstate: the template has no `- [ ]` items under a Criteria or Steps heading.\n",
    ),
]


def make(kind: str, project: Path, rs: Any) -> None:
    (project / "bad.json").write_text('{"spec": }')
    (project / "future.json").write_text('{"version": 2, "spec": "x"}')
    (project / "typo.json").write_text('{"spec": "x", "maxIterations": 0}')
    (project / "empty.md").write_text("# Title\n\nJust prose.\n")
    if kind == "none":
        return
    if kind == "empty-dir":
        (project / ".loop").mkdir()
        return
    rs(
        "init",
        "Build it",
        "-c",
        "tests pass",
        "-c",
        "lint clean",
        "-s",
        "write it",
        "-s",
        "test it",
        "-s",
        "ship it",
    )
    if kind == "corrupt":
        (project / ".loop" / "state.json").write_bytes(b'{"spec": "Build it",\n}\n')
    elif kind == "paused":
        rs("pause")
    elif kind == "cancelled":
        rs("cancel")
    elif kind == "complete":  # as ralphstate itself completes it: its ledger knows
        edit(project, status="complete", criteriaStatus={"tests pass": True, "lint clean": True})
        ledger.note_status(LoopPaths(project, project / ".loop"), state_of(project))


def tree(root: Path, home: Path) -> dict[str, bytes]:
    files = {}
    for base in (root, home):
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.name not in ("state.lock", "loops.json.lock"):
                files[str(path)] = path.read_bytes()
    return files


@pytest.mark.parametrize(("kind", "args", "message"), ERRORS)
def test_user_errors(
    project: Path, rs: Any, isolated: Path, kind: str, args: tuple[str, ...], message: str
) -> None:
    make(kind, project, rs)
    before = tree(project, isolated)
    result = rs(*args)
    assert result.err == message
    assert (result.code, result.out) == (1, "")
    assert tree(project, isolated) == before


def test_a_user_error_in_a_real_process(project: Path) -> None:
    from tests.helpers import run_process

    done = run_process(["criteria", "set", "x", "true"], cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (1, b"", NO_LOOP.encode())


@pytest.mark.parametrize(
    "args",
    [
        ("init", "x", "--max-iterations", "0"),
        ("init", "x", "--stall-limit", "-1"),
        ("resume", "--more", "0"),
        ("log", "-n", "0"),
    ],
    ids=" ".join,
)
def test_zero_is_never_unlimited(project: Path, rs: Any, args: tuple[str, ...]) -> None:
    if args[0] != "init":
        rs("init", "Build it")
    before = tree(project, project)
    result = rs(*args)
    assert result.code == 1
    assert result.err.count("\n") == 1 and result.err.startswith("ralphstate: Invalid value for ")
    assert "must be at least 1 (there is no unlimited)." in result.err
    assert "Traceback" not in result.err
    assert tree(project, project) == before


@pytest.mark.parametrize(
    "args,expected",
    [
        (("frobnicate",), "ralphstate: No such command 'frobnicate'. (see `ralphstate --help`)\n"),
        (
            ("criteria", "set", "tests pass"),
            "ralphstate: Missing argument 'VALUE'. (see `ralphstate criteria set --help`)\n",
        ),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_1(
    project: Path, rs: Any, args: tuple[str, ...], expected: str
) -> None:
    result = rs(*args)
    assert (result.code, result.out, result.err) == (1, "", expected)


# -- the command table -------------------------------------------------------------------
# The root group and `criteria` import a command's module only when it is asked for
# (cli/lazy.py). In this process every command is loaded already (test_docs walks the
# tree), so what depends on laziness runs in a real process.


def test_every_name_in_the_command_table_is_that_command() -> None:
    from ralphstate.cli.app import COMMANDS

    for name, target in COMMANDS.items():
        module, _, attribute = target.partition(":")
        __import__(module)
        assert sys.modules[module].__dict__[attribute].name == name


def test_help_lists_every_command_in_order_in_a_real_process(project: Path) -> None:
    from ralphstate.cli.app import COMMANDS
    from tests.helpers import run_process

    done = run_process(["--help"], cwd=project)
    assert (done.returncode, done.stderr) == (0, b"")
    listed = done.stdout.decode().split("\nCommands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == sorted(COMMANDS)
    assert "  criteria   List, add, set or remove success criteria." in listed
    assert "  status     Show the loop: spec, criteria, steps, iteration, owner." in listed
    done = run_process(["criteria", "--help"], cwd=project)
    listed = done.stdout.decode().split("\nCommands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == ["add", "check", "list", "remove", "set"]


@pytest.mark.parametrize(
    ("args", "close", "group"),
    [
        (["statsu"], "status", "ralphstate"),
        (["criteria", "chek"], "check", "ralphstate criteria"),
        (["step", "dne"], "done", "ralphstate step"),
    ],
)
def test_a_mistyped_command_in_a_real_process(
    project: Path, args: list[str], close: str, group: str
) -> None:
    import click

    from tests.helpers import run_process

    done = run_process(args, cwd=project)
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (1, b"")
    assert err.startswith(f"ralphstate: No such command {args[-1]!r}.")
    assert err.endswith(f" (see `{group} --help`)\n")
    if hasattr(click.exceptions, "NoSuchCommand"):  # click 8.4 and later name close ones
        assert f"'{close}'" in err
