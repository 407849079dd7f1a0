"""The small per-user JSON files that hold one entry per loop: the loop registry
(`registry`) and the trust store (`trust`).

Each file is `{"version": 1, "loops": {LOOP_DIR: ENTRY}}`, keyed by the real path of
a loop directory. Reading takes no lock, and a file that is missing or cannot be
read counts as empty. A change happens under `<file>.lock` (filelock), re-reads the
file inside it, and replaces the file atomically.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core.errors import RalphstateError
from ralphstate.storage import fsio
from ralphstate.storage.paths import LoopPaths

VERSION = 1
LOCK_TIMEOUT = 5.0
Entry = dict[str, Any]
Entries = dict[str, Entry]


def key(paths: LoopPaths) -> str:
    """The entry's key: the loop directory's real path."""
    return os.path.realpath(paths.dir)


def read(path: Path) -> Entries:
    """Every entry in the file at `path`; an unreadable file reads as empty."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    loops = data.get("loops") if isinstance(data, dict) else None
    if not isinstance(loops, dict):
        return {}
    return {k: v for k, v in loops.items() if isinstance(v, dict)}


def change(path: Path, name: str, edit: Callable[[Entries], None]) -> None:
    """Apply `edit` to the entries under the file's lock and write them back.
    RalphstateError, naming the file as `name`, when it cannot be written."""
    import filelock

    try:
        fsio.makedirs(path.parent)
        with filelock.FileLock(str(path) + ".lock", timeout=LOCK_TIMEOUT, mode=fsio.FILE_MODE):
            loops = read(path)
            edit(loops)
            data = orjson.dumps({"version": VERSION, "loops": loops}, option=orjson.OPT_INDENT_2)
            fsio.atomic_write(path, data + b"\n")
    except (OSError, filelock.Timeout) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise RalphstateError(f"could not write {name} {path}: {reason}.") from None
