"""The tree a check runs on (storage/git.py, `snapshot`) in real repositories: the same
content gives the same id whatever is committed, the loop's directory and ignored
files are left out, and the repository's own index is never touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphstate.core import limits
from ralphstate.storage import git
from ralphstate.storage.paths import LoopPaths
from tests.helpers.gitrepo import git as run_git
from tests.helpers.gitrepo import init_repo, use_identity


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "repo"
    root.mkdir()
    init_repo(root, {"src/app.py": "print(1)\n", ".gitignore": "build/\n"})
    (root / ".loop").mkdir()
    (root / ".loop" / "state.json").write_text("{}")
    return root


def snap(root: Path) -> git.Snapshot:
    found = git.snapshot(LoopPaths(root, root / ".loop"))
    assert found is not None
    return found


def test_outside_a_repository_there_is_no_snapshot(tmp_path: Path) -> None:
    (tmp_path / ".loop").mkdir()
    assert git.snapshot(LoopPaths(tmp_path, tmp_path / ".loop")) is None


def test_a_clean_tree_is_the_commits_tree(repo: Path) -> None:
    found = snap(repo)
    assert found.commit == run_git(repo, "rev-parse", "HEAD")
    assert found.tree == run_git(repo, "rev-parse", "HEAD^{tree}")
    assert (found.dirty, found.branch) == (False, "main")


def test_an_edit_changes_the_tree_and_committing_it_does_not(repo: Path) -> None:
    before = snap(repo)
    (repo / "src" / "app.py").write_text("print(2)\n")
    edited = snap(repo)
    assert edited.tree != before.tree
    assert (edited.commit, edited.dirty) == (before.commit, True)
    run_git(repo, "commit", "-qam", "two")
    committed = snap(repo)
    assert committed.tree == edited.tree  # the same code: the evidence stays fresh
    assert committed.commit != edited.commit and not committed.dirty


def test_untracked_files_count_and_ignored_ones_do_not(repo: Path) -> None:
    before = snap(repo)
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("binary")
    assert snap(repo).tree == before.tree
    (repo / "new.py").write_text("x = 1\n")
    after = snap(repo)
    assert after.tree != before.tree and after.dirty


def test_the_loops_own_directory_is_left_out_even_when_tracked(repo: Path) -> None:
    before = snap(repo)
    (repo / ".loop" / "state.json").write_text('{"iteration": 3}')
    assert snap(repo).tree == before.tree
    run_git(repo, "add", ".loop")
    run_git(repo, "commit", "-qm", "the loop")
    (repo / ".loop" / "state.json").write_text('{"iteration": 4}')
    after = snap(repo)
    assert after.tree == before.tree and not after.dirty


def test_the_repositorys_index_is_never_touched(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("print(3)\n")
    (repo / "new.py").write_text("x = 1\n")
    index = run_git(repo, "ls-files", "--stage")  # what the index holds, stat data aside
    status = run_git(repo, "status", "--porcelain")
    snap(repo)
    assert run_git(repo, "ls-files", "--stage") == index
    assert run_git(repo, "status", "--porcelain") == status == "M src/app.py\n?? .loop/\n?? new.py"


def test_a_loop_in_a_subdirectory_sees_the_whole_work_tree(repo: Path) -> None:
    sub = repo / "pkg"
    (sub / ".loop").mkdir(parents=True)
    paths = LoopPaths(sub, sub / ".loop")
    before = git.snapshot(paths)
    (repo / "src" / "app.py").write_text("print(4)\n")
    after = git.snapshot(paths)
    assert before is not None and after is not None and before.tree != after.tree


def test_before_the_first_commit_the_tree_is_still_known(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    run_git(root, "init", "-q")
    (root / ".loop").mkdir()
    (root / "a.txt").write_text("a")
    found = git.snapshot(LoopPaths(root, root / ".loop"))
    assert found is not None
    assert (found.commit, found.dirty) == (None, True)
    assert found.tree != git.EMPTY_TREE


def test_a_loop_directory_git_ignores_is_left_out_too(repo: Path) -> None:
    before = snap(repo)
    (repo / ".gitignore").write_text("build/\n.loop/\n")
    run_git(repo, "commit", "-qam", "ignore the loop")
    (repo / ".loop" / "state.json").write_text('{"iteration": 9}')
    after = snap(repo)
    assert after.tree != before.tree  # .gitignore changed, and nothing else counts
    assert after.tree == run_git(repo, "rev-parse", "HEAD^{tree}") and not after.dirty


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one byte more"])
def test_max_git_output_bytes(repo: Path, extra: int) -> None:
    data = b"x" * (limits.MAX_GIT_OUTPUT_BYTES + extra)
    (repo / "big.bin").write_bytes(data)
    blob = run_git(repo, "hash-object", "-w", "big.bin")
    done = git.run_git(["cat-file", "blob", blob], repo)
    assert done is not None and done.ok
    assert done.out.encode() == data[: limits.MAX_GIT_OUTPUT_BYTES]


def test_a_git_command_past_its_timeout_is_stopped(repo: Path) -> None:
    done = git.run_git(["-c", "alias.nap=!sleep 30", "nap"], repo, timeout=0.3)
    assert done is None
    assert limits.GIT_TIMEOUT == 60.0  # every other call waits this long at most


def test_a_snapshot_shares_one_time_budget(repo: Path) -> None:
    assert limits.GIT_SNAPSHOT_SECONDS == 20.0
    paths = LoopPaths(repo, repo / ".loop")
    assert git.snapshot(paths, budget=limits.GIT_SNAPSHOT_SECONDS) is not None
    assert git.snapshot(paths, budget=0.0) is None  # nothing left: no answer, not a wrong one
