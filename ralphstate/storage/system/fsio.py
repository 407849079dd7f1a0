"""Atomic file replacement: temp file beside the target, fsync, then an exchange, a
link or os.replace, checked so that nobody else's save is replaced."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from typing import BinaryIO

FILE_MODE = 0o644
DIR_MODE = 0o755


def atomic_write(
    path: Path,
    data: bytes,
    still_ok: Callable[[], bool] | None = None,
    *,
    expect: bytes | None = None,
    absent: bool = False,
    mode: int = FILE_MODE,
) -> bool:
    """Replace `path` with `data` atomically, the new file with permission bits `mode`.
    With `still_ok`, it is asked just before the replace; when it says no, nothing is
    replaced and False is returned. With `expect`, `path` is replaced only while it
    still holds exactly those bytes (see `_swap_if_holds`); with `absent`, `path` is
    created only while there is none (see `_create_if_absent`); otherwise nothing is
    replaced and False is returned. The temporary file never outlives the call."""
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            ours = os.fstat(handle.fileno()).st_ino
        os.chmod(tmp, mode)
        if still_ok is not None and not still_ok():
            return False
        if absent:
            if not _create_if_absent(tmp, path):
                return False
        elif expect is None:
            _replace(tmp, path)
        elif not _swap_if_holds(tmp, path, expect, data, ours):
            return False
        tmp = ""
        _fsync_dir(path.parent)
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return True


def _swap_if_holds(tmp: str, path: Path, expect: bytes, data: bytes, ours: int) -> bool:
    """Put the file `tmp` (inode `ours`, holding `data`) in place of `path` if `path`
    holds `expect`.

    `path` is checked first. Then, where the platform can exchange two names
    atomically (Linux `renameat2` with RENAME_EXCHANGE, macOS `renamex_np` with
    RENAME_SWAP), the two are exchanged and the file that was displaced, now at `tmp`,
    is checked again: a save another process made in the microseconds between is seen
    there, and the exchange is undone (the save is back in place, untouched) and False
    returned. Elsewhere `os.replace` follows the check, which leaves those microseconds
    open. On True, `tmp` is
    no longer the caller's; on False it is the caller's to remove."""
    if not _holds(str(path), expect):
        return False  # most saves are seen here, before anything moves
    exchange = _exchanger()
    if exchange is not None:
        try:
            exchange(tmp, str(path))
        except FileNotFoundError:
            return False  # `path` is gone: it changed
        except OSError as exc:
            if exc.errno not in _NO_EXCHANGE:
                raise
            # this file system cannot exchange: check, then replace
        else:
            if _holds(tmp, expect):
                with contextlib.suppress(OSError):  # the change is made: a leftover is
                    os.unlink(tmp)  # removed by the next writer (remove_stale_temps)
                return True
            try:
                exchange(tmp, str(path))  # undo: the save that landed goes back in place
            except FileNotFoundError:  # `path` was renamed away meanwhile (a backup):
                # the save goes back only where no newer one was made since.
                _create_if_absent(tmp, path)
                return False
            if _inode(tmp) != ours or not _holds(tmp, data):
                # While ours was in place, another file replaced it or a save was made
                # into it: that is the newest save, so it goes back in place, and the
                # older one is dropped (as that save would have dropped it).
                try:
                    exchange(tmp, str(path))
                except FileNotFoundError:  # renamed away again: back only if none is
                    _create_if_absent(tmp, path)
            return False
    _replace(tmp, path)  # checked just above: the window left is microseconds
    return True


def _create_if_absent(tmp: str, path: Path) -> bool:
    """Put `tmp` at `path` only if nothing is there: a hard link, which the file system
    refuses (FileExistsError) when a file was saved there meanwhile, then `tmp`'s name
    removed. Where hard links are not supported, `path` is looked for just before
    `os.replace`. On True, `tmp` is no longer the caller's."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        if os.path.lexists(path):
            return False
        _replace(tmp, path)  # checked just above: the window left is microseconds
        return True
    with contextlib.suppress(OSError):  # the file is in place: a leftover name is
        os.unlink(tmp)  # removed by the next writer (remove_stale_temps)
    return True


def remove_if_holds(path: Path, expect: bytes) -> bool:
    """Remove `path` if it holds exactly `expect`; True when it was removed.

    The file is first moved aside (one atomic rename, to a temporary name beside it),
    then what was moved is checked: a save another process made after the caller read
    the file is what was moved, and it goes back in place (without replacing a file
    saved there in the meantime, which is newer) and False is returned."""
    if not _holds(str(path), expect):
        return False  # most saves are seen here, before anything moves
    fd, aside = _temp_beside(path)
    os.close(fd)
    try:
        try:
            _replace(str(path), Path(aside))
        except FileNotFoundError:
            return False  # already gone: it changed
        if _holds(aside, expect):
            _fsync_dir(path.parent)
            return True
        if _create_if_absent(aside, path):
            aside = ""
        return False
    finally:
        if aside:
            with contextlib.suppress(OSError):
                os.unlink(aside)


def _holds(name: str, expect: bytes) -> bool:
    try:
        with open_regular(Path(name)) as handle:
            return handle.read(len(expect) + 1) == expect
    except OSError:
        return False


def _inode(name: str) -> int | None:
    try:
        return os.lstat(name).st_ino
    except OSError:
        return None


# errno values that mean "this file system (or kernel) cannot exchange two names";
# EPERM is what a sandbox (seccomp) that forbids the call says. A real permission
# problem is then reported by the plain replace.
_NO_EXCHANGE = frozenset(
    getattr(errno, name)
    for name in ("EINVAL", "ENOSYS", "ENOTSUP", "EOPNOTSUPP", "EPERM")
    if hasattr(errno, name)
)
# errno values that mean "this file system cannot make a hard link here".
_NO_LINK = _NO_EXCHANGE | frozenset(
    getattr(errno, name) for name in ("EXDEV", "EMLINK", "EACCES") if hasattr(errno, name)
)
_exchange_fn: list[Callable[[str, str], None] | None] = []


def _exchanger() -> Callable[[str, str], None] | None:
    """The platform's atomic exchange of two names, or None (looked up once)."""
    if not _exchange_fn:
        _exchange_fn.append(_find_exchanger())
    return _exchange_fn[0]


def _find_exchanger() -> Callable[[str, str], None] | None:
    if sys.platform not in ("linux", "darwin"):
        return None
    try:
        import ctypes  # only a write pays for it, after taking the lock (filelock costs more)

        libc = ctypes.CDLL(None, use_errno=True)
        if sys.platform == "linux":
            native = libc.renameat2  # glibc 2.28, musl 1.2.4
            native.argtypes = [
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_uint,
            ]
        else:
            native = libc.renamex_np  # macOS 10.12
            native.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
        native.restype = ctypes.c_int
    except (ImportError, OSError, AttributeError):
        return None

    def exchange(a: str, b: str) -> None:
        src, dst = os.fsencode(a), os.fsencode(b)
        if sys.platform == "linux":
            done = native(_AT_FDCWD, src, _AT_FDCWD, dst, _RENAME_EXCHANGE)
        else:
            done = native(src, dst, _RENAME_SWAP)
        if done != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), b)

    return exchange


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2  # linux/fs.h
_RENAME_SWAP = 2  # macOS sys/stdio.h


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


def read_regular(path: Path, limit: int) -> bytes:
    """At most `limit` + 1 bytes of a regular file (one more than the bound, so the
    caller can tell it was larger and say so); a FIFO, a device or a directory is
    refused without blocking (NotRegular, "not a regular file")."""
    with open_regular(path) as handle:
        return handle.read(limit + 1)


class NotRegular(OSError):
    """A FIFO, a device or a directory where a regular file belongs."""


def _regular_size(fd: int, path: Path) -> int:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegular(errno.EINVAL, "not a regular file", str(path))
    return info.st_size


def read_tail(handle: BinaryIO, lines: int, max_bytes: int, chunk: int = 64 * 1024) -> bytes:
    """Enough of the end of a file for its last `lines` lines, read backwards in
    chunks, and never more than `max_bytes` of it: a long history costs no more than
    the lines asked for, and a huge line (or a tail with no newline at all) no more
    than the bound. What is returned starts at the start of a line: when the read
    stops short of the file's start, the line it cut into is left out."""
    end = handle.seek(0, os.SEEK_END)
    floor = max(0, end - max_bytes)
    parts: list[bytes] = []
    newlines = 0
    while end > floor and newlines <= lines:
        start = max(floor, end - chunk)
        handle.seek(start)
        part = handle.read(end - start)
        parts.append(part)
        newlines += part.count(b"\n")
        end = start
    data = b"".join(reversed(parts))
    if end > 0:  # stopped short of the start: unless a line starts here, it was cut
        handle.seek(end - 1)
        if handle.read(1) != b"\n":
            data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
    return data


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
