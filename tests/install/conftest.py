"""Fixtures of the install tests."""

from __future__ import annotations

import os
import venv
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a fresh venv with nothing installed, as after `pip uninstall
    ralphstate`: it cannot import ralphstate."""
    where = tmp_path_factory.mktemp("bare") / "venv"
    venv.create(where, with_pip=False, symlinks=os.name != "nt")
    python = where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    assert python.exists()
    return python


# The variables that would point the per-user files an install writes and `doctor` reads
# somewhere other than the home (Claude Code, Codex, Copilot, OpenCode's XDG config), or turn the
# task tools on or off for the whole machine (Claude Code's environment).
ELSEWHERE = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
    "XDG_CONFIG_HOME",
    "CLAUDE_CODE_ENABLE_TODO_TOOLS",
    "CLAUDE_CODE_ENABLE_TASKS",
)


@pytest.fixture(autouse=True)
def claude_config_in_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's user settings where they are without CLAUDE_CONFIG_DIR: in the home
    directory (a test that sets the variable says so)."""
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own (HOME, and USERPROFILE on Windows) that nothing points past,
    and git without the machine's global or system configuration."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.setenv("USERPROFILE", str(path))
    for name in ELSEWHERE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return path
