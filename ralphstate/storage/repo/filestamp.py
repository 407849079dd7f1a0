"""A stamp of the project's files: two stamps differ when a file was written, added or
removed between them. The Stop hook compares the stamp of one stop with the last one
it took, to tell a turn that changed the project's files from one that did not
(docs/explanation/hooks.md, "Stall").

It is cheap by design, since it is taken inside the Stop hook, and bounded:

- in a git repository, one `git status` (with git's optional locks off, so it never
  holds the index lock an agent's or a person's git command needs): the commit checked
  out, the paths it lists as changed or untracked (ignored files left out), and the
  size, modification and change times and inode of each of those paths, the first
  `limits.MAX_STAMP_FILES` of them. Its cost is that of `git status` (some 50 ms for
  20,000 files whose index entries are fresh);
- outside git, the same of the project's files, walked breadth first and each directory
  in name order, at most `limits.MAX_STAMP_FILES` entries read, so a bound leaves the
  deepest files out; names starting with a dot, `__pycache__`, `node_modules` and
  `venv` are passed over (tools' caches and installed packages, not the work).

The loop's own directory is never part of it. None when the stamp cannot be taken (git
fails, or takes longer than `limits.STAMP_SECONDS`): the stop is then judged on the
loop's bookkeeping alone.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from pathlib import Path

from ralphstate.core import limits
from ralphstate.storage.system.paths import LoopPaths, git_top

# Directories and files a walk outside git passes over, besides dot-names.
PASSED_OVER = frozenset({"__pycache__", "node_modules", "venv"})


def stamp(paths: LoopPaths) -> str | None:
    """The stamp of the project `paths` is in: a short hex digest, or None."""
    top = git_top(paths.root)
    if top is not None:
        return _git(paths, top)
    return walk(paths)


def _git(paths: LoopPaths, top: str) -> str | None:
    from ralphstate.storage.repo import git

    args = ["--no-optional-locks", "status", "--porcelain=v2", "-z", "--branch"]
    args += ["--untracked-files=all", "--no-renames", "--ignore-submodules=dirty"]
    args += ["--", *git.loop_pathspec(paths, Path(top))]
    done = git.run_git(args, paths.root, timeout=limits.STAMP_SECONDS)
    if done is None or not done.ok:
        return None
    digest = hashlib.sha256(done.out.encode("utf-8", "surrogateescape"))
    records = [r for r in done.out.split("\0") if r and not r.startswith("#")]
    for record in records[: limits.MAX_STAMP_FILES]:
        name = _path_of(record)
        if name is not None:
            digest.update(_stat_line(name, str(Path(top) / name)))
    return digest.hexdigest()[:16]


def _path_of(record: str) -> str | None:
    """The path of one `git status --porcelain=v2 -z` record (renames are off)."""
    kind = record[:1]
    if kind in ("?", "!"):
        return record[2:]
    fields = {"1": 8, "u": 10}.get(kind)
    if fields is None:
        return None
    parts = record.split(" ", fields)
    return parts[fields] if len(parts) > fields else None


def walk(paths: LoopPaths) -> str:
    """The stamp of the project's files outside git (see the module's docstring)."""
    root = str(paths.root.absolute())
    loop = str(paths.dir.absolute())
    skip = len(root) + 1
    digest = hashlib.sha256()
    left = limits.MAX_STAMP_FILES
    queue, at = [root], 0
    while at < len(queue) and left > 0:
        here, at = queue[at], at + 1
        try:
            with os.scandir(here) as listing:
                entries = list(itertools.islice(listing, left))
        except OSError:
            continue
        left -= len(entries)
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.name.startswith(".") or entry.name in PASSED_OVER:
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.path != loop:
                    queue.append(entry.path)
                    digest.update(f"{entry.path[skip:]}/\0".encode("utf-8", "surrogateescape"))
                continue
            digest.update(_stat_line(entry.path[skip:], entry.path))
    return digest.hexdigest()[:16]


def _stat_line(name: str, path: str) -> bytes:
    """`name` with what tells a write of its file: size, change time, inode."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return f"{name}\0-\n".encode("utf-8", "surrogateescape")
    line = f"{name}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_ino}\n"
    return line.encode("utf-8", "surrogateescape")
