"""The project's `.git/commondir` as it was before an iteration, put back after it.

Inside the sandbox the top of the git directory stays writable (git's lock files, the
index, `HEAD` and `COMMIT_EDITMSG` are written there by the agent's honest commit), so
the agent can write a `commondir` there that points git at a directory of its own,
whose `config` names an fsmonitor or hooks. ralphstate's own git runs none of it, but
the person's would. The runner keeps what the file held before each iteration and,
when the agent changed it, moves the agent's aside (never overwritten: kept as
`commondir.agent-<iteration>`), puts the old one back, and says so.
"""

from __future__ import annotations

from pathlib import Path

NAME = "commondir"
# The most of a `commondir` file read: a path.
MAX_BYTES = 64 * 1024


def where(root: Path) -> Path | None:
    """The `commondir` file of the project's own git directory (`root/.git`), or None
    where `.git` is not a directory."""
    dot = root / ".git"
    return dot / NAME if dot.is_dir() and not dot.is_symlink() else None


def held(path: Path | None) -> bytes | None:
    """What the file holds (None: no file, or not one ralphstate reads: a FIFO or a
    device the agent put there is never waited on)."""
    from ralphstate.storage.system import fsio

    if path is None:
        return None
    try:
        with fsio.open_regular(path) as handle:
            return handle.read(MAX_BYTES)
    except OSError:
        return None


def put_back(path: Path | None, before: bytes | None, iteration: int) -> str | None:
    """One sentence when the agent changed `path` since it held `before` (and it was
    moved aside, the old content written back), else None."""
    if path is None or (held(path) == before and (before is not None or not path.exists())):
        return None
    if not path.exists() and not path.is_symlink():
        return None  # removed: git's own default, nothing of the agent's is read
    aside = path.with_name(f"{NAME}.agent-{iteration}")
    count = 1
    while aside.exists() or aside.is_symlink():
        count += 1
        aside = path.with_name(f"{NAME}.agent-{iteration}.{count}")
    try:
        path.rename(aside)
        if before is not None:
            path.write_bytes(before)
    except OSError as exc:
        return (
            f"the agent wrote {path} (it points git at another directory's configuration)"
            f" and it could not be moved aside ({exc.strerror}): remove it before you run git"
            " in the project."
        )
    return (
        f"the agent wrote {path}, which points git at another directory's configuration;"
        f" it was moved aside to {aside.name} so that your git does not run it."
    )
