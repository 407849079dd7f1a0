"""The files a `ralphstate run` keeps in the loop's directory: the lock one run holds
while it drives the loop (`run.lock`), and the agents' logs (`runs/NNNN.log`), which
stay out of git and are never world-writable."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.storage import fsio, locking
from ralphstate.storage.paths import RUN_LOCK, LoopPaths, check_safe

RUNS_DIR = "runs"


def prepare(paths: LoopPaths) -> Path:
    """The runs directory, made when missing, with a .gitignore that keeps the logs out
    of git (the agent commits its work; its logs stay out)."""
    runs = paths.dir / RUNS_DIR
    check_safe(paths, runs)
    try:
        fsio.makedirs(runs)  # never world-writable, whatever the umask
        ignore = runs / ".gitignore"
        if not ignore.exists():
            fsio.atomic_write(
                ignore, b"# Written by ralphstate run: agent logs stay out of git.\n*\n"
            )
    except OSError as exc:
        raise RalphstateError(f"could not create {paths.display(runs)}: {exc}.") from None
    from ralphstate.loop.gitignore import ignore_local_files

    ignore_local_files(paths)  # a .gitignore from before run.lock was listed
    return runs


@contextlib.contextmanager
def lock(paths: LoopPaths) -> Iterator[None]:
    """Hold `run.lock` for the run; RalphstateError when another run holds it."""
    held = locking.hold(paths.dir / RUN_LOCK, 0)
    try:
        held.__enter__()
    except locking.Held:
        raise RalphstateError(
            "another `ralphstate run` is already driving this loop"
            f" ({paths.display(paths.dir / RUN_LOCK)} is held)."
        ) from None
    except OSError as exc:
        raise RalphstateError(
            f"could not lock {paths.display(paths.dir / RUN_LOCK)}: {exc}."
        ) from None
    try:
        yield
    finally:
        held.__exit__(None, None, None)


def log_path(runs: Path, number: int) -> Path:
    """`NNNN.log`, or `NNNN.2.log` when an earlier loop left one by that name."""
    path = runs / f"{number:04d}.log"
    n = 1
    while path.exists():
        n += 1
        path = runs / f"{number:04d}.{n}.log"
    return path


def private_opener(path: str, flags: int) -> int:
    """Create a log with at most `fsio.FILE_MODE` (open's default, 0666, would leave it
    world-writable under a umask of 0)."""
    return os.open(path, flags, fsio.FILE_MODE)
