"""The toolchain fingerprint's cache (storage/peruser/toolchain.py): each file's hash
by its path, size, modification and change times, and each answer a program gave by
the modification times of what it watched, in `toolchain-cache.json` in the per-user
data directory. The change time is kept too because the agent's user can set a
modification time back, never a change time."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core import limits
from ralphstate.storage.peruser import home
from ralphstate.storage.system import fsio

CACHE_NAME = "toolchain-cache.json"
# The most files and answers kept; past it the cache starts again.
MAX_CACHE_ENTRIES = 20_000
# The most of a file hashed.
MAX_HASHED_BYTES = 256 * 1024 * 1024


def _mtimes(dirs: Iterable[str]) -> dict[str, list[int]]:
    """Each path's modification and change times: the agent's user can set a
    modification time back (`touch -d`), never a change time."""
    found = {}
    for name in dirs:
        try:
            info = os.stat(name)  # noqa: PTH116 - a Path per name costs more than the stat
            found[name] = [info.st_mtime_ns, info.st_ctime_ns]
        except OSError:
            found[name] = [-1, -1]
    return found


class Cache:
    """Hashes of files by path, size and modification time, and answers by what they
    were asked of; in the per-user data directory, read bounded, kept only when it
    could be read (or there was none)."""

    def __init__(self, path: Path | None, data: dict[str, Any]) -> None:
        self.path = path
        self.files: dict[str, list[Any]] = data.get("files") or {}
        self.answers: dict[str, Any] = data.get("answers") or {}
        self.changed = False

    @classmethod
    def load(cls) -> Cache:
        try:
            path: Path | None = home.data_dir() / CACHE_NAME
        except home.NoHome:
            return cls(None, {})
        assert path is not None
        try:
            raw = fsio.read_regular(path, limits.MAX_USER_FILE_BYTES)
        except FileNotFoundError:
            return cls(path, {})
        except OSError:
            return cls(None, {})
        try:
            data = orjson.loads(raw) if len(raw) <= limits.MAX_USER_FILE_BYTES else None
        except orjson.JSONDecodeError:
            data = None
        return cls(path, data) if isinstance(data, dict) else cls(None, {})

    def hash(self, name: str) -> str:
        """The file's sha256, from the cache while its size, modification and change
        times are the same; "missing" for no file."""
        try:
            info = os.stat(name)  # noqa: PTH116 - the cached path: a stat, nothing more
        except OSError:
            return "missing"
        known = self.files.get(name)
        stamp = [info.st_size, info.st_mtime_ns, info.st_ctime_ns]
        if known and len(known) == 4 and known[:3] == stamp:
            return str(known[3])
        import hashlib

        digest = hashlib.sha256()
        try:
            with fsio.open_regular(Path(name)) as handle:
                left = MAX_HASHED_BYTES
                while left > 0 and (chunk := handle.read(min(left, 1 << 20))):
                    digest.update(chunk)
                    left -= len(chunk)
        except OSError:
            return "unreadable"
        self.files[name] = [*stamp, digest.hexdigest()]
        self.changed = True
        return digest.hexdigest()

    def answer(self, key: str) -> Any:
        """The answer kept for `key`, while the files and directories it watched have
        the same modification times; None otherwise."""
        kept = self.answers.get(key)
        if not isinstance(kept, dict) or not isinstance(kept.get("watched"), dict):
            return None
        return kept.get("answer") if kept["watched"] == _mtimes(kept["watched"]) else None

    def keep(self, key: str, watched: list[str], answer: Any) -> None:
        self.answers[key] = {"watched": _mtimes(watched), "answer": answer}
        self.changed = True

    def save(self) -> None:
        if self.path is None or not self.changed:
            return
        if len(self.files) + len(self.answers) > MAX_CACHE_ENTRIES:
            self.files, self.answers = {}, {}
        data = orjson.dumps({"files": self.files, "answers": self.answers})
        try:
            fsio.makedirs(self.path.parent)
            fsio.atomic_write(self.path, data)
        except OSError:
            pass  # a cache: the next fingerprint hashes again
