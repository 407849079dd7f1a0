"""Atomic file replacement: temp file beside the target, fsync, os.replace."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

FILE_MODE = 0o644
DIR_MODE = 0o755


def atomic_write(path: Path, data: bytes, still_ok: Callable[[], bool] | None = None) -> bool:
    """Replace `path` with `data` atomically. With `still_ok`, it is asked just before
    the replace; when it says no, nothing is replaced and False is returned. The
    temporary file never outlives the call."""
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)
        if still_ok is not None and not still_ok():
            return False
        _replace(tmp, path)
        tmp = ""
        _fsync_dir(path.parent)
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return True


def _temp_beside(path: Path) -> tuple[int, str]:
    """A new private file next to `path`, named `.<stem>.<random>.tmp` (no tempfile
    import: it would pull shutil and the compression modules onto the hook's path)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        name = os.path.join(path.parent, f".{path.stem}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def remove_stale_temps(directory: Path, stem: str) -> None:
    """Delete `.<stem>.*.tmp` files left by a writer that was killed mid-write.
    Call only while holding the lock that every writer of `<stem>` holds."""
    prefix = f".{stem}."
    try:
        entries = [e.name for e in os.scandir(directory)]
    except OSError:
        return
    for name in entries:
        if name.startswith(prefix) and name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


def _replace(src: str, dst: Path) -> None:
    # Windows refuses to replace a file another process has open; retry briefly.
    for attempt in range(10):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if sys.platform != "win32" or attempt == 9:
                raise
            time.sleep(0.05)


def _fsync_dir(directory: Path) -> None:
    if sys.platform == "win32":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_line_bytes(path: Path, data: bytes) -> None:
    """Append bytes with O_APPEND, so concurrent appenders never interleave a line."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
