"""Where a loop lives: finding `.loop/` and refusing paths that leave the project."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ralphstate.errors import RalphstateError

LOOP_DIR_NAME = ".loop"
STATE_NAME = "state.json"
HISTORY_NAME = "history.jsonl"
LOCK_NAME = "state.lock"
ENV_DIR = "RALPHSTATE_DIR"


@dataclass(frozen=True)
class LoopPaths:
    """The project root and the loop directory inside it."""

    root: Path
    dir: Path

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


def _from_env() -> LoopPaths | None:
    value = os.environ.get(ENV_DIR)
    if not value:
        return None
    loop_dir = Path(value).expanduser().absolute()
    return LoopPaths(root=loop_dir.parent, dir=loop_dir)


def find(start: Path) -> LoopPaths | None:
    """The nearest loop at or above `start` (like git finds `.git`), or None."""
    env = _from_env()
    if env is not None:
        return env
    here = Path(os.path.abspath(start))
    for candidate in (here, *here.parents):
        if os.path.isdir(os.path.join(candidate, LOOP_DIR_NAME)):
            return LoopPaths(root=candidate, dir=candidate / LOOP_DIR_NAME)
    return None


def for_init(start: Path) -> LoopPaths:
    """Where `init` creates a loop: `$RALPHSTATE_DIR`, or `.loop/` in `start` itself."""
    env = _from_env()
    if env is not None:
        return env
    here = Path(os.path.abspath(start))
    return LoopPaths(root=here, dir=here / LOOP_DIR_NAME)


def _inside(path: Path, root_real: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def check_safe(paths: LoopPaths) -> None:
    """Refuse a `.loop/` or a file in it that is a symlink leading out of the project."""
    root_real = os.path.realpath(paths.root)
    for path in (paths.dir, paths.state, paths.history, paths.lock):
        if os.path.lexists(path) and not _inside(path, root_real):
            raise RalphstateError(
                f"{paths.display(path)} leads outside the project ({os.path.realpath(path)});"
                " ralphstate refuses to follow it."
            )
