"""`ralphstate criteria list|add|set|remove`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.commands import (
    history_of,
    state_of,
    write_raw,
)


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
