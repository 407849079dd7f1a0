"""Helpers for the check tests: portable check commands (this Python, double-quoted,
which both sh and cmd.exe accept), a way to tell whether a process still runs, and a
hook stopped by its client while a check runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

PY = sys.executable


def py(code: str) -> str:
    """A check command that runs `code` with this Python."""
    assert not any(c in code for c in '"$`%!'), "keep the code shell-neutral"
    return f'"{PY}" -c "{code}"'


def script(path: Path, code: str) -> str:
    """Write `code` to `path` and return the check command that runs it."""
    path.write_text(code)
    return f'"{PY}" "{path}"'


PASS = py("print('all good')")
FAIL = py("import sys; print('first line'); print('boom: 1 == 2'); sys.exit(3)")


def sleeper(directory: Path, name: str = "sleeper") -> tuple[str, Path, Path]:
    """A check that writes its pid, says it started, then sleeps for a minute.
    Returns (command, pid file, started file)."""
    pid_file = directory / f"{name}.pid"
    started = directory / f"{name}.started"
    code = (
        "import os, time, pathlib\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\n"
        f"pathlib.Path({str(started)!r}).write_text('yes')\n"
        "print('sleeping', flush=True)\n"
        "time.sleep(60)\n"
    )
    return script(directory / f"{name}.py", code), pid_file, started


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped counts as gone)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except (OSError, IndexError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_for(condition: Callable[[], object], what: str, limit: float = 30.0) -> None:
    """Wait until `condition()` holds; fail saying `what` if it never does."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def terminated_during_check(
    root: Path, event: str, data: bytes, started: Path
) -> tuple[int, bytes, str]:
    """`ralphstate hook EVENT` on `data` in `root`, sent SIGTERM once `started` exists (a
    `sleeper` check of the loop has begun), as a client that gives up on a hook does:
    its exit code, stdout and stderr."""
    (root / "input.json").write_bytes(data)
    with (root / "input.json").open("rb") as stdin:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ralphstate", "hook", event],
            cwd=root,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    wait_for(started.exists, "the check to start")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err.decode()
