"""The guarded files as git holds them (docs/explanation/proof.md, "Guarded files"):
`snapshot` gives the tree a person approves, `compare` what changed since, `diff`
shows it and `restore` puts it back.

The tree of a snapshot holds the tracked files the guards name, as the work tree has
them, and every tracked file whose name changes how tests run (`testfiles.
NEW_CONFIG_FILES`) wherever it is, so that `compare` knows which of those are new.
It is computed in a temporary copy of the repository's index: the entries outside that
set are dropped, `git add -u` reads again only the files whose stat data changed since
the index last saw them, and `git write-tree` names the result. The repository's own
index, branch and history are never touched (only `restore` writes, and only the work
tree's files it is given); its objects get only what a `snapshot` reads (the approved
tree must be there when `compare` reads it, long after): what `compare` and `diff`
write goes to a scratch store (`storage/system/scratch.py`), removed when they end.

Each function's git commands share one time budget; every answer is bounded
(`storage/repo/git.py`, `run_git`); outside a repository, when git fails, or when the
approved tree is no longer in the repository, the answer is None.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ralphstate.core import limits
from ralphstate.storage.repo import testfiles
from ralphstate.storage.repo.git import Done, run_git
from ralphstate.storage.repo.gitenv import git_env
from ralphstate.storage.system import scratch
from ralphstate.storage.system.paths import LoopPaths

# What `git diff-index --name-status` says a file became; any other letter is a change.
_DELETED, _ADDED = "D", "A"
# The most files one `git checkout-index` is given at once.
_BATCH = 200
_TREE_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@dataclass
class Changes:
    """What became of the guarded files since the approved tree, each list relative to
    the project root: `changed` and `deleted` approved files, `new_config` new files
    anywhere in the project that change how tests run (tracked, or untracked and not
    ignored), `new_tests` the other new files under the guards. `tree` is the guarded
    files' tree now (tracked files only); `clipped` says a list was cut at git's bound."""

    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    new_config: list[str] = field(default_factory=list)
    new_tests: list[str] = field(default_factory=list)
    tree: str = ""
    clipped: bool = False

    @property
    def to_review(self) -> list[str]:
        """The files that need a person's review: changed, deleted, new configuration."""
        return [*self.changed, *self.deleted, *self.new_config]

    def as_dict(self) -> dict[str, object]:
        return {
            "changed": self.changed,
            "deleted": self.deleted,
            "newConfig": self.new_config,
            "newTests": self.new_tests,
            "tree": self.tree,
            "clipped": self.clipped,
        }


@dataclass
class Restored:
    """What `restore` did: the files put back as approved, and the files removed (the
    approved tree does not hold them)."""

    back: list[str]
    removed: list[str]


@dataclass
class _Repo:
    root: Path
    prefix: str  # the project root's place in the work tree: "" or "sub/dir/"
    index: Path  # the repository's own index
    objects: Path  # and its object directory
    deadline: float

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def git(self, args: list[str], env: dict[str, str]) -> Done | None:
        """`git ARGS` in the project root within the budget; None unless it succeeded."""
        if self.left() <= 0:
            return None
        done = run_git(args, self.root, env=env, timeout=self.left())
        return done if done is not None and done.ok else None

    def relative(self, path: str) -> str:
        """A path git gave from the top of the work tree, relative to the project root."""
        if path.startswith(self.prefix):
            return path[len(self.prefix) :]
        return posixpath.relpath(path, self.prefix.rstrip("/"))


def _repo(root: Path, budget: float) -> _Repo | None:
    deadline = time.monotonic() + budget
    asked = ["rev-parse", "--show-prefix", "--git-path", "index", "--git-path", "objects"]
    done = run_git(asked, root, timeout=budget)
    if done is None or not done.ok or len(done.out.splitlines()) < 3:
        return None
    prefix, index, objects = done.out.splitlines()[:3]
    where, store = ((root / p).absolute() for p in (index, objects))
    return _Repo(root, prefix.strip(), where, store, deadline)


@contextlib.contextmanager
def _scratch(repo: _Repo, copy: bool = True, keep: bool = False) -> Iterator[dict[str, str]]:
    """git's environment with a temporary index: a copy of the repository's (its
    mtime kept, so git still tells a file edited in the same second as the index was
    written), or with `copy` false a new one. The objects git writes go to a scratch
    store (`storage/system/scratch.py`), or with `keep` to the repository: a tree a person
    approves must be there when it is compared, long after."""
    with scratch.store() as where:
        temp = where / "index"
        if copy:
            with contextlib.suppress(OSError):  # no index yet: git starts an empty one
                shutil.copy2(repo.index, temp)
        objects = {} if keep else scratch.objects_env(where, repo.objects)
        yield git_env(GIT_INDEX_FILE=str(temp), **objects)


def _config_specs(root: Path) -> list[str]:
    """The test configuration's pathspecs: its names anywhere, and what at the project
    root shadows a standard library module (`testfiles.shadows`)."""
    names = [testfiles.anywhere(name) for name in testfiles.NEW_CONFIG_FILES]
    return names + testfiles.shadows(root)


def _configs(repo: _Repo) -> list[str] | None:
    """The tracked files anywhere in the project whose names change how tests run, as
    literal pathspecs: named one by one, they cost `git rm` less than the globs."""
    done = repo.git(["ls-files", "-z", "--", *_config_specs(repo.root)], git_env())
    if done is None:
        return None
    return [f":(literal){name}" for name in testfiles.split_names(done.out)[0]]


def _only(repo: _Repo, env: dict[str, str], keep: list[str]) -> bool:
    """Leave in the scratch index only the entries `keep` names, each as the work tree
    has it now (a file gone from it leaves the index too)."""
    drop = ["rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--", ":/"]
    drop += [testfiles.negated(spec) for spec in keep]
    # `:/` never fails to match, as a pathspec of the guards alone might in `git add`.
    return repo.git(drop, env) is not None and repo.git(["add", "-u", "--", ":/"], env) is not None


def _tree(repo: _Repo, env: dict[str, str], guards: list[str]) -> tuple[str, list[str]] | None:
    """The id of the scratch index's tree once it holds only the guarded files and the
    tracked test configuration, and the pathspecs of the latter."""
    configs = _configs(repo)
    if configs is None or not _only(repo, env, [*guards, *configs]):
        return None
    done = repo.git(["write-tree"], env)
    return (done.out.strip(), configs) if done is not None else None


def snapshot(
    paths: LoopPaths, guards: list[str], budget: float = limits.GIT_SNAPSHOT_SECONDS
) -> str | None:
    """The id of the tree holding the guarded files as the work tree has them now (the
    tracked files the guards name, and the tracked test configuration anywhere); None
    outside a git repository."""
    repo = _repo(paths.root, budget)
    if repo is None:
        return None
    with _scratch(repo, keep=True) as env:
        made = _tree(repo, env, guards)
    return made[0] if made is not None else None


def _listing(done: Done | None, found: Changes) -> list[str] | None:
    if done is None:
        return None
    names, cut = testfiles.split_names(done.out)
    found.clipped |= cut
    return names


def compare(
    paths: LoopPaths,
    approved_tree: str,
    guards: list[str],
    budget: float = limits.GIT_SNAPSHOT_SECONDS,
) -> Changes | None:
    """What changed in the guarded files since `approved_tree` (a `snapshot`), as the
    work tree has them now. A new file under the guards is a new test, unless its name
    changes how tests run (`testfiles.is_config`); such a file is new configuration
    anywhere in the project. Ignored files are neither. None outside a repository, when
    git fails or `approved_tree` is not a tree it holds."""
    if not _TREE_ID.fullmatch(approved_tree):
        return None
    repo = _repo(paths.root, budget)
    if repo is None:
        return None
    with _scratch(repo) as env:
        made = _tree(repo, env, guards)
        if made is None:
            return None
        found = Changes(tree=made[0])
        since = ["diff-index", "--cached", "-z", "--no-renames", approved_tree]
        if guards:
            listed = _listing(repo.git([*since, "--name-status", "--", *guards], env), found)
            if listed is None:
                return None
            _sort(found, [repo.relative(p) for p in listed[1::2]], listed[0::2])
        if made[1]:
            added = [*since, "--name-only", "--diff-filter=A", "--", *made[1]]
            listed = _listing(repo.git(added, env), found)
            if listed is None:
                return None
            found.new_config += [repo.relative(p) for p in listed]
        found.changed += _runner_settings(repo, env, approved_tree, found.tree)
    # Untracked and not ignored, by the repository's own index.
    others = ["ls-files", "-z", "--others", "--exclude-standard", "--", *guards]
    others += [*_config_specs(repo.root), *_NOT_WORK]
    listed = _listing(repo.git(others, git_env()), found)
    if listed is None:
        return None
    _sort(found, listed, [_ADDED] * len(listed))
    found.new_config = list(dict.fromkeys(found.new_config))
    return found


# Untracked bytecode (and extension modules built in place) is what running or building
# the project leaves where nothing ignores it: no clean room holds it, and it is neither
# a new test nor new configuration (committed, it is).
_NOT_WORK = [f":(exclude,glob)**/{name}" for name in testfiles.BUILT]


# A file that may hold a test runner's settings among much else: a change to it counts
# as a change to the tests only when it holds (or held) them.
_RUNNER_SETTINGS = {"pyproject.toml": ("[tool.pytest", "[tool.coverage")}


def _runner_settings(repo: _Repo, env: dict[str, str], approved: str, now: str) -> list[str]:
    """The pyproject.toml files changed since `approved` that hold pytest's settings,
    before or after: `addopts = "-k 'not slow'"` there deselects tests."""
    spec = [f":(glob)**/{name}" for name in _RUNNER_SETTINGS]
    args = ["diff-tree", "-r", "-z", "--name-only", "--diff-filter=M", approved, now]
    done = repo.git([*args, "--", *spec], env)
    if done is None or not done.ok:
        return []
    found = []
    for path in [p for p in done.out.split("\0") if p]:
        marks = _RUNNER_SETTINGS.get(path.rsplit("/", 1)[-1], ())
        texts = []
        for tree in (approved, now):
            shown = repo.git(["cat-file", "-p", f"{tree}:{path}"], env)
            texts.append(shown.out if shown is not None and shown.ok else "")
        if any(mark in text for mark in marks for text in texts):
            found.append(repo.relative(path))
    return found


def _sort(found: Changes, files: list[str], how: list[str]) -> None:
    for path, letter in zip(files, how, strict=True):
        if letter == _DELETED:
            found.deleted.append(path)
        elif letter != _ADDED:
            found.changed.append(path)
        elif testfiles.is_config(path) or testfiles.shadows_stdlib(path):
            found.new_config.append(path)
        else:
            found.new_tests.append(path)


def diff(
    paths: LoopPaths,
    approved_tree: str,
    files: list[str],
    limit_bytes: int = limits.MAX_GUARD_DIFF_BYTES,
    budget: float = limits.GIT_SNAPSHOT_SECONDS,
) -> str | None:
    """The unified diff of `files` (relative to the project root) from their approved
    content to the work tree's, at most `limit_bytes` of it (cut at a line, which
    says so); None when git cannot give it."""
    if not files:
        return ""
    if not _TREE_ID.fullmatch(approved_tree):
        return None
    repo = _repo(paths.root, budget)
    if repo is None:
        return None
    specs = [f":(literal){f}" for f in files]
    with _scratch(repo) as env:
        if not _only(repo, env, specs):
            return None
        present = [s for s, f in zip(specs, files, strict=True) if os.path.lexists(paths.root / f)]
        if present and repo.git(["add", "-f", "--", *present], env) is None:
            return None
        done = repo.git(
            [
                "diff-index",
                "--cached",
                "-p",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--no-renames",
                approved_tree,
                "--",
                *specs,
            ],
            env,
        )
    if done is None:
        return None
    return _clip(done.out, limit_bytes)


def _clip(text: str, limit_bytes: int) -> str:
    data = text.encode("utf-8", "surrogatepass")
    cut = len(data) >= limits.MAX_GIT_OUTPUT_BYTES
    if len(data) > limit_bytes:
        data, cut = data[: data.rfind(b"\n", 0, limit_bytes) + 1], True
    if not cut:
        return text
    shown = data.decode("utf-8", "replace")
    return shown + f"… the diff goes on (shown: its first {len(shown.encode()):,} bytes)\n"


def restore(
    paths: LoopPaths,
    approved_tree: str,
    files: list[str],
    budget: float = limits.GIT_SNAPSHOT_SECONDS,
) -> Restored | None:
    """Put `files` (relative to the project root) back in the work tree as the approved
    tree holds them. This OVERWRITES their current content, and REMOVES those the
    approved tree does not hold (a new conftest.py); the repository's index is left
    as it is. None when git cannot do it (nothing is removed then)."""
    if not _TREE_ID.fullmatch(approved_tree):
        return None
    repo = _repo(paths.root, budget)
    if repo is None:
        return None
    with _scratch(repo, copy=False) as env:
        if repo.git(["read-tree", approved_tree], env) is None:
            return None
        held: set[str] = set()
        for start in range(0, len(files), _BATCH):
            batch = [f":(literal){f}" for f in files[start : start + _BATCH]]
            found = repo.git(["ls-files", "-z", "--", *batch], env)
            if found is None:
                return None
            held.update(testfiles.split_names(found.out)[0])
        back = [f for f in files if f in held]
        for start in range(0, len(back), _BATCH):
            batch = back[start : start + _BATCH]
            if repo.git(["checkout-index", "-f", "-q", "--", *batch], env) is None:
                return None
    removed = [f for f in files if f not in held and _remove(paths.root, f)]
    return Restored(back, removed)


def _remove(root: Path, name: str) -> bool:
    """Delete the work tree's file `name`, never a directory, never outside `root`."""
    path = root / name
    top = os.path.realpath(root)
    where = os.path.realpath(path.parent)
    if os.path.commonpath([top, where]) != top or (path.is_dir() and not path.is_symlink()):
        return False
    try:
        path.unlink()
    except OSError:
        return False
    return True
