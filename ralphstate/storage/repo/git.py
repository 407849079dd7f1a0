"""What git says about the project a loop lives in: the commit, the branch, and a
hash of the tree the work is on (docs/how-to/checks.md, "Evidence tied to code").

Every function here reads; none changes the repository's index, branch or history,
and a snapshot writes nothing into its `.git` (the objects it makes go to a scratch
store, `storage/system/scratch.py`) but the tree of the tracked files a clean room checks out.
Each git command runs with a timeout (`limits.GIT_TIMEOUT`) and only the first
`limits.MAX_GIT_OUTPUT_BYTES` of its output are kept; outside a repository, without
git, or when git fails, the answers are None.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ralphstate.core import limits
from ralphstate.storage.repo import gitenv
from ralphstate.storage.repo.gitenv import git_env
from ralphstate.storage.system import children, fsio, scratch
from ralphstate.storage.system.paths import LoopPaths

# The id of the tree with nothing in it (a repository before its first commit).
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass
class Done:
    """How one git command ended: its exit code, and the start of its output."""

    code: int
    out: str
    err: str
    out_bytes: bytes = b""  # `out` as git wrote it: file names need not be UTF-8

    @property
    def ok(self) -> bool:
        return self.code == 0


def run_git(
    args: list[str],
    cwd: Path | str,
    *,
    env: dict[str, str] | None = None,
    timeout: float = limits.GIT_TIMEOUT,
    input: bytes | None = None,
    limit: int = limits.MAX_GIT_OUTPUT_BYTES,
) -> Done | None:
    """`git ARGS` in `cwd`, its stdin `input` (else closed); None when git cannot be
    started or does not finish in time.

    git runs in a process group of its own, killed whole at the timeout (a hook or
    filter git starts is stopped with it). stdout and stderr are read as they come and
    only their first `limit` bytes are kept, so a command that prints a lot costs no
    memory."""
    try:
        safe = gitenv.safe_env(env if env is not None else git_env(), cwd, timeout)
        done = children.run(
            ["git", *args],
            cwd=cwd,
            env=safe,
            input=input,
            timeout=timeout,
            limit=limit,
        )
    except OSError:
        return None
    if done.code is None:
        return None
    out, err = done.out.decode("utf-8", "replace"), done.err.decode("utf-8", "replace")
    return Done(done.code, out, err, done.out)


def _line(args: list[str], cwd: Path | str, timeout: float = limits.GIT_TIMEOUT) -> str | None:
    if timeout <= 0:
        return None
    done = run_git(args, cwd, timeout=timeout)
    if done is None or not done.ok:
        return None
    return done.out.strip() or None


def head(root: Path | str, timeout: float = limits.GIT_TIMEOUT) -> str | None:
    """The commit HEAD names, or None outside a repository or before the first commit."""
    return _line(["rev-parse", "--verify", "--quiet", "HEAD"], root, timeout)


def branch(root: Path | str, timeout: float = limits.GIT_TIMEOUT) -> str | None:
    """The branch checked out in `root`, or None (detached HEAD, not a repository)."""
    return _line(["symbolic-ref", "--quiet", "--short", "HEAD"], root, timeout)


def head_branch(root: Path | str) -> str | None:
    """The branch checked out in `root`, read from the repository's HEAD file rather than
    asked of git (`list` names one for each of a thousand loops): None outside a
    repository, on a detached HEAD, or where HEAD cannot be read as a plain file."""
    here = Path(root).resolve()
    for folder in (here, *here.parents):
        dot = folder / ".git"
        try:
            if dot.is_file():  # a worktree or submodule: `gitdir: PATH`
                with fsio.open_regular(dot) as handle:
                    pointer = handle.read(4096).decode("utf-8", "replace").strip()
                if not pointer.startswith("gitdir:"):
                    return None
                dot = (folder / pointer.removeprefix("gitdir:").strip()).resolve()
            elif not dot.is_dir():
                continue
            with fsio.open_regular(dot / "HEAD") as handle:
                head = handle.read(4096).decode("utf-8", "replace").strip()
        except OSError:
            return None
        prefix = "ref: refs/heads/"
        return head.removeprefix(prefix) if head.startswith(prefix) else None
    return None


def toplevel(root: Path | str, timeout: float = limits.GIT_TIMEOUT) -> Path | None:
    """The top of the work tree `root` is in, or None outside a repository."""
    found = _line(["rev-parse", "--show-toplevel"], root, timeout)
    return Path(found) if found else None


def repository(root: Path | str, timeout: float = limits.GIT_TIMEOUT) -> str | None:
    """The repository git finds from `root`: its git directory and its common directory
    (where its objects and refs are), each its real path and its device and inode, a
    line each; None outside one. A `.git` moved aside for a new one, or a `commondir`
    file written into it, changes it."""
    args = ["rev-parse", "--absolute-git-dir", "--git-common-dir"]
    done = run_git(args, root, timeout=timeout) if timeout > 0 else None
    lines = done.out.splitlines() if done is not None and done.ok else []
    if len(lines) != 2:
        return None
    found = []
    for line in lines:
        path = os.path.realpath(Path(root) / line)
        try:  # the directory itself: one made in the place of another is another
            held = Path(path).stat()
        except OSError:
            return None
        found.append(f"{path} {held.st_dev}:{held.st_ino}")
    return "\n".join(found)


def loop_pathspec(paths: LoopPaths, top: Path) -> list[str]:
    """The whole work tree except the loop's own directory: the loop's state and logs
    are not the code the checks prove."""
    try:
        rel = paths.dir.resolve().relative_to(top.resolve())
    except ValueError:  # the loop lives outside this work tree
        return [":/"]
    return [":/", f":(top,exclude){rel.as_posix()}"]


@dataclass
class Snapshot:
    """The code a check ran on: the commit checked out, whether the work tree differed
    from it, and the id of the tree the work tree holds (the loop's directory left out)."""

    commit: str | None
    dirty: bool
    tree: str
    branch: str | None = None


def snapshot(paths: LoopPaths, budget: float = limits.GIT_SNAPSHOT_SECONDS) -> Snapshot | None:
    """The tree the project's work tree holds now, or None outside a git repository.

    The tree id is what `git write-tree` gives for the work tree as `git add -A` would
    stage it, ignored files and the loop's directory left out, but for the untracked
    files larger than the size limit: each is in the tree as a summary of its size,
    times and inode, not read (`storage/system/scratch.py`). It is computed in a temporary
    copy of the index, so the repository's own index is never touched, and the objects
    it writes go to a scratch store removed when it ends, so its `.git` gets nothing.
    The same content always gives the same id, so committing the work changes nothing
    (a summarised file, once committed, is read like any other tracked file). Its cost
    is that of `git add -u` and `git ls-files --others`: tracked files whose stat data
    did not change since the index last saw them are not read again, untracked files
    that are not ignored are read every time up to the size limit. All its git
    commands share `budget` seconds; past it, None.
    """
    found = _snapshot(paths, budget, tracked=False)
    return None if found is None else found[0]


def tracked_snapshot(
    paths: LoopPaths, budget: float = limits.GIT_SNAPSHOT_SECONDS
) -> tuple[Snapshot, str] | None:
    """`snapshot`, and the id of the tree of the tracked files alone, as the work tree
    holds them (`git add -u`: their edits and deletions in, untracked and ignored files
    out, the loop's directory left out), both from the same temporary index: the tree
    a clean room checks out (`storage/repo/cleanroom.py`). The objects of that tree go into
    the repository, where the room's `git worktree add` finds them (a worktree whose
    commit only a scratch store holds would break `git gc` in the project while it
    exists); the rest, to the scratch store. None as for `snapshot`."""
    found = _snapshot(paths, budget, tracked=True)
    if found is None or found[1] is None:
        return None
    return found[0], found[1]


def _snapshot(
    paths: LoopPaths, budget: float, *, tracked: bool
) -> tuple[Snapshot, str | None] | None:
    deadline = time.monotonic() + budget

    def left() -> float:
        return deadline - time.monotonic()

    def pathspec(top: Path) -> list[str]:
        return loop_pathspec(paths, top)

    return _snapshot_at(paths.root, pathspec, left, tracked, limits.MAX_NESTED_DEPTH)


def _snapshot_at(
    root: Path,
    pathspec: Callable[[Path], list[str]],
    left: Callable[[], float],
    tracked: bool,
    depth: int,
) -> tuple[Snapshot, str | None] | None:
    where = _where(root, left())
    if where is None:
        return None
    top, real_index, objects = where
    commit = head(root, left())
    with scratch.store() as store:
        temp_index = store / "index"
        with contextlib.suppress(OSError):
            # copy2 keeps the index's mtime: git tells a file edited in the same second
            # as the index was written ("racily clean") by comparing the two, and a
            # fresh mtime would make such an edit look unchanged.
            shutil.copy2(real_index, temp_index)
        spec = pathspec(top)
        # The clean room checks the tracked files' tree out of the repository: its
        # objects go there (`storage/repo/cleanroom.py`); every other object, to the store.
        env = git_env(GIT_INDEX_FILE=str(temp_index), **scratch.objects_env(store, objects))
        first = git_env(GIT_INDEX_FILE=str(temp_index)) if tracked else env
        steps = [["add", "--update", "--", ":/"], *_drop(spec)]
        if tracked:
            steps.append(["write-tree"])
        done = _steps(steps, top, first, left)
        if done is None:
            return None
        tracked_tree = done.strip() if tracked else None
        found = _with_untracked(top, spec, env, left)
        if found is None or tracked_tree == "":
            return None
        tree, nested = found
        dirty = tree != EMPTY_TREE
        if commit is not None:
            diff = run_git(
                ["diff-index", "--cached", "--quiet", "HEAD", "--", *spec],
                root,
                env=env,
                timeout=max(left(), 0.001),
            )
            if diff is None or diff.code not in (0, 1):
                return None
            dirty = diff.code == 1
        if nested:
            folded = _fold_nested(top, nested, env, left, depth)
            if folded is None:
                return None
            tree, dirty = folded[0] or tree, dirty or folded[1]
        return Snapshot(commit, dirty, tree, branch(root, max(left(), 0.001))), tracked_tree


def _fold_nested(
    top: Path,
    nested: list[tuple[str, bool]],
    env: dict[str, str],
    left: Callable[[], float],
    depth: int,
) -> tuple[str | None, bool] | None:
    """The tree of the temporary index (in `env`) once each repository inside the work
    tree (`nested`: its path, and whether it is untracked) is in it as the tree its own
    work tree holds, in place of the commit a submodule's entry names: an edit inside a
    submodule changes the snapshot as an edit outside does. Whether any of them differs
    from what the project's HEAD holds; None when one cannot be read (too many, too
    deep, or git fails). The tree is None when none of them is checked out."""
    if len(nested) > limits.MAX_NESTED_REPOS or depth <= 0:
        return None
    entries: list[bytes] = []
    dirty = False

    def everything(_top: Path) -> list[str]:
        return [":/"]

    for rel, untracked in nested:
        inner = top / rel
        if not (inner / ".git").exists():  # a submodule not checked out: its commit
            continue
        found = _snapshot_at(inner, everything, left, False, depth - 1)
        if found is None:
            return None
        dirty = dirty or untracked or found[0].dirty
        entries.append(b"160000 %s\t%s\0" % (found[0].tree.encode(), os.fsencode(rel)))
    if not entries:
        return None, dirty
    steps: list[tuple[list[str], bytes | None]] = [
        (["update-index", "-z", "--index-info"], b"".join(entries)),
        (["write-tree", "--missing-ok"], None),
    ]
    written = _steps(steps, top, env, left)
    return (written.strip(), dirty) if written and written.strip() else None


def _where(root: Path | str, timeout: float) -> tuple[Path, Path, Path] | None:
    """The top of the work tree, the repository's index and its object directory."""
    if timeout <= 0:
        return None
    args = ["rev-parse", "--show-toplevel", "--git-path", "index", "--git-path", "objects"]
    done = run_git(args, root, timeout=timeout)
    lines = done.out.splitlines() if done is not None and done.ok else []
    if len(lines) != 3:
        return None
    top, index, objects = ((Path(root) / line).absolute() for line in lines)
    return top, index, objects


def _drop(spec: list[str]) -> list[list[str]]:
    """The step that takes the loop's directory out of the index, its tracked files
    included; none when the loop lives outside the work tree. (`git add` refuses, exit
    1, an exclude pathspec that names an ignored directory, so the loop's directory is
    staged with the rest and taken out afterwards.)"""
    left_out = _excluded(spec)
    return [["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *left_out]] if left_out else []


def _steps(
    steps: list[list[str]] | list[tuple[list[str], bytes | None]],
    cwd: Path,
    env: dict[str, str],
    left: Callable[[], float],
) -> str | None:
    """Run each git command of `steps` in turn (each its arguments, or its arguments and
    its stdin); what the last one said, or None when one fails or no time is left."""
    out = ""
    for step in steps:
        args, given = step if isinstance(step, tuple) else (step, None)
        done = run_git(args, cwd, env=env, timeout=left(), input=given) if left() > 0 else None
        if done is None or not done.ok:
            return None
        out = done.out
    return out


def _with_untracked(
    top: Path, spec: list[str], env: dict[str, str], left: Callable[[], float]
) -> tuple[str, list[tuple[str, bool]]] | None:
    """The tree of the temporary index (in `env`) once the untracked files that are not
    ignored join it, the loop's directory left out: each as git reads it, or, past the
    size limit, as its summary (`storage/system/scratch.py`). The repositories inside the work
    tree are left for `_fold_nested`: the untracked ones (git lists each
    as one name ending in `/`) and the submodules `.gitmodules` declares, each with
    whether it is untracked. None when git fails."""
    listing = ["ls-files", "-z", "--others", "--exclude-standard", "--full-name", "--", *spec]
    limit = limits.MAX_UNTRACKED_LIST_BYTES
    done = run_git(listing, top, env=env, timeout=left(), limit=limit) if left() > 0 else None
    if done is None or not done.ok:
        return None
    if len(done.out_bytes) >= limit:  # too many names to hold: git reads them all
        every = [["add", "--all", "--", ":/"], *_drop(spec), ["write-tree"]]
        found = _steps(every, top, env, left)
        return (found.strip(), []) if found else None
    names = [os.fsdecode(name) for name in done.out_bytes.split(b"\0") if name]
    nested = [(name.rstrip("/"), True) for name in names if name.endswith("/")]
    names = [name for name in names if not name.endswith("/")]
    nested += [(name, False) for name in _submodules(top, env, left)]
    config = _config(top, env, left) if names else ""
    read, summarised = scratch.split(top, names, scratch.threshold(config))
    steps: list[tuple[list[str], bytes | None]] = []
    if read:
        paths = b"".join(os.fsencode(name) + b"\0" for name in read)
        steps.append((["update-index", "--add", "--remove", "--replace", "-z", "--stdin"], paths))
    if summarised:
        info = scratch.index_info(summarised, scratch.object_format(config))
        steps.append((["update-index", "-z", "--index-info"], info))
    steps.append((["write-tree", *(["--missing-ok"] if summarised else [])], None))
    found = _steps(steps, top, env, left)
    return (found.strip(), nested) if found else None


def _submodules(top: Path, env: dict[str, str], left: Callable[[], float]) -> list[str]:
    """The paths of the submodules `.gitmodules` declares, as git reads that file."""
    if not (top / ".gitmodules").is_file():
        return []
    asked = ["config", "-z", "--file", ".gitmodules", "--get-regexp", r"^submodule\..*\.path$"]
    said = run_git(asked, top, env=env, timeout=left()) if left() > 0 else None
    if said is None or said.code != 0:
        return []
    found = (entry.partition("\n")[2] for entry in said.out.split("\0") if entry)
    return sorted({path.strip("/") for path in found if path.strip("/")})


def _config(top: Path, env: dict[str, str], left: Callable[[], float]) -> str:
    """What git's configuration says of the size limit and the object format (`git
    config -z --get-regexp`); "" when nothing, or when git cannot say."""
    asked = ["config", "-z", "--get-regexp", scratch.CONFIG_KEYS]
    said = run_git(asked, top, env=env, timeout=left()) if left() > 0 else None
    return said.out if said is not None and said.code == 0 else ""


def _excluded(spec: list[str]) -> list[str]:
    """The loop directory of `loop_pathspec`, as a positive pathspec for `git rm`."""
    return [f":(top){s.split(')', 1)[1]}" for s in spec if s.startswith(":(top,exclude)")]


def checkout_settings(root: Path | str, timeout: float = limits.GIT_TIMEOUT) -> str | None:
    """A fingerprint of what makes git write other content than a tree holds when it
    checks files out, or leave files out: its filters (`filter.*` in git config), the
    repository's own attributes file (`.git/info/attributes`, `core.attributesFile`)
    and its sparse checkout (`core.sparseCheckout*`, `info/sparse-checkout`). None
    outside a repository. A clean room checks files out, so such a setting added since
    the person's approval is a change to review."""
    import hashlib

    pattern = r"^(filter\.|core\.attributesfile|core\.sparsecheckout)"
    found = run_git(["config", "--get-regexp", pattern], root, timeout=timeout)
    args = ["rev-parse", "--git-path", "info/attributes", "--git-path", "info/sparse-checkout"]
    where = run_git(args, root, timeout=timeout)
    named = where.out.splitlines() if where is not None and where.ok else []
    if found is None or len(named) != 2 or found.code not in (0, 1):
        return None
    attributes, sparse = (_read_head(Path(root), name) for name in named)
    digest = hashlib.sha256(found.out.encode("utf-8", "surrogateescape") + b"\0" + attributes)
    if sparse:  # only then: the fingerprint of a repository without one is as it was
        digest.update(b"\0sparse\0" + sparse)
    return digest.hexdigest()[:32]


def _read_head(root: Path, name: str) -> bytes:
    """The start of the file git names `name` (relative to `root`); empty if none."""
    path = Path(name) if Path(name).is_absolute() else root / name
    try:  # bounded, and a pipe or a device put there is refused without blocking
        return fsio.read_regular(path, limits.MAX_GIT_OUTPUT_BYTES)[: limits.MAX_GIT_OUTPUT_BYTES]
    except OSError:
        return b""
