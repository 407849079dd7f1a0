"""`ralphstate install`: what it says it wrote. Every agent's files are tested in
tests/install/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def test_install_says_each_hook_and_the_file(project: Path, rs: Any) -> None:
    result = rs("install")
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert lines[0].startswith("added Stop hook: ")
    assert lines[-1] == f"updated: {project / '.claude' / 'settings.local.json'}"
    settings = orjson.loads((project / ".claude" / "settings.local.json").read_bytes())
    assert "Stop" in settings["hooks"]
    assert rs("install").out.splitlines()[-1].startswith("unchanged: ")


def test_tasks_are_claude_codes_alone(project: Path, rs: Any) -> None:
    result = rs("install", "--tasks", "--agent", "codex")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        "ralphstate: --tasks is Claude Code's hooks'; leave --agent and --statusline out."
        " (see `ralphstate install --help`)\n"
    )
    assert not (project / ".codex").exists()
