"""The files a `ralphstate run` keeps in the loop's directory: the lock one run holds
while it drives the loop (`run.lock`), and the agents' logs (`runs/NNNN.log`), which
stay out of git, are never world-writable and are pruned: the newest `keep` logs stay,
and so do the newest `keep` of the iterations that failed (a `NNNN.log.failed` mark
beside the log says so)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.storage.system import fsio, locking
from ralphstate.storage.system.paths import RUN_LOCK, LoopPaths, check_safe

RUNS_DIR = "runs"
# How many iteration logs a run keeps by default, and as many failed ones besides.
KEEP_LOGS = 50
# Beside the log of an iteration whose agent failed (exited non-zero, timed out).
FAILED_MARK = ".failed"


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


def refuse_a_link(runs: Path, shown: str) -> None:
    """RalphstateError in one sentence when the logs' directory is a link or not a
    directory: the agent may have made it one, to a directory outside the project
    where the runner, unconfined, would write the agent's output and prune files."""
    if runs.is_symlink() or (runs.exists() and not runs.is_dir()):
        raise RalphstateError(
            f"{shown} is a link or not a directory (the agent may have made it so): the"
            " run writes no log through it; remove it and run again."
        )


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


def mark_failed(log: Path) -> None:
    """Mark `log` as the log of a failed iteration, so that pruning keeps it longer;
    a mark that cannot be written only shortens its life."""
    with contextlib.suppress(OSError):
        fsio.atomic_write(log.with_name(log.name + FAILED_MARK), b"")


def _number(name: str) -> tuple[int, int] | None:
    """`0003.log` -> (3, 1), `0003.2.log` -> (3, 2): a log's place in order; None for
    any other file."""
    if not name.endswith(".log"):
        return None
    parts = name[: -len(".log")].split(".")
    if len(parts) > 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1]) if len(parts) == 2 else 1


def prune(runs: Path, keep: int) -> int:
    """Remove the iteration logs of `runs` but the newest `keep` and the newest `keep`
    of the failed ones (with their marks); how many logs went. A file that cannot be
    listed or removed stays, without a word: pruning never ends a run."""
    try:
        names = {entry.name for entry in os.scandir(runs) if entry.is_file()}
    except OSError:
        return 0
    numbered = [(number, name) for name in names if (number := _number(name)) is not None]
    logs = [name for _, name in sorted(numbered, reverse=True)]
    failed = [n for n in logs if n + FAILED_MARK in names]
    kept = set(logs[:keep]) | set(failed[:keep])
    gone = 0
    for name in logs:
        if name in kept:
            continue
        try:
            (runs / name).unlink()
        except OSError:
            continue
        gone += 1
        if name + FAILED_MARK in names:
            with contextlib.suppress(OSError):
                (runs / (name + FAILED_MARK)).unlink()
    for name in names:  # a mark whose log is gone
        if name.endswith(FAILED_MARK) and name[: -len(FAILED_MARK)] not in names:
            with contextlib.suppress(OSError):
                (runs / name).unlink()
    return gone
