"""`ralphstate status`: the view and `--json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from freezegun import freeze_time

from ralphstate.core import state as st
from tests.helpers.commands import (
    NOW,
    assert_lines_start,
    edit,
    state_of,
    write_raw,
)


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
            (
                "proof: as approved outside the agent, unconfirmed (no terminal or prompt"
                f" showed a person) at {NOW}"
            ),
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
    assert list(shown) == [
        *st.FIELD_ORDER,
        "extra",
        "knownHere",
        "proof",
        "staleEvidence",
        "standing",
    ]
    proof = shown.pop("proof")  # no ledger record: written by hand, not by init
    assert (proof["approvedBy"], proof["review"], proof["endedOutside"]) == (None, [], False)
    assert shown.pop("standing") == {}
    assert shown == {**state_of(project), "knownHere": False, "staleEvidence": []}
    assert shown["remainingSteps"] == ["a"]
