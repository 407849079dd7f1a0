"""The files of a repository's last clean room, kept between verifications so that the
next room writes only what differs (docs/explanation/proof.md, "Clean-room
verification").

    stock = roomstock.claim(mine, repo, room_dir)    # None: no files kept, or in use
    roomstock.fill(where, stock, manifest, repo, timeout)
    ...                                              # the checks run in `where`
    roomstock.give_back(where, mine, repo)

The stock is one directory of ralphstate's own private directory (`scratch.own()`) per
repository, named by a hash of its path. A room takes it whole by renaming it (one
room at a time has it; another makes its files anew), moves its entries in, and makes
the room hold exactly its tree's files: a file whose content hashes to its entry's id,
and whose kind and mode are the entry's, stays; any other is removed and written from
the content git's store holds under the id (`git cat-file --batch`, one process for
all of them); a file or directory the tree does not hold is removed. A directory is
made or kept only when it is a real one (never a link), parents first, so nothing is
ever written through a link the stock was given. The files are then checked with
the room's check (`cleanroom._checked`), those written as every room's are, those kept
by the hash that kept them: what the stock held is never trusted, only what hashes to
the tree's ids. When the checks are done, the room's files go back to
the stock, whatever the checks left beside them (removed by the next room).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from pathlib import Path

from ralphstate.storage.repo import roomfiles

# The stock of a repository: PREFIX + a hash of its path, in `scratch.own()`.
PREFIX = "ralphstate-stock-"
# The most bytes of content asked of git at a time.
_BATCH_BYTES = 32 * 1024 * 1024
_LINK, _GITLINK, _EXECUTABLE = "120000", "160000", "100755"


def name(repo: Path | str) -> str:
    """The stock's name for the repository at `repo`."""
    key = hashlib.sha256(os.fsencode(os.path.realpath(repo))).hexdigest()[:24]
    return PREFIX + key


def claim(mine: Path | None, repo: Path | str, room_dir: Path) -> Path | None:
    """The repository's stock, moved into `room_dir`; None when there is none (or
    another room has it, or it is not a real directory of ralphstate's own)."""
    if mine is None:
        return None
    stock = mine / name(repo)
    try:
        if not stat.S_ISDIR(os.lstat(stock).st_mode):
            return None
        taken = room_dir / "stock"
        stock.rename(taken)
    except OSError:
        return None
    return taken


def fill(
    where: Path, stock: Path | None, manifest: roomfiles.Manifest, repo: Path, timeout: float
) -> list[str]:
    """Make `where` hold the files of `manifest` (`.git` aside): the entries of `stock`
    moved in and kept where they are what the manifest says, every other written from
    git's store: the names of those written (the others hash to their ids already).
    OSError when the disk refuses; the caller removes the room."""
    if stock is not None:
        with os.scandir(stock) as found:
            for item in found:
                if item.name != ".git":
                    Path(item.path).rename(where / item.name)
        remove(stock)
    _directories(where, manifest)  # writable first: what is in them can be removed
    for extra in roomfiles.extra(where, manifest):
        remove(where / extra.rstrip("/"))
    wanted: roomfiles.Manifest = {}
    for path_name, entry in manifest.items():
        path = where / path_name
        if entry.mode == _GITLINK:
            _directory(path, fresh=True)
            continue
        if roomfiles.matches(path, entry) and (entry.mode == _LINK or _mode_right(path, entry)):
            continue
        if os.path.lexists(path):
            remove(path)
        wanted[path_name] = entry
    _write(where, wanted, repo, timeout)
    return list(wanted)


def give_back(where: Path, mine: Path | None, repo: Path | str) -> None:
    """The room's files (`.git` aside) into the repository's stock, for the next room;
    nothing when another room gave its own back first. Never raises."""
    if mine is None or not where.is_dir():
        return
    stock = mine / name(repo)
    if os.path.lexists(stock):
        return
    back = where.parent / "back"
    try:
        back.mkdir(mode=0o700)
        with os.scandir(where) as found:
            for item in found:
                if item.name != ".git":
                    Path(item.path).rename(back / item.name)
        back.rename(stock)
    except OSError:
        return


def _directories(where: Path, manifest: roomfiles.Manifest) -> None:
    """Every directory the manifest's files are in, a real one, parents first."""
    needed: set[str] = set()
    for path_name in manifest:
        parts = path_name.split("/")[:-1]
        needed.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    for folder in sorted(needed, key=lambda d: (d.count("/"), d)):
        _directory(where / folder, fresh=False)


def _directory(path: Path, *, fresh: bool) -> None:
    """`path` a real directory of the usual mode (emptied first with `fresh`)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        path.mkdir()
        return
    if not stat.S_ISDIR(found.st_mode) or fresh:
        remove(path)
        path.mkdir()
        return
    wanted = 0o777 & ~_umask()
    if stat.S_IMODE(found.st_mode) != wanted:
        path.chmod(wanted)


def _mode_right(path: Path, entry: roomfiles.Entry) -> bool:
    """The regular file at `path` has the mode a checkout gives it (fixed when not)."""
    wanted = (0o777 if entry.mode == _EXECUTABLE else 0o666) & ~_umask()
    try:
        if stat.S_IMODE(os.lstat(path).st_mode) != wanted:
            path.chmod(wanted)
    except OSError:
        return False
    return True


def _write(where: Path, wanted: roomfiles.Manifest, repo: Path, timeout: float) -> None:
    """Write the files of `wanted` as git's store holds their ids' content, a batch at a
    time; a file git does not give is left out (the room's check says it is missing)."""
    names = sorted(wanted)
    at = 0
    while at < len(names):
        batch: roomfiles.Manifest = {}
        size = 0
        while at < len(names) and (not batch or size < _BATCH_BYTES):
            batch[names[at]] = wanted[names[at]]
            size += wanted[names[at]].size
            at += 1
        largest = max(e.size for e in batch.values())
        found = dict(roomfiles.contents(repo, batch, timeout, largest, links=True))
        for path_name, entry in batch.items():
            data = found.get(entry.blob)
            if data is None:
                continue
            path = where / path_name
            if entry.mode == _LINK:
                path.symlink_to(os.fsdecode(data))
                continue
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            flags |= getattr(os, "O_BINARY", 0)
            handle = os.open(path, flags, 0o777 if entry.mode == _EXECUTABLE else 0o666)
            with os.fdopen(handle, "wb") as out:
                out.write(data)


def remove(path: Path) -> None:
    """Remove the file, link or directory at `path` (never through a link)."""
    try:
        found = os.lstat(path)
    except OSError:
        return
    if stat.S_ISDIR(found.st_mode):
        rmtree(path)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def real_dir(path: Path) -> bool:
    """`path` is a directory itself, not a link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def rmtree(path: Path) -> None:
    """Remove the directory `path` and all in it, read-only directories a check left
    included; never through a link (a link is removed, not what it names), and a mode
    is changed only on a directory under `path` itself."""
    if not real_dir(path):
        return
    shutil.rmtree(path, ignore_errors=True)
    if not path.exists():
        return
    for base, dirs, _ in os.walk(path):  # never into a link
        for name in dirs:
            if real_dir(Path(base) / name):
                with contextlib.suppress(OSError):
                    (Path(base) / name).chmod(0o700)
    with contextlib.suppress(OSError):
        path.chmod(0o700)
    shutil.rmtree(path, ignore_errors=True)


_UMASK: list[int] = []


def _umask() -> int:
    if not _UMASK:
        current = os.umask(0o022)
        os.umask(current)
        _UMASK.append(current)
    return _UMASK[0]
