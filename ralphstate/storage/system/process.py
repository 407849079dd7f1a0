"""Whether a process recorded earlier is still running: its id and its start time as
the system gives it, so an id the system has since handed to another process is not
taken for it. Used by the soft lock (`locking`) and by `ralphstate run` (the agent an
earlier run started)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

_MAX_STAT_BYTES = 4096


def start_time(pid: int) -> str | None:
    """When the process `pid` started, as the system says it (None: not known)."""
    if sys.platform.startswith("linux"):
        try:
            with Path(f"/proc/{pid}/stat").open("rb") as handle:
                stat = handle.read(_MAX_STAT_BYTES)
        except OSError:
            return None
        fields = stat.rpartition(b")")[2].split()
        return fields[19].decode("ascii", "replace") if len(fields) > 19 else None
    if sys.platform == "win32":  # pragma: no cover
        return None
    from ralphstate.storage.system import children  # only where there is no /proc

    try:  # macOS and the BSDs
        done = children.run(
            ["ps", "-o", "lstart=", "-p", str(pid)], timeout=10, limit=_MAX_STAT_BYTES
        )
    except OSError:
        return None
    text = done.out.decode("ascii", "replace").strip()
    return text if done.code == 0 and text else None


def exists(pid: int) -> bool:
    """Some process has the id `pid` (POSIX; False on Windows, where os.kill ends it)."""
    if pid <= 0 or sys.platform == "win32":
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:  # another user's
        return True
    except (OSError, OverflowError):
        return False
    return True


def running(pid: int, started: object) -> bool:
    """The very process recorded (its id, its start time) is running. A record without
    a start time names no process: it cannot be told from another one."""
    if not isinstance(started, str) or pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - os.kill would end it
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or another user's by now
        return False
    except (OSError, OverflowError):
        return False
    return start_time(pid) == started
