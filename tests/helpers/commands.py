"""What the tests of the commands (tests/cli/) share: the loop's files read and
edited, and the lines every command says alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core import state as st
from ralphstate.storage.peruser import registry
from ralphstate.storage.system.paths import LoopPaths

NOW = "2026-01-02T03:04:05Z"
NO_LOOP = (
    "ralphstate: no loop here: no .loop/ in this directory or above"
    " (start one with `ralphstate init`).\n"
)


def state_of(project: Path) -> st.State:
    return st.parse((project / ".loop" / "state.json").read_bytes())


def history_of(project: Path) -> list[dict[str, Any]]:
    path = project / ".loop" / "history.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def write_raw(project: Path, raw: dict[str, Any]) -> Path:
    path = project / ".loop" / "state.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(raw))
    return path


def edit(project: Path, **changes: Any) -> None:
    path = project / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw.update(changes)
    path.write_bytes(orjson.dumps(raw))


# What `init` says about the guarded files of a project outside git (every test here).
NOT_GUARDED = "not guarding any files: the project is not in a git repository\n"


def assert_lines_start(out: str, expected: list[str]) -> None:
    """Each line starts as expected (other features may annotate a line's end)."""
    lines = out.splitlines()
    assert len(lines) == len(expected), out
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start), (line, start)
    assert out.endswith("\n")


def registered(project: Path) -> dict[str, Any] | None:
    return registry.entry(LoopPaths(project, project / ".loop"))
