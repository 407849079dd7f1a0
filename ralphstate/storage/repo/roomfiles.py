"""What a clean room holds (docs/explanation/proof.md, "Clean-room verification"): the
list of the files ralphstate put there, each with the id of its content, and the files
of a room that differ from that list.

    manifest = roomfiles.listing(top, tree, timeout)     # what the tree holds
    roomfiles.differences(top, manifest)                  # [] when the room holds it

A room is checked against the tree it was made from before its checks run: a file
there that the tree does not hold, or whose content is not what the tree's id for it
says, is something ralphstate did not put there (a program the project's git started,
a process the agent left running, an object of the repository rewritten under its old
id). Each file is hashed as git hashes a blob, read up to the size the tree gives it
and one byte more. A file that differs only by what git's own conversions do on
checkout (line endings, `ident`) is asked of git (`git hash-object --path`, which
starts no program: `storage/repo/gitenv.py`), at most `_ASKED` of them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ralphstate.core import limits
from ralphstate.storage.repo.git import run_git

# A file of a tree: a regular file (executable or not), a link, a submodule's commit.
_LINK, _GITLINK, _EXECUTABLE = "120000", "160000", "100755"
# The most files whose content is asked of git when it differs from the id by hashing.
_ASKED = 20
# The most of git's listing of a room's files read (a tree's entries, about 100 bytes a
# file): past it, the room cannot be checked, and is not used.
_LISTING_BYTES = 64 * 1024 * 1024
# The most names a problem lists.
NAMED = 5


@dataclass(frozen=True)
class Entry:
    """One file of a tree: its mode, the id of its content and its size in bytes."""

    mode: str
    blob: str
    size: int


Manifest = dict[str, Entry]
# ralphstate's own copy of a blob's content, by its id (None: it has none).
Copies = Callable[[str], "bytes | None"]


def listing(top: Path, tree: str, timeout: float) -> Manifest | None:
    """Every file of `tree`, by its path from the top of the work tree; None when git
    cannot say."""
    args = ["ls-tree", "-r", "-z", "-l", "--full-tree", tree]
    done = run_git(args, top, timeout=timeout, limit=_LISTING_BYTES)
    if done is None or not done.ok or len(done.out_bytes) >= _LISTING_BYTES:
        return None
    found: Manifest = {}
    for item in done.out_bytes.split(b"\0"):
        if not item:
            continue
        head, _, name = item.partition(b"\t")
        parts = head.decode("ascii", "replace").split()
        if len(parts) != 4:
            return None
        mode, _kind, blob, size = parts
        found[os.fsdecode(name)] = Entry(mode, blob, int(size) if size.isdigit() else 0)
    return found


def differences(
    top: Path,
    manifest: Manifest,
    *,
    others: bool = True,
    copies: Copies | None = None,
    mended: list[str] | None = None,
) -> list[str]:
    """The files of the room `top` that are not as `manifest` says, each as "NAME
    (changed)", "NAME (missing)" or, with `others`, "NAME (not put there)"; [] when
    the room holds exactly what it lists (empty directories aside).

    A file whose object in the repository's store does not match its id is written
    again from `copies` (ralphstate's own copy of that content, by id) when it has
    one, and named in `mended` instead of in the answer."""
    found: list[str] = []
    unsure: list[tuple[str, Entry]] = []
    for name, entry in manifest.items():
        if entry.mode == _GITLINK:
            continue
        said = _matches(top / name, entry)
        if said is None:
            found.append(f"{name} (missing)")
        elif not said:
            unsure.append((name, entry))
    for name, entry in unsure[:_ASKED]:
        if _git_agrees(top, name, entry):
            continue
        if _sound(top, entry):
            found.append(f"{name} (changed)")
        elif _mend(top / name, entry, copies, manifest, name):
            (mended if mended is not None else []).append(
                f"{name} (its object {entry.blob[:12]} in the repository's store does not"
                " match its id: rewritten under it; the room holds ralphstate's own copy"
                " of the approved content)"
            )
        else:
            found.append(
                f"{name} (its object {entry.blob[:12]} in the repository's store does not"
                " match its id: rewritten under it)"
            )
    found += [f"{name} (changed)" for name, _ in unsure[_ASKED:]]
    if others:
        found += [f"{name} (not put there)" for name in extra(top, manifest)]
    return sorted(found)


def matches(path: Path, entry: Entry) -> bool:
    """The file at `path` is the kind of file `entry` is, and hashes to its id."""
    return _matches(path, entry) is True


def _matches(path: Path, entry: Entry) -> bool | None:
    """Whether the file at `path` hashes to `entry`'s id; None when it is not there (or
    is not the kind of file the entry is)."""
    try:
        found = os.lstat(path)
        if entry.mode == _LINK:
            if not stat.S_ISLNK(found.st_mode):
                return None
            data = os.fsencode(str(path.readlink()))
        elif not stat.S_ISREG(found.st_mode):
            return None
        else:
            with path.open("rb") as handle:  # bounded: its size, and one byte more
                data = handle.read(entry.size + 1)
    except OSError:
        return None
    return _blob_id(data, entry.blob) == entry.blob


def _mend(path: Path, entry: Entry, copies: Copies | None, manifest: Manifest, name: str) -> bool:
    """Write the file at `path` again with ralphstate's own copy of `entry`'s content
    (a regular file only), and see it hash to the id: whether it does now. The size
    git gave (its store's, of the rewritten object) becomes the copy's in `manifest`."""
    data = copies(entry.blob) if copies is not None and entry.mode != _LINK else None
    if data is None or _blob_id(data, entry.blob) != entry.blob:
        return False
    entry = manifest[name] = Entry(entry.mode, entry.blob, len(data))
    try:
        path.unlink()
        with path.open("xb") as handle:
            handle.write(data)
        if entry.mode == _EXECUTABLE:
            path.chmod(0o755)
    except OSError:
        return False
    return _matches(path, entry) is True


def contents(
    top: Path, manifest: Manifest, timeout: float, largest: int, *, links: bool = False
) -> Iterator[tuple[str, bytes]]:
    """Each regular file (and with `links`, link) of `manifest` (a tree's `listing`) of
    at most `largest` bytes, as its id and the content git's store holds under it (which
    the caller hashes: git does not)."""
    skipped = (_GITLINK,) if links else (_LINK, _GITLINK)
    ids = sorted({e.blob for e in manifest.values() if e.mode not in skipped and e.size <= largest})
    if not ids:
        return
    known = set(ids)
    total = sum(e.size for e in manifest.values() if e.blob in known) + 200 * len(ids)
    asked = ("\n".join(ids) + "\n").encode()
    done = run_git(["cat-file", "--batch"], top, timeout=timeout, input=asked, limit=total + 1)
    if done is None or not done.ok:
        return
    out, at = done.out_bytes, 0
    while at < len(out):
        end = out.find(b"\n", at)
        head = out[at:end].split() if end >= 0 else []
        if len(head) != 3 or not head[2].isdigit():
            return
        size = int(head[2])
        yield head[0].decode("ascii", "replace"), out[end + 1 : end + 1 + size]
        at = end + 1 + size + 1


def _blob_id(data: bytes, like: str) -> str:
    """The id git gives `data` as a blob, in the object format of the id `like`."""
    digest = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def _git_agrees(top: Path, name: str, entry: Entry) -> bool:
    """git, which knows its own conversions on checkout, hashes the room's file to the
    entry's id (a regular file only: a link is compared byte for byte)."""
    if entry.mode == _LINK:
        return False
    args = ["hash-object", f"--path={name}", "--", name]
    done = run_git(args, top, timeout=limits.GIT_TIMEOUT)
    return done is not None and done.ok and done.out.strip() == entry.blob


def _sound(top: Path, entry: Entry) -> bool:
    """The object git holds under `entry`'s id hashes to that id (git does not check
    this as it reads one: a loose object rewritten under its old id is read as the new
    content). True when git cannot say."""
    done = run_git(["cat-file", "blob", entry.blob], top, limit=entry.size + 1)
    if done is None or not done.ok:
        return True
    return _blob_id(done.out_bytes, entry.blob) == entry.blob


def extra(top: Path, manifest: Manifest) -> list[str]:
    """The files (and links) under `top` that `manifest` does not list, in the
    directories it lists files in: a directory it does not know is one name ending in
    `/`, not walked into (a check's output, `node_modules/`, costs nothing to pass by).
    git's own `.git` at the top aside, and nothing under a submodule's directory."""
    known = {""}
    for name, entry in manifest.items():
        parts = name.split("/")[:-1]
        if entry.mode != _GITLINK:
            known.update("/".join(parts[:n]) + "/" for n in range(1, len(parts) + 1))
    found: list[str] = []
    for base, dirs, files in os.walk(top):  # never into a link
        rel = os.path.relpath(base, top)
        prefix = "" if rel == os.curdir else Path(rel).as_posix() + "/"
        if prefix == "":
            files = [f for f in files if f != ".git"]
        found.extend(prefix + name for name in files if prefix + name not in manifest)
        for name in dirs:
            if prefix + name in manifest:  # a submodule's directory, or a link it holds
                continue
            if (Path(base) / name).is_symlink() or prefix + name + "/" not in known:
                found.append(prefix + name + ("" if (Path(base) / name).is_symlink() else "/"))
        dirs[:] = [
            d for d in dirs if prefix + d + "/" in known and not (Path(base) / d).is_symlink()
        ]
    return sorted(found)


def outward(top: Path, manifest: Manifest) -> list[str]:
    """The links of the room `top` that lead out of it, each as "NAME (a link out of the
    room, to TARGET)": through one, a check reads content ralphstate never hashed (an
    untracked directory of the project, its `.git`, any file of the user's), so a room
    that holds one is not used. Resolved through the room's own links, as the check's
    runner would follow them."""
    real = os.path.realpath(top)
    found: list[str] = []
    for name, entry in manifest.items():
        if entry.mode != _LINK:
            continue
        path = top / name
        reached = os.path.realpath(path)
        if os.path.commonpath([real, reached]) != real:
            with contextlib.suppress(OSError):
                reached = str(path.readlink())
            found.append(f"{name} (a link out of the room, to {reached})")
    return sorted(found)


def named(cwd: Path, specs: list[str], timeout: float) -> list[str] | None:
    """The files of the room's tree that `specs` (git pathspecs relative to `cwd`, the
    project root in the room) name, from the top of the room; None when git cannot say."""
    if not specs:
        return []
    args = ["ls-files", "-z", "--full-name", "--", *specs]
    done = run_git(args, cwd, timeout=timeout, limit=_LISTING_BYTES)
    if done is None or not done.ok:
        return None
    return [os.fsdecode(name) for name in done.out_bytes.split(b"\0") if name]


def said(problems: list[str]) -> str:
    """`problems` named, a few of them."""
    named = ", ".join(problems[:NAMED])
    more = len(problems) - NAMED
    return named + (f" and {more} more" if more > 0 else "")
