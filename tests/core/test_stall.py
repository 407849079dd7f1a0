"""The stall rule's arithmetic (core/stall.py), pure: what a stop counts as, the count a
block leaves, and what in Claude Code's `background_tasks` is work still running."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ralphstate.core import stall
from tests.helpers.loops import parser_state

BOOK = "0123456789abcdef"


def asked(answer: str | None) -> tuple[Callable[[], str | None], list[int]]:
    calls: list[int] = []

    def files() -> str | None:
        calls.append(1)
        return answer

    return files, calls


@pytest.mark.parametrize(
    ("last", "book", "background", "files", "expected", "looked"),
    [
        # The bookkeeping changed: progress, the files not looked at, their stamp kept.
        (
            f"{BOOK} aaaa",
            "fedcba9876543210",
            False,
            "bbbb",
            ("fedcba9876543210 aaaa", "progress"),
            False,
        ),
        # It did not: the files changed since the last look, or did not.
        (f"{BOOK} aaaa", BOOK, False, "bbbb", (f"{BOOK} bbbb", "progress"), True),
        (f"{BOOK} aaaa", BOOK, False, "aaaa", (f"{BOOK} aaaa", "none"), True),
        # The first look has nothing to compare with; a stamp not taken changes nothing.
        (BOOK, BOOK, False, "bbbb", (f"{BOOK} bbbb", "none"), True),
        (f"{BOOK} aaaa", BOOK, False, None, (f"{BOOK} aaaa", "none"), True),
        (None, BOOK, False, "bbbb", (BOOK, "progress"), False),
        # Background work running: held, and the files are not looked at.
        (f"{BOOK} aaaa", BOOK, True, "bbbb", (f"{BOOK} aaaa", "held"), False),
    ],
)
def test_what_a_stop_counts_as(
    last: str | None,
    book: str,
    background: bool,
    files: str | None,
    expected: tuple[str, str],
    looked: bool,
) -> None:
    state = parser_state(lastProgress=last)
    look, calls = asked(files)
    assert stall.weigh(state, book, background, look) == expected
    assert bool(calls) is looked


@pytest.mark.parametrize(("counts", "after"), [("progress", 0), ("none", 4), ("held", 3)])
def test_the_count_a_block_leaves(counts: stall.Counts, after: int) -> None:
    state = parser_state(blocksWithoutProgress=3)
    stall.count(state, "new", counts)
    assert (state["blocksWithoutProgress"], state["lastProgress"]) == (after, "new")


SHELL = {"id": "b1", "type": "shell", "description": "pytest"}


@pytest.mark.parametrize(
    ("tasks", "running"),
    [
        (None, False),
        ([], False),
        ("running", False),
        ([{**SHELL, "status": "running"}], True),
        ([{**SHELL, "status": "pending"}], True),
        ([{**SHELL}], True),  # in the list: in flight, whatever else it says
        ([{**SHELL, "status": "completed"}, {**SHELL, "status": "killed"}], False),
        (["not a task", 3], False),
    ],
)
def test_background_work_running(tasks: Any, running: bool) -> None:
    assert stall.running(tasks) is running
