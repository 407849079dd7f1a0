"""`ralphstate pause`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.commands import (
    history_of,
    state_of,
)


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
