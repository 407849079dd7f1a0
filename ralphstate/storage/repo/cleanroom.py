"""The clean room: a temporary detached worktree of the code being verified, where the
checks run instead of the project's work tree (docs/explanation/proof.md,
"Clean-room verification").

    room = cleanroom.open_room(paths)          # None outside a git repository
    try:
        ...                                    # run the checks in room.cwd
    finally:
        cleanroom.close(room)

Its tree is the project's tracked files as the work tree holds them now: their
uncommitted edits and deletions in, untracked and ignored files out, the loop's own
directory out (`git.tracked_snapshot`, in a temporary index: the repository's own is
never touched). `restore` (a tree id and pathspecs relative to the project root) puts
those paths back as that tree holds them: a file the tree has comes back, one it lacks
is taken out. The tree goes into a commit (`git commit-tree`, its parent HEAD) that
`git worktree add --detach` checks out in a new temporary directory, with none of the
repository's hooks; inside, HEAD and the index are that commit, so `git status` there
is clean.

The repository keeps nothing of it once `close` ran but an unreferenced commit and the
objects of its tree (the tracked files' uncommitted edits), which git collects as it
does any others; no untracked file ever goes into it (`git.tracked_snapshot`).

Every room is made in ralphstate's own private directory (`scratch.own()`, outside the
project), and before git hears of it, a record of it goes beside it (`rooms/NAME.json`:
the process that made it, the repository, the worktree). A room whose process was
killed before `close` is removed by the next `open_room` in the same repository, and
only such a room: housekeeping reads ralphstate's own records, never the repository's
list of worktrees (the agent can write that one), removes only a real directory that
is a child of that private directory, never through a link, and changes no mode
outside it. Where no private directory can be had, rooms are not recorded, and none is
ever removed but by the process that made it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.repo import git, gitenv, roomfiles, roomstock
from ralphstate.storage.repo.roomstock import real_dir, rmtree
from ralphstate.storage.system import fsio, process, scratch
from ralphstate.storage.system.paths import LoopPaths

# Each room is a directory of ralphstate's own (`scratch.own()`) named PREFIX + pid + ...
PREFIX = "ralphstate-clean-"
# The directory beside the rooms that holds a record of each: NAME.json, NAME the room's.
RECORDS = "rooms"
# The most a record may hold: a few paths.
_RECORD_BYTES = 64 * 1024
MESSAGE = "ralphstate clean room"
# Who the room's commit names: verifying needs nobody's git identity.
_IDENTITY = {
    f"GIT_{who}_{what}": value
    for who in ("AUTHOR", "COMMITTER")
    for what, value in (("NAME", "ralphstate"), ("EMAIL", "ralphstate@localhost"))
}


class CleanRoomError(RalphstateError):
    """The clean room could not be made; nothing ran in it."""


class TamperedRoom(CleanRoomError):
    """The room does not hold what ralphstate put there: not a fault of ralphstate's
    but evidence against the work, so the checks fail (verify/pipeline.py) rather than
    the hook failing open."""


@dataclass
class Room:
    """A clean room that exists: where it is, and the code it holds."""

    repo: Path  # the project root, where git is asked about the room
    scratch: Path  # ralphstate's own directory that holds the worktree (`scratch.own()`)
    top: Path  # the worktree
    cwd: Path  # the project root inside the worktree: where the checks run
    tree: str  # the id of the tree it was made with, restored paths included
    code: git.Snapshot  # the work tree when the room was made, as `git.snapshot` sees it
    # What ralphstate put in it (by path from `top`), and which of those are guarded:
    # hashed again after each check (verify/isolation.py `tampered`).
    manifest: roomfiles.Manifest = field(default_factory=dict)
    guarded: list[str] = field(default_factory=list)
    # What making it found and mended, each a sentence to say once: a file whose object
    # in the repository's store did not match its id, written from ralphstate's own copy.
    notes: list[str] = field(default_factory=list)
    # Its files go back to the repository's stock when it closes (`roomstock`).
    keep: bool = False


def open_room(
    paths: LoopPaths,
    *,
    budget: float = limits.CLEAN_ROOM_SECONDS,
    restore: tuple[str, list[str]] | None = None,
    copies: roomfiles.Copies | None = None,
    keep: bool = False,
) -> Room | None:
    """A new clean room of the project `paths` is in; None outside a git repository.
    A file git checks out that is not what its id says is written from `copies`
    (ralphstate's own copy of that content) when it has one, and said in its `notes`.

    With `keep`, the room starts from the files the repository's last kept room gave
    back (`roomstock`), writes only what differs, and gives its own back when it
    closes; they are hashed as every room's are.

    All its git commands share `budget` seconds. Raises CleanRoomError (and leaves
    nothing behind) when git fails or the budget runs out."""
    deadline = time.monotonic() + budget

    def left() -> float:
        return deadline - time.monotonic()

    root = paths.root
    top = git.toplevel(root, left())
    if top is None:
        if left() <= 0:  # no time to ask is not "outside a repository"
            raise CleanRoomError(_failed("find the repository", budget, left()))
        return None
    clear_leftovers(root, max(min(left(), limits.CLEAN_ROOM_REMOVE_SECONDS), 0.001))
    found = git.tracked_snapshot(paths, max(min(left(), limits.GIT_SNAPSHOT_SECONDS), 0.001))
    if found is None:
        raise CleanRoomError(_failed("read the tree of the tracked files", budget, left()))
    code, tree = found
    mine = scratch.own()
    room_dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=mine))
    where = room_dir / (top.name or "project")
    try:
        if mine is not None:
            _record(mine, room_dir, root, where)
        if restore is not None and restore[1]:
            tree = _restored(root, room_dir, tree, restore, left)
        commit = _commit(root, tree, code.commit, budget, left())
        hooks = room_dir / "hooks"  # empty: the repository's hooks do not run
        hooks.mkdir()
        add = ["worktree", "add", "--detach", "--quiet", str(where), commit]
        if keep:  # ralphstate writes the files itself
            add[2:2] = ["--no-checkout"]
        # Every tracked file, whatever sparse checkout the work tree has (git copies its
        # patterns into a new worktree): a pattern must not leave the tests out.
        options = ["-c", f"core.hooksPath={hooks}", "-c", "core.sparseCheckout=false"]
        _git([*options, *add], root, "check out the room", budget, left())
        kept = _stocked(root, room_dir, where, tree, commit, mine, budget, left) if keep else None
        mended: list[str] = []
        manifest = _checked(root, where, tree, budget, left(), copies, mended, kept)
        inside = os.path.relpath(os.path.realpath(root), os.path.realpath(top))
        cwd = where if inside == os.curdir else where / inside
        cwd.mkdir(parents=True, exist_ok=True)  # a directory with no tracked files yet
        notes = [_mended(mended)] if mended else []
        made = Room(Path(root), room_dir, where, cwd, tree, code, manifest, notes=notes)
        made.keep = keep
        return made
    except BaseException:
        _remove(Path(root), room_dir, where, limits.CLEAN_ROOM_REMOVE_SECONDS)
        raise


def close(room: Room, timeout: float = limits.CLEAN_ROOM_REMOVE_SECONDS) -> None:
    """Remove the room: its worktree (whatever the checks left in it) and its entry in
    the repository, within `timeout` seconds of git. Never raises but for an interrupt;
    what it could not remove, the next `open_room` does. A kept room's files go back
    to the repository's stock first."""
    if room.keep:
        roomstock.give_back(room.top, scratch.own(), room.repo)
    _remove(room.repo, room.scratch, room.top, timeout)


def _stocked(
    root: Path,
    room_dir: Path,
    where: Path,
    tree: str,
    commit: str,
    mine: Path | None,
    budget: float,
    left: Callable[[], float],
) -> tuple[roomfiles.Manifest, list[str]]:
    """Fill the room `where` (added without its files) with the files of `tree`, from
    the repository's stock where they hash to their ids, then its index with `commit`:
    the files of `tree`, and the names of those written."""
    manifest = roomfiles.listing(Path(root), tree, left())
    if manifest is None:
        raise CleanRoomError(_failed("list the files of its tree", budget, left()))
    stock = roomstock.claim(mine, root, room_dir)
    try:
        written = roomstock.fill(where, stock, manifest, Path(root), max(left(), 0.001))
    except OSError:  # the stock was not as it was left: the files anew
        for entry in list(where.iterdir()) if where.is_dir() else []:
            if entry.name != ".git":
                roomstock.remove(entry)
        try:
            written = roomstock.fill(where, None, manifest, Path(root), max(left(), 0.001))
        except OSError as exc:
            raise CleanRoomError(f"could not make the clean room: {exc.strerror}") from None
    _git(["read-tree", commit], where, "fill the room's index", budget, left())
    return manifest, written


def _failed(what: str, budget: float, left: float) -> str:
    if left <= 0:
        return f"could not make the clean room within {budget:g}s (it was to {what})"
    return f"could not make the clean room: git failed to {what}"


def _git(
    args: list[str],
    cwd: Path | str,
    what: str,
    budget: float,
    left: float,
    *,
    env: dict[str, str] | None = None,
    input: bytes | None = None,
    limit: int = limits.MAX_GIT_OUTPUT_BYTES,
) -> str:
    """git's output; CleanRoomError naming `what` when it fails or has no time left."""
    done = git.run_git(args, cwd, env=env, timeout=left, input=input, limit=limit)
    if left <= 0 or done is None or not done.ok:
        said = (done.err.strip().splitlines() or [""])[-1] if done is not None else ""
        detail = f" ({said[: limits.MAX_PROBLEM_CHARS]})" if said else ""
        raise CleanRoomError(_failed(what, budget, left) + detail)
    return done.out


def _mended(mended: list[str]) -> str:
    return (
        "ralphstate: the repository's store holds content under an approved file's id"
        f" that is not what the id says, and git checked it out: {roomfiles.said(mended)}."
    )


def _checked(
    root: Path | str,
    where: Path,
    tree: str,
    budget: float,
    left: float,
    copies: roomfiles.Copies | None = None,
    mended: list[str] | None = None,
    kept: tuple[roomfiles.Manifest, list[str]] | None = None,
) -> dict[str, roomfiles.Entry]:
    """What the room at `where` must hold (the files of `tree`), once it is seen to hold
    exactly that (a file whose object was rewritten under its id is written from
    `copies` and named in `mended`); CleanRoomError naming what it holds besides, or
    otherwise. With `kept` (the files of `tree` and those written: the others were
    hashed as they were kept), only those written are hashed."""
    manifest = roomfiles.listing(Path(root), tree, left) if kept is None else kept[0]
    if manifest is None:
        raise CleanRoomError(_failed("list the files of its tree", budget, left))
    if kept is None:
        problems = roomfiles.differences(where, manifest, copies=copies, mended=mended)
    else:
        written = {name: manifest[name] for name in kept[1]}
        problems = roomfiles.differences(where, written, others=False, copies=copies, mended=mended)
        manifest.update(written)  # a mended file's size
        problems += [f"{name} (not put there)" for name in roomfiles.extra(where, manifest)]
        problems.sort()
    problems += roomfiles.outward(where, manifest)
    if problems:
        raise TamperedRoom(
            "the clean room does not hold what ralphstate put there, so no check ran in it:"
            f" {roomfiles.said(problems)}"
        )
    return manifest


def _commit(root: Path | str, tree: str, parent: str | None, budget: float, left: float) -> str:
    """A commit of `tree` whose parent is `parent` (HEAD), for `git worktree add`."""
    args = ["commit-tree", tree, "-m", MESSAGE, *(["-p", parent] if parent else [])]
    env = gitenv.git_env(**_IDENTITY)
    return _git(args, root, "commit the tree", budget, left, env=env).strip()


def _restored(
    root: Path | str,
    room_dir: Path,
    tree: str,
    restore: tuple[str, list[str]],
    left: Callable[[], float],
) -> str:
    """`tree` with the paths of `restore` (a tree id and pathspecs relative to `root`)
    as that tree holds them: the id of the new tree. Both trees are read into indexes
    of the room's own; the pathspecs are git's, matched by git."""
    source, specs = restore
    budget = limits.CLEAN_ROOM_SECONDS
    room = gitenv.git_env(GIT_INDEX_FILE=str(room_dir / "index"))
    approved = gitenv.git_env(GIT_INDEX_FILE=str(room_dir / "approved"))
    what = "restore the approved paths"
    _git(["read-tree", tree], root, what, budget, left(), env=room)
    # Out first (a file the approved tree lacks stays out), then the approved ones in.
    drop = ["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *specs]
    _git(drop, root, what, budget, left(), env=room)
    _git(["read-tree", source], root, what, budget, left(), env=approved)
    entries = _git(
        ["ls-files", "--stage", "-z", "--full-name", "--", *specs],
        root,
        what,
        budget,
        left(),
        env=approved,
        limit=limits.MAX_RESTORE_INDEX_BYTES,
    )
    if len(entries) >= limits.MAX_RESTORE_INDEX_BYTES:
        raise CleanRoomError(
            f"could not make the clean room: the paths to restore take more than"
            f" {limits.MAX_RESTORE_INDEX_BYTES:,} bytes of index entries"
        )
    if entries:
        data = entries.encode()
        add = ["update-index", "-z", "--index-info"]
        _git(add, root, what, budget, left(), env=room, input=data)
    return _git(["write-tree"], root, what, budget, left(), env=room).strip()


# -- removing ----------------------------------------------------------------------


def _record(mine: Path, room_dir: Path, repo: Path | str, where: Path) -> None:
    """Write the record of the room `room_dir` beside it, before git hears of it."""
    started = process.start_time(os.getpid()) or "-"
    data = {"pid": os.getpid(), "started": started, "repo": str(repo), "top": where.name}
    folder = mine / RECORDS
    folder.mkdir(mode=0o700, exist_ok=True)
    fsio.atomic_write(folder / f"{room_dir.name}.json", json.dumps(data).encode(), mode=0o600)


def _drop_record(room_dir: Path) -> None:
    mine = scratch.own()
    if mine is not None and room_dir.parent == mine:
        with contextlib.suppress(OSError):
            (mine / RECORDS / f"{room_dir.name}.json").unlink()


def _remove(repo: Path, room_dir: Path, where: Path, timeout: float) -> None:
    """The worktree at `where` out of the repository and off the disk, then `room_dir`,
    then its record."""
    deadline = time.monotonic() + timeout
    gone = False
    if real_dir(where):
        done = git.run_git(["worktree", "remove", "--force", str(where)], repo, timeout=timeout)
        gone = done is not None and done.ok
    if not gone:  # never added, or git could not: off the disk, then out of git's list
        rmtree(where)
        git.run_git(["worktree", "prune"], repo, timeout=max(deadline - time.monotonic(), 0.001))
    rmtree(room_dir)
    _drop_record(room_dir)


def clear_leftovers(repo: Path | str, timeout: float) -> list[Path]:
    """Remove the clean rooms of this repository whose process is gone (killed before it
    could remove its room), as ralphstate's own records name them; the worktrees
    removed. Nothing the repository lists is trusted: a room that is not a real
    directory in ralphstate's own private directory loses its record, nothing more."""
    mine = scratch.own()
    if mine is None:
        return []
    deadline = time.monotonic() + timeout
    here = os.path.realpath(repo)
    found = []
    try:
        records = sorted((mine / RECORDS).glob(f"{PREFIX}*.json"))
    except OSError:
        return []
    for record in records:
        room_dir = mine / record.name.removesuffix(".json")
        said = _read_record(record)
        if said is None or os.path.realpath(str(said.get("repo") or "")) != here:
            continue  # another repository's: its own next room clears it
        top = str(said.get("top") or "")
        if not _abandoned(room_dir, said) or not top or os.sep in top or top in ("..", "."):
            continue
        if os.path.lexists(room_dir) and not real_dir(room_dir):
            _drop_record(room_dir)  # not a room ralphstate made: left alone
            continue
        where = room_dir / top
        _remove(Path(repo), room_dir, where, max(deadline - time.monotonic(), 0.001))
        found.append(where)
    return found


def _read_record(record: Path) -> dict[str, object] | None:
    try:
        data = json.loads(fsio.read_regular(record, _RECORD_BYTES))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _abandoned(room_dir: Path, said: dict[str, object]) -> bool:
    """The room in `room_dir`, of the record `said`, belongs to no running process."""
    if not os.path.lexists(room_dir):
        return True  # the system cleaned its temporary directory: only the entry is left
    pid, started = said.get("pid"), said.get("started")
    if not isinstance(pid, int):
        return True  # every record names its process
    if pid == os.getpid():
        return False
    if sys.platform == "win32":  # pragma: no cover - no way to ask: left to the system
        return False
    if isinstance(started, str) and started != "-":
        return not process.running(pid, started)
    return not process.exists(pid)


def untracked(paths: LoopPaths, timeout: float = limits.GIT_TIMEOUT) -> list[str]:
    """The untracked files of the work tree that git does not ignore (a directory of
    them as one `dir/`), as git names them from the project root; the loop's own
    directory left out. [] when git cannot say."""
    top = git.toplevel(paths.root, timeout)
    if top is None:
        return []
    spec = git.loop_pathspec(paths, top)
    args = ["ls-files", "--others", "--exclude-standard", "--directory", "--no-empty-directory"]
    args += ["-z", "--", *spec]  # a directory of ignored files only is not listed
    done = git.run_git(args, paths.root, timeout=timeout)
    if done is None or not done.ok:
        return []
    return [name for name in done.out.split("\0") if name]
