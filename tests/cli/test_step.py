"""`ralphstate step add|done|undo`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.commands import (
    history_of,
    state_of,
    write_raw,
)


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
