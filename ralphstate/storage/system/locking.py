"""The one lock ralphstate takes on a file: the state's, the registry's, the trust
store's and `ralphstate run`'s, and the one way to ask whether another process holds
it (`held_elsewhere`: `init --force` and `worktree remove` ask it of a run's).

Where the file system has `flock` (every local one), it is filelock's `FileLock`: the
kernel drops the lock with its process, so a lock file left by an earlier process is
empty and free. Some file systems have no `flock`, or refuse it (NFS without its lock
daemon: ENOLCK; some FUSE and SMB mounts: EOPNOTSUPP, ENOSYS). There the lock degrades
to a marker file, `<lock>.soft`, made with `O_EXCL` and holding its owner's process
id, host and start time; a marker whose owner on this host is no longer running (or
an empty one old enough that its writer must have died before writing it) is stale and
taken over. An empty lock file left by an earlier process never counts as held.
(docs/explanation/hardening.md, "Locks without flock")
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ralphstate.storage.system import fsio, process

# What a file system without (working) flock answers.
UNSUPPORTED = frozenset(
    code
    for code in (
        errno.ENOLCK,
        errno.ENOSYS,
        errno.EOPNOTSUPP,
        getattr(errno, "ENOTSUP", errno.EOPNOTSUPP),
    )
)
SOFT_SUFFIX = ".soft"
# A marker still empty after this long belongs to a writer that died creating it.
EMPTY_MARKER_SECONDS = 5.0
_POLL = 0.02
_MAX_MARKER_BYTES = 512
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class Held(Exception):
    """The lock was not had within the timeout: another process holds it."""


@contextlib.contextmanager
def hold(path: Path, timeout: float) -> Iterator[None]:
    """Hold the lock of `path` (a lock file) while the block runs. Held when another
    process keeps it past `timeout` seconds; OSError when it cannot be taken at all."""
    if _flock_works(path):
        import filelock

        lock = filelock.FileLock(str(path), timeout=timeout, mode=fsio.FILE_MODE)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise Held(str(path)) from None
        except OSError as exc:
            if exc.errno not in UNSUPPORTED:
                raise
            _NO_FLOCK.add(str(path))
        else:
            try:
                yield
            finally:
                lock.release()
            return
    with _soft(Path(str(path) + SOFT_SUFFIX), timeout):
        yield


def held_elsewhere(path: Path) -> bool:
    """Whether another process holds the lock of `path` now, told by taking it as `hold`
    does (flock, or the marker file where flock fails) and giving it back at once.
    False when neither the lock file nor its marker is there (none is made); OSError
    when it cannot be told."""
    if not (os.path.lexists(path) or os.path.lexists(str(path) + SOFT_SUFFIX)):
        return False
    try:
        with hold(path, 0):
            return False
    except Held:
        return True


# Lock files whose file system was found to have no flock, in this process.
_NO_FLOCK: set[str] = set()


def _flock_works(path: Path) -> bool:
    """Whether flock works on the file system of `path` (always, where there is no
    fcntl: filelock locks Windows files another way)."""
    if str(path) in _NO_FLOCK:
        return False
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return True
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW, fsio.FILE_MODE)
    except OSError:
        return True  # let filelock meet the same error and say it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in UNSUPPORTED:
            _NO_FLOCK.add(str(path))
            return False
        return True  # held by another process: flock works
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


# -- the soft lock -----------------------------------------------------------------------


@contextlib.contextmanager
def _soft(marker: Path, timeout: float) -> Iterator[None]:
    mine = _take(marker, timeout)
    try:
        yield
    finally:
        _give_back(marker, mine)


def _take(marker: Path, timeout: float) -> tuple[int, int]:
    import socket

    pid = os.getpid()
    text = f"{pid}\n{socket.gethostname()}\n{process.start_time(pid) or ''}\n".encode()
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, fsio.FILE_MODE)
        except FileExistsError:
            if _break_if_stale(marker):
                continue
            if time.monotonic() >= deadline:
                raise Held(str(marker)) from None
            time.sleep(_POLL)
            continue
        try:
            os.write(fd, text)
            info = os.fstat(fd)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                marker.unlink()
            raise
        os.close(fd)
        return info.st_dev, info.st_ino


def _give_back(marker: Path, mine: tuple[int, int]) -> None:
    with contextlib.suppress(OSError):
        info = marker.lstat()
        if (info.st_dev, info.st_ino) == mine:  # never someone else's, taken over
            marker.unlink()


def _break_if_stale(marker: Path) -> bool:
    """Remove the marker when its owner is gone; True when it was removed."""
    import socket

    try:
        fd = os.open(marker, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    except FileNotFoundError:
        return True  # released meanwhile: try again at once
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        data = os.read(fd, _MAX_MARKER_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    lines = data.decode("utf-8", "replace").split("\n")
    if len(lines) >= 3 and lines[0].isdigit():
        if lines[1] != socket.gethostname():
            return False  # another machine's: this one cannot tell whether it lives
        pid, started = int(lines[0]), lines[2]
        # Without a start time (the system would not say), a process with its id counts.
        if process.running(pid, started) if started else process.exists(pid):
            return False
    elif time.time() - info.st_mtime < EMPTY_MARKER_SECONDS:
        return False  # being written
    return _remove_exactly(marker, (info.st_dev, info.st_ino))


def _remove_exactly(marker: Path, stale: tuple[int, int]) -> bool:
    """Remove the marker judged stale, and not another one made since: it is moved
    aside first, and put back when it turns out to be a new one."""
    aside = marker.with_name(f"{marker.name}.stale.{os.getpid()}.{os.urandom(6).hex()}")
    try:
        marker.rename(aside)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        info = aside.lstat()
        if (info.st_dev, info.st_ino) != stale:
            with contextlib.suppress(OSError):
                os.link(aside, marker)  # put it back, unless yet another one is there
            return False
        return True
    finally:
        with contextlib.suppress(OSError):
            aside.unlink()
