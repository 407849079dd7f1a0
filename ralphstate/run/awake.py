"""Keeping the machine awake while `ralphstate run` runs, where the platform offers a
way: `systemd-inhibit` (Linux with systemd), `caffeinate` (macOS), the
SetThreadExecutionState call (Windows). Off with `keep-awake = false` in the run
config. Best effort: without such a way, or when it fails, the run goes on as it is.

The helper process waits for this one (`tail --pid`, `caffeinate -w`), so it ends with
the run even when the run is killed."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from ralphstate.core import limits
from ralphstate.storage.system import children


def command(pid: int) -> list[str] | None:
    """The helper that keeps the machine awake while `pid` lives, or None."""
    if sys.platform == "darwin":
        found = shutil.which("caffeinate")
        return [found, "-i", "-w", str(pid)] if found else None
    inhibit, tail = shutil.which("systemd-inhibit"), shutil.which("tail")
    if inhibit and tail:
        return [
            inhibit,
            "--what=sleep:idle",
            "--who=ralphstate",
            "--why=ralphstate run is driving a loop",
            "--mode=block",
            tail,
            f"--pid={pid}",
            "-f",
            os.devnull,
        ]
    return None


@contextlib.contextmanager
def kept_awake(enabled: bool) -> Iterator[str | None]:
    """While inside, the machine does not sleep; yields how (a program's name, or
    "windows"), or None when it is off or there is no way."""
    if not enabled:
        yield None
        return
    if sys.platform == "win32":  # pragma: no cover - Windows only
        yield from _windows()
        return
    argv = command(os.getpid())
    child = None
    if argv is not None:
        with contextlib.suppress(OSError):
            child = children.start(argv)
    try:
        yield Path(argv[0]).name if child is not None and argv else None
    finally:
        if child is not None:  # the helper and what it runs (`tail`) end together
            children.stop(child, limits.RUN_DRAIN_SECONDS)


def _windows() -> Iterator[str | None]:  # pragma: no cover - Windows only
    import ctypes

    continuous, system_required = 0x80000000, 0x00000001
    try:
        call = ctypes.windll.kernel32.SetThreadExecutionState  # type: ignore[attr-defined,unused-ignore]
        ok = bool(call(continuous | system_required))
    except (AttributeError, OSError):
        ok = False
    try:
        yield "windows" if ok else None
    finally:
        if ok:
            with contextlib.suppress(OSError):
                call(continuous)
