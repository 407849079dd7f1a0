"""Loops side by side: a git worktree per loop, each on its own branch with its own
`.loop/` (docs/run.md, "Worktrees").

    ralphstate worktree add NAME       # ../REPO-worktrees/NAME on branch NAME
    ralphstate run --worktree NAME     # the same when missing, then the run in it
    ralphstate worktree remove NAME    # refused while it holds uncommitted work

The new worktree's loop is the loop here, started afresh (its spec, criteria, steps,
checks and settings; no progress), or a new one from a spec and criteria.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import filelock

from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.render import quote
from ralphstate.core.text import visible
from ralphstate.loop import ops
from ralphstate.run import git as rungit
from ralphstate.run.loop import RUN_LOCK
from ralphstate.storage import fsio, git, jsonstore, registry, trust
from ralphstate.storage.paths import LOOP_DIR_NAME, LoopPaths
from ralphstate.storage.store import Store

# What a new worktree's loop takes from the loop it is copied from.
COPIED = (
    "checks",
    "checkTimeouts",
    "verifyOnStop",
    "maxIterations",
    "stallLimit",
    "completionMarker",
    "continueMessage",
)
CONFIG_NAME = "config.toml"


@dataclass
class Worktree:
    path: Path
    branch: str | None
    head: str | None


def _main_top(start: Path) -> Path:
    """The main work tree of the repository `start` is in (also from inside a linked
    worktree); RalphstateError outside a repository."""
    done = git.run_git(["rev-parse", "--path-format=absolute", "--git-common-dir"], start)
    if done is None or not done.ok or not done.out.strip():
        raise RalphstateError(
            f"worktrees need a git repository, and {start} is not in one (or git is not installed)."
        )
    common = Path(done.out.strip())
    listed = worktrees(start)
    return listed[0].path if listed else common.parent


def worktrees(start: Path) -> list[Worktree]:
    """Every work tree of the repository, the main one first."""
    done = git.run_git(["worktree", "list", "--porcelain"], start)
    if done is None or not done.ok:
        return []
    found: list[Worktree] = []
    for block in done.out.strip().split("\n\n"):
        fields = dict(
            ([*line.split(" ", 1), ""])[:2] for line in block.splitlines() if line.strip()
        )
        if "worktree" in fields:
            branch = fields.get("branch", "").removeprefix("refs/heads/") or None
            found.append(Worktree(Path(fields["worktree"]), branch, fields.get("HEAD")))
    return found


def default_path(top: Path, name: str) -> Path:
    """`../REPO-worktrees/NAME`, beside the repository's main work tree."""
    return top.parent / f"{top.name}-worktrees" / name


def find(start: Path, name: str) -> Worktree | None:
    """The linked worktree called `name`: at its default path, or on branch `name`, or
    whose directory is named `name`."""
    top = _main_top(start)
    listed = worktrees(start)[1:]
    wanted = default_path(top, name).resolve()
    for worktree in listed:
        if worktree.path.resolve() == wanted:
            return worktree
    for worktree in listed:
        if worktree.branch == name:
            return worktree
    for worktree in listed:
        if worktree.path.name == name:
            return worktree
    return None


def _check_name(name: str) -> None:
    if not name or name.startswith(("-", ".")) or "/" in name or "\\" in name or ".." in name:
        raise RalphstateError(
            f"{quote(name)} cannot name a worktree: use letters, digits, '-' and '_'."
        )


@dataclass
class Added:
    path: Path
    branch: str
    created_branch: bool
    store: Store
    state: st.State


def add(
    start: Path,
    name: str,
    *,
    branch: str | None = None,
    path: Path | None = None,
    spec: str = "",
    criteria: list[str] | None = None,
    steps: list[str] | None = None,
) -> Added:
    """Create worktree `name` on branch `branch` (default `name`, created from HEAD when
    missing) and start its loop: a new one from `spec`, or the loop at or above `start`
    started afresh."""
    _check_name(name)
    branch = branch or name
    top = _main_top(start)
    here_top = git.toplevel(start) or top
    source = None if spec else _source(start)  # refused before anything is created
    place = (path or default_path(top, name)).absolute()
    if place.exists() and any(place.iterdir()):
        raise RalphstateError(f"{place} already exists and is not empty.")
    valid = git.run_git(["check-ref-format", "--branch", branch], start)
    if valid is None or not valid.ok:
        raise RalphstateError(f"{quote(branch)} is not a valid branch name.")
    exists = git.run_git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], start)
    created = exists is None or not exists.ok
    if created and git.head(start) is None:
        raise RalphstateError("the repository has no commit yet; make a first commit.")
    args = ["worktree", "add", "--quiet", *(["-b", branch] if created else []), str(place)]
    done = git.run_git([*args, *([] if created else [branch])], start)
    if done is None or not done.ok:
        raise RalphstateError(f"git could not add the worktree: {rungit.first_line(done)}.")
    # The loop lives at the same place in the new work tree as here.
    where = place
    if source is not None:
        with contextlib.suppress(ValueError):
            where = place / source[0].paths.root.resolve().relative_to(here_top.resolve())
    fsio.makedirs(where)
    if source is not None:
        store, state = _copy_loop(source, where)
    else:
        store, state, _ = ops.init(
            spec,
            criteria or [],
            steps or [],
            max_iterations=None,
            stall_limit=None,
            marker=None,
            start=where,
        )
    return Added(place, branch, created, store, state)


def _source(start: Path) -> tuple[Store, st.State]:
    try:
        store = ops.locate(start)
        state = store.load()
    except RalphstateError as exc:
        raise RalphstateError(
            f"{exc} A worktree's loop starts from the loop here, or from a spec and"
            ' criteria: `ralphstate worktree add NAME "SPEC" -c CRITERION`.'
        ) from None
    if not trust.is_trusted(store.paths, state):
        raise RalphstateError(
            f"the checks of the loop in {store.paths.root} are not trusted on this"
            " machine, so they are not copied into a worktree; review them and run"
            " `ralphstate trust` first."
        )
    return store, state


def _copy_loop(source: tuple[Store, st.State], where: Path) -> tuple[Store, st.State]:
    """The loop `source` started afresh in `where` (its checks were trusted here, see
    `_source`; the copy keeps that trust, `_carry_trust`)."""
    source_store, state = source  # as read when its trust was judged
    template = {key: state[key] for key in COPIED if key in state}  # type: ignore[literal-required]
    store, new, _ = ops.init(
        state["spec"],
        list(state["criteria"]),
        list(state["steps"]),
        max_iterations=state["maxIterations"],
        stall_limit=state["stallLimit"],
        marker=state["completionMarker"],
        template=template,
        start=where,
    )
    config = source_store.paths.dir / CONFIG_NAME
    if config.is_file():  # the run's settings (agent command, timeout) come along
        with contextlib.suppress(OSError):
            data = fsio.read_regular(config, 64 * 1024)[: 64 * 1024]
            fsio.atomic_write(store.paths.dir / CONFIG_NAME, data)
    _carry_trust(source_store, state, store, new)
    return store, new


def _carry_trust(source: Store, state: st.State, store: Store, new: st.State) -> None:
    """What is trusted in the source loop is trusted in its copy: the very same checks,
    and the run's settings when the copy's are the very ones trusted there."""
    from ralphstate.run import config as runconfig

    if trust.armed(new) != trust.armed(state):
        return
    settings: dict[str, object] | None = None
    with contextlib.suppress(RalphstateError):
        mine = runconfig.reviewed(
            runconfig.load(store.paths.root, store.paths.dir), store.paths.root
        )
        theirs = runconfig.reviewed(
            runconfig.load(source.paths.root, source.paths.dir), source.paths.root
        )
        if mine == theirs and trust.run_trusted(source.paths, theirs):
            settings = mine
    with contextlib.suppress(RalphstateError):
        trust.record(store.paths, new, settings)


def store_in(worktree: Worktree, start: Path) -> Store:
    """The loop in `worktree`, at the same place as the loop at or above `start`."""
    here_top = git.toplevel(start)
    where = worktree.path
    with contextlib.suppress(RalphstateError, ValueError):
        if here_top is not None:
            where = worktree.path / ops.locate(start).paths.root.resolve().relative_to(
                here_top.resolve()
            )
    return ops.locate(where)


@dataclass
class Removed:
    path: Path
    branch: str | None


def remove(start: Path, name: str, *, force: bool = False) -> Removed:
    """Remove worktree `name`; refused while it holds uncommitted work (unless `force`)
    or while a `ralphstate run` drives its loop. Its branch and commits stay."""
    worktree = find(start, name)
    if worktree is None:
        raise RalphstateError(f"no worktree {quote(name)} in this repository.")
    loop_dirs = [Path(p) for p in _loop_dirs(worktree.path)]
    for loop_dir in loop_dirs:
        _refuse_running(loop_dir)
    if not force:
        loop_dir = loop_dirs[0] if loop_dirs else worktree.path / LOOP_DIR_NAME
        paths = LoopPaths(loop_dir.parent, loop_dir)
        dirty = rungit.changes(paths)
        if dirty:
            shown = ", ".join(visible(line[3:]) for line in dirty[: rungit.SHOWN_PATHS])
            more = len(dirty) - rungit.SHOWN_PATHS
            raise RalphstateError(
                f"worktree {quote(name)} has uncommitted changes ({shown}"
                + (f" and {more} more" if more > 0 else "")
                + "); commit them there first, or give --force to throw them away."
            )
    done = git.run_git(["worktree", "remove", "--force", str(worktree.path)], start)
    if done is None or not done.ok:
        raise RalphstateError(f"git could not remove the worktree: {rungit.first_line(done)}.")
    for loop_dir in loop_dirs:
        with contextlib.suppress(OSError, RalphstateError):
            registry.forget(jsonstore.key(LoopPaths(loop_dir.parent, loop_dir)))
    return Removed(worktree.path, worktree.branch)


def _loop_dirs(root: Path) -> list[str]:
    """The loop directories the registry knows inside `root` (real paths)."""
    inside = os.path.realpath(root) + os.sep
    return [key for key in registry.read() if key.startswith(inside)]


def _refuse_running(loop_dir: Path) -> None:
    lock_path = loop_dir / RUN_LOCK
    if not lock_path.exists():
        return
    lock = filelock.FileLock(str(lock_path), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise RalphstateError(
            f"a `ralphstate run` is driving the loop in {loop_dir.parent}; stop it first."
        ) from None
    except OSError:
        return
    lock.release()
