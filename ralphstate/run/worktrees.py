"""Loops side by side: a git worktree per loop, each on its own branch with its own
`.loop/` (docs/how-to/git.md, "Worktrees").

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

from ralphstate.core import limits, schema
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.render import quote
from ralphstate.loop import begin
from ralphstate.loop.project import locate
from ralphstate.run import commits
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import jsonstore, registry, truststore
from ralphstate.storage.repo import git
from ralphstate.storage.system import fsio, locking
from ralphstate.storage.system.paths import LOOP_DIR_NAME, RUN_LOCK, LoopPaths

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
    started afresh. A `.loop/state.json` the branch's commit holds (a loop committed
    with `run --commit`) is replaced when it is a copy of the loop here; any other
    unfinished or unreadable one is refused before anything is created. A worktree or
    branch made before a failure is removed again."""
    _check_name(name)
    branch = branch or name
    top = _main_top(start)
    here_top = git.toplevel(start) or top
    source = None if spec else _source(start)  # refused before anything is created
    here_id = _here_id(source, start)
    place = (path or default_path(top, name)).absolute()
    if place.exists() and any(place.iterdir()):
        raise RalphstateError(f"{place} already exists and is not empty.")
    commits.check_branch_name(start, branch)
    created = commits.to_create(start, branch)
    # The loop lives at the same place in the new work tree as here.
    rel = Path()
    if source is not None:
        with contextlib.suppress(ValueError):
            rel = source[0].paths.root.resolve().relative_to(here_top.resolve())
    checkout = _Checkout("HEAD" if created else f"refs/heads/{branch}", branch, created, rel)
    _judge(_committed(start, checkout), here_id, checkout)  # before anything is created
    registry.check_writable()
    made = _missing(place)
    args = ["worktree", "add", "--quiet", *(["-b", branch] if created else []), str(place)]
    done = git.run_git([*args, *([] if created else [branch])], start)
    if done is None or not done.ok:
        _remove_dirs(made)
        raise RalphstateError(f"git could not add the worktree: {commits.first_line(done)}.")
    where = place / rel
    try:
        fsio.makedirs(where)
        # What git checked out is judged again: the bound on git's output may have kept
        # the first look from reading it.
        replace = _judge(_checked_out(where), here_id, checkout)
        if source is not None:
            store, state = _copy_loop(source, where, replace)
        else:
            asked = begin.InitRequest(
                spec, tuple(criteria or []), steps=tuple(steps or []), force=replace
            )
            store, state, _ = begin.init(asked, start=where)
    except BaseException:
        _undo(start, place, where, branch if created else None, made)
        raise
    return Added(place, branch, created, store, state)


@dataclass
class _Checkout:
    """What `git worktree add` checks out: `ref`, for `branch`, the loop at `rel`."""

    ref: str
    branch: str
    created: bool
    rel: Path

    @property
    def state_path(self) -> str:
        return (self.rel / LOOP_DIR_NAME / "state.json").as_posix()

    @property
    def label(self) -> str:
        return "HEAD" if self.created else f"branch {self.branch}"


def _here_id(source: tuple[Store, st.State] | None, start: Path) -> tuple[str, str] | None:
    """What tells the loop at or above `start` from others (`_identity`), if there is
    one that can be read."""
    if source is not None:
        return _identity(source[1])
    with contextlib.suppress(RalphstateError):
        return _identity(locate(start).load())
    return None


def _identity(state: st.State) -> tuple[str, str] | None:
    """A loop's id, or for a file from before ids its start time; None without either."""
    if state["loopId"]:
        return ("loopId", state["loopId"])
    if state["startedAt"]:
        return ("startedAt", state["startedAt"])
    return None


def _committed(start: Path, checkout: _Checkout) -> st.State | RalphstateError | None:
    """The loop state the checkout's commit holds where the new loop goes: None when
    there is none, or when it is too large for git's output bound (`_checked_out`
    reads it after the checkout)."""
    done = git.run_git(["cat-file", "-p", f"{checkout.ref}:{checkout.state_path}"], start)
    if done is None or not done.ok:
        return None
    data = done.out.encode()
    return None if len(data) >= limits.MAX_GIT_OUTPUT_BYTES else _parsed(data)


def _checked_out(where: Path) -> st.State | RalphstateError | None:
    """The loop state git checked out in the new worktree, if any."""
    path = where / LOOP_DIR_NAME / "state.json"
    if not os.path.lexists(path):
        return None
    try:
        data = fsio.read_regular(path, limits.MAX_STATE_BYTES)
    except OSError as exc:
        return RalphstateError(exc.strerror or type(exc).__name__)
    if len(data) > limits.MAX_STATE_BYTES:
        return RalphstateError(f"it is larger than {limits.MAX_STATE_BYTES} bytes")
    return _parsed(data)


def _parsed(data: bytes) -> st.State | RalphstateError:
    try:
        return st.parse(data)
    except RalphstateError as exc:
        return exc


def _judge(
    found: st.State | RalphstateError | None,
    here_id: tuple[str, str] | None,
    checkout: _Checkout,
) -> bool:
    """Whether the new loop replaces the state git checks out: True for a copy of the
    loop here (the same `loopId`; git keeps it in the commit, `init` keeps a copy);
    False for none, or for a finished loop, which `init` replaces as it always does.
    Another unfinished loop, or a file that cannot be read, is refused."""
    if found is None:
        return False
    where = f"{checkout.label}'s {checkout.state_path}"
    advice = (
        " Give the worktree another branch (--branch NAME), or settle that loop on its"
        " branch first. Nothing was created."
    )
    if isinstance(found, RalphstateError):
        detail = str(found).rstrip(".")
        raise RalphstateError(f"{where} cannot be read ({detail}).{advice}")
    if here_id is not None and _identity(found) == here_id:
        return True
    if found["status"] in st.ACTIVE:
        raise RalphstateError(
            f"{where} is another unfinished loop ({found['status']}, spec:"
            f" {found['spec'][:60]!r}), not a copy of the loop here.{advice}"
        )
    return False


def _missing(place: Path) -> list[Path]:
    """The directories up to `place` that do not exist yet, deepest first."""
    made: list[Path] = []
    for folder in [place, *place.parents]:
        if folder.exists():
            break
        made.append(folder)
    return made


def _remove_dirs(made: list[Path]) -> None:
    for folder in made:  # deepest first; only empty ones
        with contextlib.suppress(OSError):
            folder.rmdir()


def _undo(start: Path, place: Path, where: Path, branch: str | None, made: list[Path]) -> None:
    """Take back a worktree (and the branch) `add` made before it failed; `where` is
    where its loop was to be."""
    with contextlib.suppress(OSError, RalphstateError):
        registry.forget(jsonstore.key(LoopPaths(where, where / LOOP_DIR_NAME)))
    git.run_git(["worktree", "remove", "--force", str(place)], start)
    git.run_git(["worktree", "prune"], start)
    if branch is not None:
        git.run_git(["branch", "-D", branch], start)
    _remove_dirs(made)


def _source(start: Path) -> tuple[Store, st.State]:
    try:
        store = locate(start)
        state = store.load()
    except RalphstateError as exc:
        raise RalphstateError(
            f"{exc} A worktree's loop starts from the loop here, or from a spec and"
            ' criteria: `ralphstate worktree add NAME "SPEC" -c CRITERION`.'
        ) from None
    if not truststore.is_trusted(store.paths, state):
        raise RalphstateError(
            f"the checks of the loop in {store.paths.root} are not trusted on this"
            " machine, so they are not copied into a worktree; review them and run"
            " `ralphstate trust` first."
        )
    return store, state


def _copy_loop(
    source: tuple[Store, st.State], where: Path, replace: bool = False
) -> tuple[Store, st.State]:
    """The loop `source` started afresh in `where` (its checks were trusted here, see
    `_source`; the copy keeps that trust, `_carry_trust`); with `replace`, over the copy
    of it git checked out there."""
    source_store, state = source  # as read when its trust was judged
    template = {key: state[key] for key in schema.COPIED if key in state}  # type: ignore[literal-required]
    asked = begin.InitRequest(
        state["spec"],
        tuple(state["criteria"]),
        steps=tuple(state["steps"]),
        max_iterations=state["maxIterations"],
        stall_limit=state["stallLimit"],
        marker=state["completionMarker"],
        template=template,
        force=replace,
    )
    store, new, _ = begin.init(asked, start=where)
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
    from ralphstate.run import runconfig

    if truststore.armed(new) != truststore.armed(state):
        return
    settings: dict[str, object] | None = None
    with contextlib.suppress(RalphstateError):
        mine = runconfig.reviewed(
            runconfig.load(store.paths.root, store.paths.dir), store.paths.root
        )
        theirs = runconfig.reviewed(
            runconfig.load(source.paths.root, source.paths.dir), source.paths.root
        )
        if mine == theirs and truststore.run_trusted(source.paths, theirs):
            settings = mine
    with contextlib.suppress(RalphstateError):
        truststore.record(store.paths, new, settings, proof=truststore.proof_of(source.paths))


def store_in(worktree: Worktree, start: Path) -> Store:
    """The loop in `worktree`, at the same place as the loop at or above `start`."""
    here_top = git.toplevel(start)
    where = worktree.path
    with contextlib.suppress(RalphstateError, ValueError):
        if here_top is not None:
            where = worktree.path / locate(start).paths.root.resolve().relative_to(
                here_top.resolve()
            )
    return locate(where)


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
        dirty = commits.changes(paths)
        if dirty:
            raise RalphstateError(
                f"worktree {quote(name)} has uncommitted changes ({commits.shown_paths(dirty)});"
                " commit them there first, or give --force to throw them away."
            )
    done = git.run_git(["worktree", "remove", "--force", str(worktree.path)], start)
    if done is None or not done.ok:
        raise RalphstateError(f"git could not remove the worktree: {commits.first_line(done)}.")
    for loop_dir in loop_dirs:
        with contextlib.suppress(OSError, RalphstateError):
            registry.forget(jsonstore.key(LoopPaths(loop_dir.parent, loop_dir)))
    return Removed(worktree.path, worktree.branch)


def _loop_dirs(root: Path) -> list[str]:
    """The loop directories the registry knows inside `root` (real paths)."""
    inside = os.path.realpath(root) + os.sep
    return [key for key in registry.read() if key.startswith(inside)]


def _refuse_running(loop_dir: Path) -> None:
    """RalphstateError while a `ralphstate run` drives the loop in `loop_dir`, or when
    that cannot be told (its lock is asked as the store asks its own)."""
    lock_path = loop_dir / RUN_LOCK
    try:
        running = locking.held_elsewhere(lock_path)
    except OSError as exc:
        raise RalphstateError(
            f"could not tell whether a `ralphstate run` is driving the loop in"
            f" {loop_dir.parent}: {lock_path} could not be locked"
            f" ({exc.strerror or type(exc).__name__}); stop any run there, remove that file"
            " and try again."
        ) from None
    if running:
        raise RalphstateError(
            f"a `ralphstate run` is driving the loop in {loop_dir.parent}; stop it first."
        )
