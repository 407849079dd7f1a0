"""`ralphstate resume`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.commands import (
    edit,
    history_of,
    state_of,
)


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
