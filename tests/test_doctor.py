from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Result


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.setenv("USERPROFILE", str(path))
    return path


def lines(result: Result) -> list[str]:
    return result.out.splitlines()


def test_doctor_without_hooks_fails_and_says_what_to_run(rs, project: Path, home: Path) -> None:  # type: ignore[no-untyped-def]
    result = rs("doctor")
    assert result.code == 1
    assert "fail no Stop hook installed; run `ralphstate install`" in lines(result)


def test_doctor_after_install_is_happy(rs, project: Path, home: Path) -> None:  # type: ignore[no-untyped-def]
    assert rs("install").code == 0
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    result = rs("doctor")
    assert result.code == 0, result.out
    out = result.out
    for event in ("Stop", "SessionStart", "PreCompact"):
        assert f"ok   {event} hook in {project / '.claude' / 'settings.json'} runs " in out
    assert "ok   .loop/state.json is valid: in_progress, 0/1 criteria, iteration 0/20" in out
    assert "the loop has no owner yet" in out


def test_doctor_flags_a_hook_whose_program_is_gone(rs, project: Path, home: Path) -> None:  # type: ignore[no-untyped-def]
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    command = '"/nowhere/bin/ralphstate" hook stop'
    settings.write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}})
    )
    result = rs("doctor")
    assert result.code == 1
    assert any(
        line.startswith("fail Stop hook in") and "/nowhere/bin/ralphstate" in line
        for line in lines(result)
    )


def test_doctor_warns_about_the_block_cap_and_foreign_loops(
    rs, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    rs("install")
    rs("init", "Build it", "-c", "tests pass", "--stall-limit", "9")
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "mine-0000")
    state = json.loads((project / ".loop" / "state.json").read_text())
    state["sessionId"] = "theirs-000"
    (project / ".loop" / "state.json").write_text(json.dumps(state))
    result = rs("doctor")
    assert "stallLimit 9 is not below Claude Code's cap of 8" in result.out
    assert "the loop belongs to session theirs-0, not this one (mine-000)" in result.out


def test_doctor_reports_a_corrupt_state(rs, project: Path, home: Path) -> None:  # type: ignore[no-untyped-def]
    rs("install")
    (project / ".loop").mkdir()
    (project / ".loop" / "state.json").write_text("{nope")
    result = rs("doctor")
    assert result.code == 1
    assert any(
        line.startswith("fail .loop/state.json is not valid JSON (line 1, column 2)")
        for line in lines(result)
    )
