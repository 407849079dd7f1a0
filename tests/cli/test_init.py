"""`ralphstate init`: what it starts, from options and templates, and what it says."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time

from tests.helpers import colleague
from tests.helpers.commands import (
    NOT_GUARDED,
    NOW,
    edit,
    history_of,
    registered,
    state_of,
)


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
