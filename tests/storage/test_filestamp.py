"""The stamp of the project's files (storage/repo/filestamp.py) in real directories and real
git repositories: a write, a new file or a removed one changes it; what the project
does not hold (ignored files, tools' caches, the loop's own directory) does not; it
stays within its bounds (`MAX_STAMP_FILES`, `STAMP_SECONDS`)."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest

from ralphstate.core import limits
from ralphstate.storage.repo import filestamp
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.gitrepo import git, init_repo, use_identity

NEEDS_GIT = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def plain(tmp_path: Path) -> LoopPaths:
    """A project outside git, with a loop."""
    root = tmp_path / "plain"
    (root / ".loop").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("x = 1\n")
    return LoopPaths(root, root / ".loop")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LoopPaths:
    """A git repository with one commit, and a loop."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "repo"
    root.mkdir()
    init_repo(root, {"src/app.py": "x = 1\n", ".gitignore": "build/\n"})
    (root / ".loop").mkdir()
    return LoopPaths(root, root / ".loop")


def changes(paths: LoopPaths, *writes: str) -> bool:
    """Whether writing each of `writes` (a path under the project) changes the stamp."""
    before = filestamp.stamp(paths)
    assert before is not None
    for name in writes:
        path = paths.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(path.read_text() + "more\n" if path.exists() else "new\n")
    after = filestamp.stamp(paths)
    assert after is not None
    return after != before


@pytest.mark.parametrize("where", ["plain", "repo"])
def test_a_write_a_new_file_and_a_removal_change_the_stamp(
    where: str, request: pytest.FixtureRequest
) -> None:
    paths: LoopPaths = request.getfixturevalue(where)
    assert filestamp.stamp(paths) == filestamp.stamp(paths)  # nothing changed, same stamp
    assert changes(paths, "src/app.py")
    assert changes(paths, "src/app.py")  # an already changed file, changed again
    assert changes(paths, "src/new.py")
    before = filestamp.stamp(paths)
    (paths.root / "src" / "new.py").unlink()
    assert filestamp.stamp(paths) != before


def test_outside_git_caches_packages_and_the_loop_do_not_count(plain: LoopPaths) -> None:
    assert not changes(
        plain,
        ".loop/state.json",
        ".pytest_cache/v/cache/nodeids",
        ".coverage",
        "src/__pycache__/app.cpython-312.pyc",
        "node_modules/left-pad/index.js",
    )


def test_in_git_ignored_files_and_the_loop_do_not_count(repo: LoopPaths) -> None:
    assert not changes(repo, ".loop/state.json", "build/app.bin")
    assert changes(repo, ".pytest_cache/x")  # git does not ignore it here: it counts


def test_in_git_a_commit_counts(repo: LoopPaths) -> None:
    before = filestamp.stamp(repo)
    git(repo.root, "commit", "-q", "--allow-empty", "-m", "nothing")
    assert filestamp.stamp(repo) != before


def test_a_loop_kept_outside_the_project_is_left_out(tmp_path: Path) -> None:
    """`RALPHSTATE_DIR` may put the loop's directory under any name."""
    root = tmp_path / "project"
    (root / "loop state").mkdir(parents=True)
    (root / "app.py").write_text("x = 1\n")
    paths = LoopPaths(root, root / "loop state")
    assert not changes(paths, "loop state/state.json")
    assert changes(paths, "app.py")


@pytest.mark.parametrize("limit", [5, 4], ids=["at the limit", "one entry more"])
def test_max_stamp_files_outside_git(
    plain: LoopPaths, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries are read breadth first: what a bound leaves out is the deepest."""
    shutil.rmtree(plain.dir)
    (plain.root / "src" / "deep").mkdir()
    (plain.root / "src" / "deep" / "last.py").write_text("x = 1\n")
    # The entries: src; src/app.py, src/deep; src/deep/last.py (4, and 5 with `top.py`).
    (plain.root / "top.py").write_text("x = 1\n")
    monkeypatch.setattr(limits, "MAX_STAMP_FILES", limit)
    assert changes(plain, "src/deep/last.py") is (limit == 5)
    assert changes(plain, "src/app.py")


@NEEDS_GIT
@pytest.mark.parametrize("limit", [3, 2], ids=["at the limit", "one path more"])
def test_max_stamp_files_in_git(
    repo: LoopPaths, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The paths `git status` lists, in its order: each within the bound is statted."""
    for name in ("u1.txt", "u2.txt", "u3.txt"):
        (repo.root / name).write_text("new\n")
    monkeypatch.setattr(limits, "MAX_STAMP_FILES", limit)
    before = filestamp.stamp(repo)
    time.sleep(0.05)
    (repo.root / "u3.txt").write_text("NEW\n")  # the same size: only its times tell
    assert (filestamp.stamp(repo) != before) is (limit == 3)


@NEEDS_GIT
@pytest.mark.skipif(sys.platform == "win32", reason="a shell script named git")
def test_stamp_seconds(repo: LoopPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `git status` past the bound is stopped, and the stamp is None: no answer
    rather than a wrong one."""
    assert limits.STAMP_SECONDS == 10.0
    assert filestamp.stamp(repo) is not None
    slow = tmp_path / "bin" / "git"
    slow.parent.mkdir()
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(slow.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{slow.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(limits, "STAMP_SECONDS", 0.5)
    started = time.monotonic()
    assert filestamp.stamp(repo) is None
    assert time.monotonic() - started < 10
