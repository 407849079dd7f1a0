"""The agent process a run started, recorded so that no later run starts beside it.

The agent runs in its own session (its own process group), so a runner that dies
without stopping it (killed, or its machine's terminal gone before it could) leaves
it running. `.loop/runs/agent.json` names it while it runs: its process id (also its
process group's) and its start time as the system gives it, so a process id the system
has since handed to another process is not taken for the agent. A run refuses to start
while that agent still runs (`still_running`). What an agent leaves running in the
background after it ended is not the agent, and stops no run (docs/run.md).

On Windows nothing is recorded: a process there is not part of a group that outlives
it in the same way, and the runner ends the agent's tree itself (`taskkill /T`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import orjson

from ralphstate.storage import fsio

NAME = "agent.json"
_MAX_BYTES = 4096


def start_time(pid: int) -> str | None:
    """When the process `pid` started, as the system says it (None: not known)."""
    if sys.platform.startswith("linux"):
        try:
            with Path(f"/proc/{pid}/stat").open("rb") as handle:
                stat = handle.read(_MAX_BYTES)
        except OSError:
            return None
        fields = stat.rpartition(b")")[2].split()
        return fields[19].decode("ascii", "replace") if len(fields) > 19 else None
    if sys.platform == "win32":  # pragma: no cover
        return None
    try:  # macOS and the BSDs
        done = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = done.stdout.decode("ascii", "replace").strip()
    return text if done.returncode == 0 and text else None


def record(runs: Path, pid: int) -> None:
    """Name the agent just started (best effort: a run goes on without the record)."""
    if sys.platform == "win32":  # pragma: no cover
        return
    entry = {"pid": pid, "pgid": pid, "started": start_time(pid), "runner": os.getpid()}
    with contextlib.suppress(OSError):
        fsio.atomic_write(runs / NAME, orjson.dumps(entry) + b"\n")


def clear(runs: Path) -> None:
    with contextlib.suppress(OSError):
        (runs / NAME).unlink()


def still_running(runs: Path) -> int | None:
    """The process id of an agent an earlier run started that is still running; None
    when there is none (and the record, if any, is gone)."""
    if sys.platform == "win32":  # pragma: no cover
        return None
    path = runs / NAME
    try:
        with fsio.open_regular(path) as handle:
            entry = orjson.loads(handle.read(_MAX_BYTES))
    except (OSError, orjson.JSONDecodeError, fsio.NotRegular):
        return None
    pid = entry.get("pid") if isinstance(entry, dict) else None
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        clear(runs)
        return None
    if _alive(pid, entry.get("started")):
        return pid
    clear(runs)
    return None


def _alive(pid: int, started: object) -> bool:
    """The very process recorded is running (not another one given its id since). A
    record without a start time (one that came with a clone, say) names no agent."""
    if not isinstance(started, str):
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or another user's by now
        return False
    except OSError:
        return False
    return start_time(pid) == started
