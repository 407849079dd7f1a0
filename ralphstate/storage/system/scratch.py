"""Where a snapshot of the work tree (`storage/repo/git.py`) keeps what it writes, so that the
project's `.git` stays as it was (docs/how-to/checks.md, "Evidence tied to code").

    with scratch.store() as where:              # a temporary directory, removed after
        env = git_env(GIT_INDEX_FILE=..., **scratch.objects_env(where, real_objects))
        ...                                     # git add, write-tree: objects land there

A store is a directory named PREFIX + pid + ... in `parent()`, a private directory of
the user's own in the system's temporary directory (or that directory itself, where a
private one cannot be had): a temporary index and an object directory git writes into
(`GIT_OBJECT_DIRECTORY`), with the repository's own objects as an alternate
(`GIT_ALTERNATE_OBJECT_DIRECTORIES`), so what is already committed is found there and
never written twice. It is removed when the snapshot ends, however it ends (a git
command past its time limit included, whatever that command had begun to write); a
store whose process was killed before it could remove it is removed by the next
snapshot.

The untracked files of the work tree that are larger than a limit (`ralphstate.
bigFileThreshold` in git's configuration, `limits.SNAPSHOT_BIG_FILE_BYTES` without
it) are not read at all: each is a `summary` of its size, times and inode, a few bytes
whose id stands for the file in the tree. The same file gives the same summary, and
any write to it gives another one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ralphstate.core import limits
from ralphstate.storage.system import process

PREFIX = "ralphstate-snapshot-"
# The user's own directory of stores in the system's temporary directory: this + uid.
PARENT = "ralphstate-snapshots-"
# The git configuration key of the size past which an untracked file is summarised.
THRESHOLD_KEY = "ralphstate.bigfilethreshold"
# What a snapshot asks git's configuration (`git config --get-regexp`): that limit, and
# the object format the summaries' ids are in.
CONFIG_KEYS = r"^(ralphstate\.bigfilethreshold|extensions\.objectformat)$"
_SIZE = re.compile(r"\s*(\d+)\s*([kmg]?)\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


@contextlib.contextmanager
def store() -> Iterator[Path]:
    """A new scratch store (its `objects` directory made), removed on the way out."""
    where = parent()
    clear_leftovers(where)
    made = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=where))
    try:
        for name in ("info", "pack"):
            (made / "objects" / name).mkdir(parents=True)
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def objects_env(where: Path, real: Path) -> dict[str, str]:
    """The variables that make git write objects into the store `where` and read them
    from it and from `real` (the repository's object directory), and from whatever
    alternates the caller's environment already named. What git writes there is not
    compressed (`core.looseCompression`, `pack.compression` 0, the first of git's
    `GIT_CONFIG_COUNT` pairs: the caller's own are never passed on, `storage/repo/gitenv.py`
    `git_env`): it is read once at most and removed, and compressing a file costs git
    ten times what hashing it does."""
    found = [_quoted(str(real))]
    before = os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES")
    if before:
        found.append(before)
    env = {
        "GIT_OBJECT_DIRECTORY": str(where / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.pathsep.join(found),
    }
    for number, key in enumerate(("core.looseCompression", "pack.compression")):
        env[f"GIT_CONFIG_KEY_{number}"], env[f"GIT_CONFIG_VALUE_{number}"] = key, "0"
    env["GIT_CONFIG_COUNT"] = "2"
    return env


def _quoted(path: str) -> str:
    """`path` as one entry of git's list of alternates: quoted (C style) when it holds
    the separator or starts with a quote, as git reads such an entry."""
    if os.pathsep not in path and not path.startswith('"'):
        return path
    escaped = path.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def parent() -> Path:
    """Where the stores are made: the user's own directory in the system's temporary
    directory, made private (0700) the first time, so that finding a killed process's
    store lists a few entries, not the whole temporary directory; that directory itself
    when the private one cannot be had (no user ids, or the name taken by a file, a
    link or a directory that is not the user's own and private)."""
    base = Path(tempfile.gettempdir())
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # pragma: no cover - Windows: the temporary directory is the user's
        return base
    mine = base / f"{PARENT}{getuid()}"
    with contextlib.suppress(FileExistsError, OSError):
        mine.mkdir(mode=0o700)
    try:
        found = os.lstat(mine)
    except OSError:
        return base
    private = stat.S_ISDIR(found.st_mode) and not found.st_mode & 0o077
    return mine if private and found.st_uid == getuid() else base


def own() -> Path | None:
    """`parent()` when it is the user's own private directory (or on Windows, where the
    temporary directory is the user's): where clean rooms and their records are kept
    (`storage/repo/cleanroom.py`). None when there is none: then no room is ever taken
    for a leftover and removed."""
    where = parent()
    if getattr(os, "getuid", None) is None:  # pragma: no cover - Windows
        return where
    return where if where.name.startswith(PARENT) else None


def clear_leftovers(base: Path | None = None) -> list[Path]:
    """Remove the stores in `base` (`parent()`) whose process is gone (killed before it
    could remove its own); the stores removed. A store of a process that runs, or of
    another user's, is left alone."""
    base = base or parent()
    gone = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        pid_text = entry.name[len(PREFIX) :].partition("-")[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        if not process.exists(int(pid_text)):
            shutil.rmtree(entry.path, ignore_errors=True)
            gone.append(Path(entry.path))
    return gone


# -- untracked files past the limit ---------------------------------------------------


def threshold(config: str) -> int:
    """The limit `git config -z --get-regexp` said (`config`, its whole answer), in
    bytes: git's sizes (`512k`, `10m`, `1g`); the default when it is not set or is not
    a size."""
    for item in config.split("\0"):
        key, _, value = item.partition("\n")
        if key.lower() == THRESHOLD_KEY:
            found = _SIZE.fullmatch(value)
            if found:
                return int(found.group(1)) * _UNITS[found.group(2).lower()]
    return limits.SNAPSHOT_BIG_FILE_BYTES


def object_format(config: str) -> str:
    """The repository's object format (`extensions.objectformat`): sha1 or sha256."""
    for item in config.split("\0"):
        key, _, value = item.partition("\n")
        if key.lower() == "extensions.objectformat" and value.strip().lower() == "sha256":
            return "sha256"
    return "sha1"


def split(top: Path, names: list[str], limit: int) -> tuple[list[str], list[tuple[str, str]]]:
    """The untracked files `names` (from the top of the work tree `top`, as `git ls-files
    --others` gives them) in two: those git reads, and those larger than `limit` bytes,
    each with its summary. A directory (a repository inside the work tree) is read as
    git reads it, and so is a symbolic link (git reads where it points, not the file
    there); a file gone since it was listed is left to git, which leaves it out."""
    read: list[str] = []
    summarised: list[tuple[str, str]] = []
    for name in names:
        if name.endswith("/"):
            read.append(name.rstrip("/"))
            continue
        try:
            found = os.lstat(top / name)
        except OSError:
            read.append(name)
            continue
        if found.st_size > limit and stat.S_ISREG(found.st_mode):
            summarised.append((name, summary(found)))
        else:
            read.append(name)
    return read, summarised


def summary(found: os.stat_result) -> str:
    """What stands for a file that is not read: its size, the times it was last
    modified and changed (nanoseconds), and its inode."""
    return (
        f"ralphstate: an untracked file of {found.st_size} bytes, not read\n"
        f"mtime {found.st_mtime_ns}\nctime {found.st_ctime_ns}\ninode {found.st_ino}\n"
    )


def index_info(summarised: list[tuple[str, str]], fmt: str) -> bytes:
    """The lines of `git update-index -z --index-info` that put each summary in the
    index as a regular file, under the id git would give its text (the text itself
    is not written: nothing reads it, `write-tree --missing-ok` names the tree)."""
    import hashlib

    lines = []
    for name, text in summarised:
        data = text.encode()
        digest = hashlib.new(fmt, b"blob %d\0" % len(data) + data).hexdigest()
        lines.append(f"100644 {digest}\t".encode() + os.fsencode(name) + b"\0")
    return b"".join(lines)
