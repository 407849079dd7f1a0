"""What the other agents' end-to-end tests share: running `ralphstate` in a project
with a client's environment, and reading the loop back."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any


def rs(project: Path, env: dict[str, str], *args: str) -> str:
    """`ralphstate ARGS` in `project`; it must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def rs_command(*args: str) -> str:
    """The shell command that runs `ralphstate ARGS` with this interpreter."""
    return shlex.join([sys.executable, "-m", "ralphstate", *args])


def read_state(project: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(
        (project / ".loop" / "state.json").read_text(encoding="utf-8")
    )
    return state


def history(project: Path) -> list[dict[str, Any]]:
    path = project / ".loop" / "history.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
