"""`ralphstate review`: what waits for the person's review, and their answer. The
review's rules are tested with loop/proofreview.py (tests/loop/test_review.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def test_a_loop_as_approved_has_nothing_to_review(loop: Path, rs: Any) -> None:
    result = rs("review")
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert lines[0].startswith("approved outside the agent, unconfirmed (no terminal or prompt")
    assert lines[1:] == ["Nothing to review: the loop's proof is as approved."]


def test_review_as_json(loop: Path, rs: Any) -> None:
    shown = orjson.loads(rs("review", "--json").out)
    assert shown["approvedBy"] == "you"
    assert (shown["changes"], shown["difference"], shown["diff"]) == ([], [], "")


def test_approve_and_revert_go_one_at_a_time(loop: Path, rs: Any) -> None:
    result = rs("review", "--approve", "--revert")
    assert (result.code, result.out) == (1, "")
    assert result.err == "ralphstate: --approve and --revert go one at a time.\n"
