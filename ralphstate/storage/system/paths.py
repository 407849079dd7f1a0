"""Where a loop lives: finding `.loop/` and refusing paths that leave the project.

`find_dir` uses only `os.path`, so the Stop hook can learn that there is no loop
without importing anything else.
"""

from __future__ import annotations

import os

from ralphstate.core.errors import RalphstateError

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from pathlib import Path

LOOP_DIR_NAME = ".loop"
STATE_NAME = "state.json"
HISTORY_NAME = "history.jsonl"
LOCK_NAME = "state.lock"
# Held by the `ralphstate run` that drives the loop (run/runfiles.py).
RUN_LOCK = "run.lock"
ENV_DIR = "RALPHSTATE_DIR"


class LoopPaths:
    """The project root and the loop directory inside it."""

    __slots__ = ("dir", "root")

    def __init__(self, root: str | os.PathLike[str], loop_dir: str | os.PathLike[str]) -> None:
        from pathlib import Path

        self.root = Path(root)
        self.dir = Path(loop_dir)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LoopPaths) and (self.root, self.dir) == (other.root, other.dir)

    def __hash__(self) -> int:
        return hash((self.root, self.dir))

    def __repr__(self) -> str:
        return f"LoopPaths(root={str(self.root)!r}, dir={str(self.dir)!r})"

    @property
    def state(self) -> Path:
        return self.dir / STATE_NAME

    @property
    def history(self) -> Path:
        return self.dir / HISTORY_NAME

    @property
    def lock(self) -> Path:
        return self.dir / LOCK_NAME

    def display(self, path: Path) -> str:
        """A path relative to the project root when it is inside it."""
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)


def find_dir(start: str | os.PathLike[str]) -> str | None:
    """The nearest loop directory at or above `start`, `$RALPHSTATE_DIR` first."""
    env = os.environ.get(ENV_DIR)
    if env:
        return os.path.abspath(os.path.expanduser(env))
    here = os.path.abspath(start)
    while True:
        candidate = os.path.join(here, LOOP_DIR_NAME)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


# Traces of the loops this user started or took here (`leave_trace`): an empty file per
# loop directory, in the per-user state directory, found without importing anything
# (no platformdirs, no hashlib), so the Stop hook that finds no loop can tell, by one
# `stat`, whether one was here and may have been deleted (hooks/entry.py).
ENV_HOME = "RALPHSTATE_HOME"  # storage/peruser/home.py's
TRACES = "traces"


def traces_dir() -> str | None:
    """Where the traces are: `$RALPHSTATE_HOME/state/traces`, else the state directory
    platformdirs names on Linux (`$XDG_STATE_HOME` or `~/.local/state`, then
    `ralphstate/traces`), used on every platform (Windows: `%LOCALAPPDATA%`); None with
    no home."""
    override = os.environ.get(ENV_HOME)
    if override:
        return os.path.join(os.path.expanduser(override), "state", TRACES)
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA")
    else:
        base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    if not base or not os.path.isabs(base):
        return None
    return os.path.join(base, "ralphstate", TRACES)


def trace_path(loop_dir: str | os.PathLike[str]) -> str | None:
    """The trace of the loop directory `loop_dir`: named by a 64-bit FNV-1a hash of its
    parent's real path and its name, computed here rather than imported (hashlib and
    zlib cost the Stop hook more than the hash); a clash costs one more look, nothing
    else."""
    where = traces_dir()
    if where is None:
        return None
    loop_dir = os.fspath(loop_dir)
    key = os.path.join(os.path.realpath(os.path.dirname(loop_dir)), os.path.basename(loop_dir))
    digest = 0xCBF29CE484222325
    for byte in key.encode("utf-8", "surrogateescape"):
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return os.path.join(where, f"{digest:016x}")


def traced(loop_dir: str | os.PathLike[str]) -> bool:
    """Whether a loop was started or taken at `loop_dir` (its trace is there)."""
    path = trace_path(loop_dir)
    return path is not None and os.path.isfile(path)


def leave_trace(loop_dir: str | os.PathLike[str]) -> None:
    """Leave the trace of the loop at `loop_dir`; nothing when it cannot be written."""
    path = trace_path(loop_dir)
    if path is None or os.path.isfile(path):
        return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        pass


def drop_trace(loop_dir: str | os.PathLike[str]) -> None:
    """Forget the trace of the loop at `loop_dir` (nothing left to tell there)."""
    path = trace_path(loop_dir)
    if path is not None:
        try:  # noqa: SIM105 - no contextlib on the hook's path (design.md, "The hot path")
            os.unlink(path)
        except OSError:
            pass


def passed_over(start: str | os.PathLike[str], loop_dir: str) -> list[str]:
    """The loop directories `find_dir` looked for between `start` and `loop_dir`, the
    one it found above it, nearest first: where a deleted loop would be hidden by an
    outer one (hooks/entry.py). None with `$RALPHSTATE_DIR`, or when the loop is
    `start`'s own."""
    if os.environ.get(ENV_DIR):
        return []
    here, top = os.path.abspath(start), os.path.dirname(loop_dir)
    found: list[str] = []
    while here != top and within(here, top):
        found.append(os.path.join(here, LOOP_DIR_NAME))
        here = os.path.dirname(here)
    return found


def find(start: str | os.PathLike[str]) -> LoopPaths | None:
    """The nearest loop at or above `start` (like git finds `.git`), or None."""
    loop_dir = find_dir(start)
    return None if loop_dir is None else at(loop_dir)


def at(loop_dir: str) -> LoopPaths:
    """The loop whose directory `find_dir` found: its project is the directory above."""
    return LoopPaths(os.path.dirname(loop_dir), loop_dir)


def git_top(start: str | os.PathLike[str]) -> str | None:
    """The top of the git work tree holding `start`: the nearest directory at or above
    it with a `.git` (a directory, or the file of a worktree or submodule); None outside
    git. Found without running git, which may not be installed."""
    here = os.path.abspath(start)
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def within(path: str | os.PathLike[str], directory: str | os.PathLike[str]) -> bool:
    """`path` is `directory` or below it (both made absolute, not resolved)."""
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def for_init(start: str | os.PathLike[str]) -> LoopPaths:
    """Where `init` creates a loop: `$RALPHSTATE_DIR`, or `.loop/` in `start` itself."""
    env = os.environ.get(ENV_DIR)
    if env:
        loop_dir = os.path.abspath(os.path.expanduser(env))
        return LoopPaths(os.path.dirname(loop_dir), loop_dir)
    here = os.path.abspath(start)
    return LoopPaths(here, os.path.join(here, LOOP_DIR_NAME))


def _inside(path: str | os.PathLike[str], root_real: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def check_safe(paths: LoopPaths, *more: Path) -> None:
    """Refuse a `.loop/` or a file in it (or any of `more`) that is a symlink leading
    out of the project."""
    root_real = os.path.realpath(paths.root)
    for path in (paths.dir, paths.state, paths.history, paths.lock, *more):
        if os.path.lexists(path) and not _inside(path, root_real):
            raise RalphstateError(
                f"{paths.display(path)} leads outside the project ({os.path.realpath(path)});"
                " ralphstate refuses to follow it."
            )
