"""The agent process a run started, recorded so that no later run starts beside it.

The agent runs in its own session (its own process group), so a runner that dies
without stopping it (killed, or its machine's terminal gone before it could) leaves
it running. `.loop/runs/agent.json` names it while it runs: its process id (also its
process group's) and its start time as the system gives it, so a process id the system
has since handed to another process is not taken for the agent. A run refuses to start
while that agent still runs (`still_running`). What an agent leaves running in the
background after it ended is not the agent, and stops no run (docs/reference/run.md).

On Windows nothing is recorded: a process there is not part of a group that outlives
it in the same way, and the runner ends the agent's tree itself (`taskkill /T`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import orjson

from ralphstate.storage.system import fsio, process

NAME = "agent.json"
_MAX_BYTES = 4096


def record(runs: Path, pid: int) -> None:
    """Name the agent just started (best effort: a run goes on without the record)."""
    if sys.platform == "win32":  # pragma: no cover
        return
    entry = {"pid": pid, "pgid": pid, "started": process.start_time(pid), "runner": os.getpid()}
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
    if process.running(pid, entry.get("started")):
        return pid
    clear(runs)
    return None
