"""What the benchmark (`hook_latency.py`) times: one whole process, its command line,
stdin and directory, and how it is run."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SESSION = "bench-session"
BIG = ["--max-iterations", "100000", "--stall-limit", "100000"]  # never paused by a cap
DETACH = os.name == "posix"  # Windows: a console process asks at CONIN$ (none here)
GIT_WHO = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]


class Proc:
    """One process to time: its command line and stdin (each, or a function of the run's
    number giving it), directory, and a piece of stdout that shows it did what the row
    says."""

    def __init__(
        self,
        command: list[str] | Callable[[int], list[str]],
        cwd: Path,
        data: bytes | Callable[[int], bytes] = b"",
        expect: str = "",
        verify: Callable[[], str | None] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.verify = verify  # after the runs: what is wrong with their effect, or None
        self.env = env or {}  # set for this process, over the benchmark's environment
        self.command = command if callable(command) else lambda i: command
        self.data = data if callable(data) else lambda i: data
        self.cwd, self.expect = cwd, expect


def run(cmd: list[str], env: dict[str, str], cwd: Path, data: bytes = b"") -> tuple[float, str]:
    """Wall time of one whole process, and its stdout; a failure stops the benchmark.
    The process leads a session of its own, with no controlling terminal (as a hook or
    a script has none): nothing it starts asks at the terminal of the person running
    the benchmark, who trusts the checks in a pty of its own instead (person.py)."""
    start = time.perf_counter()
    done = subprocess.run(
        cmd, input=data, env=env, cwd=cwd, capture_output=True, start_new_session=DETACH
    )
    took = time.perf_counter() - start
    if done.returncode != 0 or done.stderr:
        sys.exit(f"{shlex.join(cmd)} failed ({done.returncode}): {done.stderr.decode()}")
    return took, done.stdout.decode()


def hook_input(root: Path, event: str, **fields: object) -> bytes:
    data = {"session_id": SESSION, "cwd": str(root), "hook_event_name": event, **fields}
    return json.dumps(data).encode()
