"""Atomic file replacement: temp file beside the target, fsync, os.replace."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

TYPE_CHECKING = False  # `typing` is not imported at run time: docs/design.md, "The hot path"
if TYPE_CHECKING:
    from typing import BinaryIO

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
    """Make the replace durable where the platform can. Best effort: it runs after the
    replace, so a file system that cannot fsync a directory (EINVAL on some network and
    FUSE mounts) or a directory that cannot be opened must not report a change that
    was made as failed."""
    if sys.platform == "win32":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def append_line_bytes(path: Path, data: bytes) -> None:
    """Append whole lines with O_APPEND, so concurrent appenders never interleave a line.

    Only a regular file is written (a FIFO or a device is refused, without blocking).
    A file that does not end in a newline, because an earlier append was cut short by
    a full disk, gets one first, so the torn line never swallows the next one."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), FILE_MODE)
    try:
        size = _regular_size(fd, path)
        if size:
            os.lseek(fd, size - 1, os.SEEK_SET)
            if os.read(fd, 1) != b"\n":
                data = b"\n" + data
        view = memoryview(data)
        while view:  # a short write (a full disk) goes on until it fails outright
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def open_regular(path: Path) -> BinaryIO:
    """Open a file to read, refusing (without blocking) anything but a regular file."""
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        _regular_size(fd, path)
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


class NotRegular(OSError):
    """A FIFO, a device or a directory where a regular file belongs."""


def _regular_size(fd: int, path: Path) -> int:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegular(errno.EINVAL, "not a regular file", str(path))
    return info.st_size


def read_tail(handle: BinaryIO, lines: int, chunk: int = 64 * 1024) -> bytes:
    """Enough of the end of a file for its last `lines` lines, read backwards in
    chunks, so a long history costs no more than the lines asked for."""
    end = handle.seek(0, os.SEEK_END)
    parts: list[bytes] = []
    newlines = 0
    while end > 0 and newlines <= lines:
        start = max(0, end - chunk)
        handle.seek(start)
        part = handle.read(end - start)
        parts.append(part)
        newlines += part.count(b"\n")
        end = start
    return b"".join(reversed(parts))


def makedirs(path: Path) -> None:
    """Create `path` and any missing parents, each with DIR_MODE (os.makedirs gives the
    parents the umask's default, which a umask of 0 leaves world-writable)."""
    missing = []
    here = Path(path)
    while not here.is_dir():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
