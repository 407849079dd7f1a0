"""`ralphstate config`: the loop's settings shown and changed. Each setting's rules are
tested with loop/configure.py (tests/loop/test_settings.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.commands import history_of


def test_a_setting_changed_shown_and_unchanged(loop: Path, rs: Any) -> None:
    assert rs("config", "max-iterations", "40").out == "max-iterations: 40\n"
    assert rs("config", "max-iterations", "40").out == "max-iterations: 40 (unchanged)\n"
    assert rs("config", "max-iterations").out == "40\n"
    changes = [e for e in history_of(loop) if e["event"] == "config"]
    assert [(e["key"], e["value"]) for e in changes] == [("maxIterations", 40)]


def test_every_setting_is_listed(loop: Path, rs: Any) -> None:
    listed = [line.split(":")[0] for line in rs("config").out.splitlines()]
    assert listed[:2] == ["max-iterations", "stall-limit"]
    assert "guard" in listed and "verify-on-stop" in listed


def test_a_setting_takes_one_value(loop: Path, rs: Any) -> None:
    result = rs("config", "marker", "a", "b")
    assert (result.code, result.out) == (1, "")
    assert result.err == "ralphstate: marker takes one value; quote a value that has spaces.\n"
