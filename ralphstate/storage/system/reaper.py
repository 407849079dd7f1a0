"""No process of the agent's outlives its run (`ralphstate ci`, Linux).

An agent can leave a process behind that no process group holds (a new session, a
double fork). Left running, it could rewrite the files or the records the job's own
proof reads after the run (ci/confirm.py). So the job becomes its descendants'
subreaper (`PR_SET_CHILD_SUBREAPER`) before it starts the run, which keeps every
orphan of the run its descendant, and ends them all once the run is over. Elsewhere
(no prctl) nothing is done, and `become` says so.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36
_MAX_STAT_BYTES = 4096
_ROUNDS = 50  # of looking for descendants again: a process forking as it is ended


def become() -> bool:
    """Make this process the subreaper of its descendants; whether it is one."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """Each process's parent, as /proc says it."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            with (entry / "stat").open("rb") as handle:
                stat = handle.read(_MAX_STAT_BYTES)
        except OSError:
            continue
        fields = stat.rpartition(b")")[2].split()
        if len(fields) > 1 and fields[1].isdigit():
            found[int(entry.name)] = int(fields[1])
    return found


def descendants(pid: int) -> list[int]:
    """The processes below `pid`, children first."""
    parents = _parents()
    found: list[int] = []
    below = {pid}
    grew = True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in below and child not in below:
                below.add(child)
                found.append(child)
                grew = True
    return found


def end_descendants() -> int:
    """Stop and kill every process below this one, and reap them; how many there were."""
    if not sys.platform.startswith("linux"):
        return 0
    ended: set[int] = set()
    for _ in range(_ROUNDS):
        found = descendants(os.getpid())
        if not found:
            break
        for pid in found:  # stopped first: none forks while the others are killed
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            ended.add(pid)
        _reap()
    return len(ended)


def _reap() -> None:
    """Collect the ended children (orphans made ours by `become` among them)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
