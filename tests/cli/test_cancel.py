"""`ralphstate cancel`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.commands import (
    history_of,
    registered,
    state_of,
)


def test_cancel(loop: Path, rs: Any) -> None:
    result = rs("cancel")
    assert (result.code, result.out, result.err) == (0, "cancelled\n", "")
    assert state_of(loop)["status"] == "cancelled"
    assert rs("cancel").out == "already cancelled\n"
    assert [e["event"] for e in history_of(loop)] == ["init", "cancelled"]
    entry = registered(loop)
    assert entry is not None and entry["status"] == "cancelled"
