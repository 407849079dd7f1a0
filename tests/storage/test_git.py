"""The tree a check runs on (storage/repo/git.py, `snapshot`) in real repositories: the same
content gives the same id whatever is committed, the loop's directory and ignored
files are left out, and the repository's own index is never touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphstate.core import limits
from ralphstate.storage.repo import git
from ralphstate.storage.system.paths import LoopPaths
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


# -- repositories inside the work tree ------------------------------------------------------


def with_submodule(repo: Path, tmp_path: Path) -> Path:
    """`repo` with a submodule at `lib/`, committed; the submodule's work tree."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    init_repo(upstream, {"core.py": "VALUE = 1\n"})
    run_git(
        repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "lib"
    )
    run_git(repo, "commit", "-qm", "the submodule")
    return repo / "lib"


def test_an_edit_inside_a_submodule_changes_the_tree(repo: Path, tmp_path: Path) -> None:
    lib = with_submodule(repo, tmp_path)
    before = snap(repo)
    assert not before.dirty
    (lib / "core.py").write_text("VALUE = 2\n")
    edited = snap(repo)
    assert edited.tree != before.tree and edited.dirty
    (lib / "new.py").write_text("pass\n")  # untracked inside it: counts as well
    assert snap(repo).tree not in (before.tree, edited.tree)
    (lib / "new.py").unlink()
    # Committing inside the submodule, then its new commit in the project: same code.
    run_git(lib, "commit", "-qam", "two")
    assert snap(repo).tree == edited.tree
    run_git(repo, "commit", "-qam", "the submodule at two")
    committed = snap(repo)
    assert committed.tree == edited.tree and not committed.dirty
    (lib / "core.py").write_text("VALUE = 1\n")
    assert snap(repo).tree == before.tree  # the first content again: the first id


def test_a_repository_in_an_untracked_directory_is_read_like_the_rest(repo: Path) -> None:
    """An empty nested repository (`git init scratch`) made the snapshot fail; one with
    commits was taken as its commit only, so edits inside it were not seen."""
    before = snap(repo)
    run_git(repo, "init", "-q", "scratch")
    empty = snap(repo)
    assert empty.dirty
    (repo / "scratch" / "notes.txt").write_text("one\n")
    one = snap(repo)
    assert one.tree != empty.tree != before.tree
    run_git(repo / "scratch", "add", "notes.txt")
    run_git(repo / "scratch", "commit", "-qm", "notes")
    assert snap(repo).tree == one.tree
    (repo / "scratch" / "notes.txt").write_text("two\n")
    assert snap(repo).tree != one.tree


def test_more_nested_repositories_than_it_reads_make_the_snapshot_unknown(repo: Path) -> None:
    for n in range(limits.MAX_NESTED_REPOS):
        run_git(repo, "init", "-q", f"nested/{n}")
    assert git.snapshot(LoopPaths(repo, repo / ".loop")) is not None
    run_git(repo, "init", "-q", "nested/one-more")
    assert git.snapshot(LoopPaths(repo, repo / ".loop")) is None


def test_nested_repositories_deeper_than_it_reads_make_the_snapshot_unknown(repo: Path) -> None:
    inner = repo
    for level in range(limits.MAX_NESTED_DEPTH):
        inner = inner / f"level{level}"
        run_git(repo, "init", "-q", str(inner.relative_to(repo)))
    before = snap(repo)
    (inner / "deep.txt").write_text("seen\n")
    assert snap(repo).tree != before.tree
    run_git(repo, "init", "-q", str((inner / "too-deep").relative_to(repo)))
    assert git.snapshot(LoopPaths(repo, repo / ".loop")) is None
