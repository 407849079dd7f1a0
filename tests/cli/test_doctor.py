"""`ralphstate doctor`: one line a finding, and exit 1 on a failure. The checks
themselves are tested with install/checkup.py (tests/install/test_doctor.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

LEVELS = ("ok  ", "note", "warn", "fail")


def test_without_hooks_it_fails_and_says_what_to_run(
    project: Path, rs: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")  # no plugin of ralphstate's enabled either,
    monkeypatch.setenv("HOME", str(tmp_path))  # in a home of its own
    result = rs("doctor")
    assert (result.code, result.err) == (1, "")
    lines = result.out.splitlines()
    assert all(line[:4] in LEVELS for line in lines), lines
    said = "fail no Stop hook installed; run `ralphstate install`"
    assert any(line.startswith(said) for line in lines), lines


def test_after_install_nothing_fails(project: Path, rs: Any) -> None:
    assert rs("install").code == 0
    result = rs("doctor")
    assert result.code == 0, result.out
    assert not [line for line in result.out.splitlines() if line.startswith("fail")]
