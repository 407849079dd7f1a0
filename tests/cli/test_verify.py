"""`ralphstate verify`: the checks run now, one line each. What they record is tested
with verify/ (tests/verify/test_verify.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from tests.helpers.commands import state_of

PASSES = f'"{sys.executable}" -c pass'


def test_a_passing_check_is_said_and_recorded(loop: Path, rs: Any) -> None:
    assert rs("criteria", "check", "tests pass", PASSES).code == 0
    result = rs("verify")
    assert (result.code, result.err) == (0, "")
    first, last = result.out.splitlines()
    assert first.startswith("PASS  tests pass  (") and last == "the one check passed"
    assert state_of(loop)["criteriaStatus"]["tests pass"] is True


def test_verify_as_json(loop: Path, rs: Any) -> None:
    assert rs("criteria", "check", "tests pass", PASSES).code == 0
    [shown] = orjson.loads(rs("verify", "--json").out)
    assert (shown["criterion"], shown["result"], shown["exitCode"]) == ("tests pass", "verified", 0)


def test_a_loop_without_checks_says_how_to_add_one(loop: Path, rs: Any) -> None:
    result = rs("verify")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        "ralphstate: no criterion in this loop has a check; add one: ralphstate criteria"
        ' check NAME "CMD".\n'
    )
