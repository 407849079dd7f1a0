"""A home of its own in which nothing enforces a loop: no Claude Code settings, no other
agent's hook files, git without the machine's configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

# The variables that point an agent's per-user files somewhere other than the home.
ELSEWHERE = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "XDG_CONFIG_HOME")


def bare_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME (and USERPROFILE) at an empty directory and the agents' variables
    nowhere; the home."""
    home = tmp_path / "home"
    home.mkdir()
    for name in ("HOME", "USERPROFILE"):
        monkeypatch.setenv(name, str(home))
    for name in ELSEWHERE:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home
