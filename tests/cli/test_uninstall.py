"""`ralphstate uninstall`: what `install` added, removed, and said so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def test_uninstall_removes_what_install_added(project: Path, rs: Any) -> None:
    assert rs("install").code == 0
    result = rs("uninstall")
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert lines[0].startswith("removed Stop hook: ")
    assert lines[-1] == f"updated: {project / '.claude' / 'settings.local.json'}"
    settings = orjson.loads((project / ".claude" / "settings.local.json").read_bytes())
    assert "Stop" not in settings.get("hooks", {})


def test_uninstall_is_install_uninstall(project: Path, rs: Any) -> None:
    assert rs("install").code == 0
    said = rs("install", "--uninstall").out
    assert rs("install").code == 0
    assert rs("uninstall").out == said
    assert rs("uninstall").out.splitlines()[-1].startswith("unchanged: ")
