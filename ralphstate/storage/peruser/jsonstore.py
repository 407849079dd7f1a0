"""The small per-user JSON files that hold one entry per loop: the loop registry
(`registry`) and the trust store (`trust`).

Each file is `{"version": 1, "loops": {LOOP_DIR: ENTRY}}`, keyed by the real path of
a loop directory. Reading takes no lock, reads at most limits.MAX_USER_FILE_BYTES, and
a file that is missing or cannot be used counts as empty. A change happens under
`<file>.lock` (filelock), re-reads the file inside it, and replaces the file
atomically, only while it still holds what was read; a file that cannot be used is
kept beside it (`<file>.<time>.bak`), never overwritten.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core import clock, limits
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.peruser import home
from ralphstate.storage.system import fsio
from ralphstate.storage.system.paths import LoopPaths

VERSION = 1
LOCK_TIMEOUT = 5.0
WRITE_ATTEMPTS = 5
Entry = dict[str, Any]
Entries = dict[str, Entry]


def key(paths: LoopPaths) -> str:
    """The entry's key (`home.loop_key`)."""
    return home.loop_key(paths.dir)


def read(path: Path) -> Entries:
    """Every entry in the file at `path`; an unreadable file reads as empty."""
    try:
        data = read_bytes(path)
    except OSError:
        return {}
    return (None if data is None else entries(data)) or {}


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, at most one more than the bound; None when it is missing."""
    try:
        with fsio.open_regular(path) as handle:
            return handle.read(limits.MAX_USER_FILE_BYTES + 1)
    except FileNotFoundError:
        return None


def entries(data: bytes) -> Entries | None:
    """The entries in a file's bytes; None when they cannot be used."""
    if len(data) > limits.MAX_USER_FILE_BYTES:
        return None
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    loops = raw.get("loops") if isinstance(raw, dict) else None
    if not isinstance(loops, dict):
        return None
    return {k: v for k, v in loops.items() if isinstance(v, dict)}


def _keep_aside(path: Path) -> Path:
    """Move a file that cannot be used to `<name>.<time>.bak` beside it; where it went."""
    stamp = clock.now().strftime("%Y%m%dT%H%M%S")
    kept, n = path.with_name(f"{path.name}.{stamp}.bak"), 1
    while os.path.lexists(kept):
        kept, n = path.with_name(f"{path.name}.{stamp}.{n}.bak"), n + 1
    path.replace(kept)
    return kept


def check_writable(path: Path) -> None:
    """OSError when a file could not be written at `path` (its directory made, a file
    made and removed in it); nothing is left behind."""
    fsio.makedirs(path.parent)
    probe = path.parent / f".{path.name}.probe-{os.urandom(6).hex()}"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, fsio.FILE_MODE)
    os.close(fd)
    probe.unlink()


def change(
    path: Path, name: str, edit: Callable[[Entries], None], aside: list[Path] | None = None
) -> None:
    """Apply `edit` to the entries under the file's lock and write them back.
    RalphstateError, naming the file as `name`, when it cannot be written. A file that
    could not be used and was kept aside is added to `aside` before `edit` runs."""
    from ralphstate.storage.system import locking

    try:
        fsio.makedirs(path.parent)
        with locking.hold(Path(str(path) + ".lock"), LOCK_TIMEOUT):
            for _ in range(WRITE_ATTEMPTS):
                before = read_bytes(path)
                loops = None if before is None else entries(before)
                if before is not None and loops is None:
                    kept = _keep_aside(path)  # a file that cannot be used is kept
                    if aside is not None:
                        aside.append(kept)
                    before = None
                loops = loops or {}
                edit(loops)
                data = orjson.dumps(
                    {"version": VERSION, "loops": loops}, option=orjson.OPT_INDENT_2
                )
                if fsio.atomic_write(path, data + b"\n", expect=before):
                    return
            raise OSError(errno.EAGAIN, "it kept changing")
    except locking.Held:
        raise RalphstateError(
            f"could not write {name} {path}: it is locked by another process"
            f" (gave up after {LOCK_TIMEOUT:g}s)."
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RalphstateError(f"could not write {name} {path}: {reason}.") from None
