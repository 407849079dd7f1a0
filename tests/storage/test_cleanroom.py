"""The clean room (storage/repo/cleanroom.py) in real repositories: it holds the tracked files
as the work tree holds them, never an untracked or ignored one; restored paths are as
the given tree holds them; the repository's index is never touched; and the room is
always removed, by `close` or, after a crash, by the next room."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ralphstate.core import limits
from ralphstate.storage.repo import cleanroom, git
from ralphstate.storage.system import scratch
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.checks import alive, wait_for
from tests.helpers.gitrepo import git as run_git
from tests.helpers.gitrepo import init_repo, use_identity

FILES = {
    "src/app.py": "VALUE = 1\n",
    "tests/test_app.py": "assert VALUE == 1\n",
    "README": "the project\n",
    ".gitignore": "build/\n.loop/\n",
}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "repo"
    root.mkdir()
    init_repo(root, FILES)
    (root / ".loop").mkdir()
    (root / ".loop" / "state.json").write_text("{}")
    return root


def paths_of(root: Path) -> LoopPaths:
    return LoopPaths(root, root / ".loop")


def files(top: Path) -> dict[str, str]:
    """Every file under `top` but git's own, by its path from `top`."""
    found = {}
    for path in sorted(top.rglob("*")):
        if path.is_file() and ".git" not in path.relative_to(top).parts:
            found[path.relative_to(top).as_posix()] = path.read_text()
    return found


def rooms(repo: Path) -> list[str]:
    """The worktrees git knows of, besides the repository's own."""
    listed = run_git(repo, "worktree", "list", "--porcelain").splitlines()
    return [line[len("worktree ") :] for line in listed if line.startswith("worktree ")][1:]


def leftovers() -> list[str]:
    """This process's rooms on the disk."""
    mine = f"{cleanroom.PREFIX}{os.getpid()}-"
    where = scratch.own() or Path(tempfile.gettempdir())
    return [p.name for p in where.iterdir() if p.name.startswith(mine)]


def opened(root: Path, **kw: object) -> cleanroom.Room:
    room = cleanroom.open_room(paths_of(root), **kw)  # type: ignore[arg-type]
    assert room is not None
    return room


def test_the_room_holds_the_tracked_files_as_the_work_tree_holds_them(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("VALUE = 2\n")  # an edit, not committed
    (repo / "README").unlink()  # a deletion, not committed
    (repo / "helper.py").write_text("untracked\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.txt").write_text("ignored\n")
    (repo / ".loop" / "history.jsonl").write_text("the loop's own\n")
    status = run_git(repo, "status", "--porcelain")  # which refreshes the index
    index = (repo / ".git" / "index").read_bytes()
    room = opened(repo)
    try:
        assert files(room.top) == {
            ".gitignore": FILES[".gitignore"],
            "src/app.py": "VALUE = 2\n",
            "tests/test_app.py": FILES["tests/test_app.py"],
        }
        assert room.cwd == room.top and room.top.name == repo.name
        # Inside, HEAD is the room's own commit on top of the project's, and nothing
        # differs from it: a check that asks git sees a clean tree.
        assert run_git(room.top, "rev-parse", "HEAD~1") == run_git(repo, "rev-parse", "HEAD")
        assert run_git(room.top, "status", "--porcelain") == ""
        assert run_git(room.top, "rev-parse", "HEAD^{tree}") == room.tree
        # The work tree's tree as `git.snapshot` has it, untracked files in.
        snap = git.snapshot(paths_of(repo))
        assert snap is not None and room.code.tree == snap.tree != room.tree
        assert room.code.dirty
    finally:
        cleanroom.close(room)
    assert (repo / ".git" / "index").read_bytes() == index  # never touched
    assert run_git(repo, "status", "--porcelain") == status
    assert rooms(repo) == [] and not room.scratch.exists() and leftovers() == []


def test_outside_a_repository_there_is_no_room(tmp_path: Path) -> None:
    (tmp_path / ".loop").mkdir()
    assert cleanroom.open_room(paths_of(tmp_path)) is None


def test_before_the_first_commit_the_room_holds_what_is_staged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "fresh"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    (root / "added.py").write_text("x = 1\n")
    (root / "not added.py").write_text("y = 2\n")
    run_git(root, "add", "added.py")
    room = opened(root)
    try:
        assert files(room.top) == {"added.py": "x = 1\n"}
    finally:
        cleanroom.close(room)
    assert rooms(root) == []


def test_a_project_in_a_subdirectory_runs_in_the_same_directory_of_the_room(
    repo: Path,
) -> None:
    sub = repo / "services" / "api"
    sub.mkdir(parents=True)
    (sub / "main.py").write_text("API = 1\n")
    run_git(repo, "add", "services")
    (sub / ".loop").mkdir()
    room = cleanroom.open_room(LoopPaths(sub, sub / ".loop"))
    assert room is not None
    try:
        assert room.cwd == room.top / "services" / "api"
        assert (room.cwd / "main.py").read_text() == "API = 1\n"
        assert (room.top / "src" / "app.py").exists()  # the whole repository is there
    finally:
        cleanroom.close(room)


def approved_tree(repo: Path, files: dict[str, str]) -> str:
    """A tree of `files` made in a scratch index, as a person's approval would keep it."""
    env = dict(os.environ, GIT_INDEX_FILE=str(repo.parent / "approved.index"))
    for name, text in files.items():
        blob = (
            subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                cwd=repo,
                input=text.encode(),
                capture_output=True,
                check=True,
                env=env,
            )
            .stdout.decode()
            .strip()
        )
        subprocess.run(
            ["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}"],
            cwd=repo,
            check=True,
            env=env,
        )
    done = subprocess.run(["git", "write-tree"], cwd=repo, capture_output=True, check=True, env=env)
    return done.stdout.decode().strip()


def test_restored_paths_are_as_the_given_tree_holds_them(repo: Path) -> None:
    approved = approved_tree(
        repo, {"tests/test_app.py": "assert VALUE == 1  # approved\n", "tests/data.txt": "42\n"}
    )
    # The agent weakens the test, deletes the data, adds a conftest.py that skips it
    # all (and git-adds it: a tracked file), and adds a test for new code elsewhere.
    (repo / "tests" / "test_app.py").write_text("assert True\n")
    (repo / "tests" / "conftest.py").write_text("collect_ignore_glob = ['*']\n")
    (repo / "other_test.py").write_text("assert 1\n")
    run_git(repo, "add", "tests", "other_test.py")
    room = opened(repo, restore=(approved, ["tests", "no/such/path"]))
    try:
        held = files(room.top)
        assert held["tests/test_app.py"] == "assert VALUE == 1  # approved\n"
        assert held["tests/data.txt"] == "42\n"
        assert "tests/conftest.py" not in held  # the approved tree has none
        assert held["other_test.py"] == "assert 1\n"  # outside the restored paths
        assert run_git(room.top, "status", "--porcelain") == ""
        assert room.tree == run_git(room.top, "rev-parse", "HEAD^{tree}")
    finally:
        cleanroom.close(room)
    assert rooms(repo) == []


def test_restored_paths_are_relative_to_the_project_root(repo: Path) -> None:
    sub = repo / "pkg"
    (sub / "tests").mkdir(parents=True)
    (sub / "tests" / "t.py").write_text("weakened\n")
    run_git(repo, "add", "pkg")
    (sub / ".loop").mkdir()
    approved = approved_tree(repo, {"pkg/tests/t.py": "approved\n"})
    room = cleanroom.open_room(LoopPaths(sub, sub / ".loop"), restore=(approved, ["tests"]))
    assert room is not None
    try:
        assert (room.cwd / "tests" / "t.py").read_text() == "approved\n"
    finally:
        cleanroom.close(room)


def test_max_restore_index_bytes(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    approved = approved_tree(repo, {f"tests/t{i}.py": f"{i}\n" for i in range(20)})
    entry = len(f"100644 {'0' * 40} 0\ttests/t10.py\0")
    monkeypatch.setattr(limits, "MAX_RESTORE_INDEX_BYTES", entry * 20 + 1)
    room = opened(repo, restore=(approved, ["tests"]))
    assert len(files(room.top)) > 20
    cleanroom.close(room)
    monkeypatch.setattr(limits, "MAX_RESTORE_INDEX_BYTES", entry * 20 - 40)
    with pytest.raises(cleanroom.CleanRoomError, match="paths to restore take more than"):
        cleanroom.open_room(paths_of(repo), restore=(approved, ["tests"]))
    assert rooms(repo) == [] and leftovers() == []


def test_clean_room_seconds(repo: Path) -> None:
    """Making a room within its budget, and past it: one sentence, nothing left behind."""
    room = opened(repo, budget=limits.CLEAN_ROOM_SECONDS)
    cleanroom.close(room)
    with pytest.raises(cleanroom.CleanRoomError, match="could not make the clean room within"):
        cleanroom.open_room(paths_of(repo), budget=0.0001)
    assert rooms(repo) == [] and leftovers() == []


def test_a_bad_restore_tree_is_one_sentence_and_leaves_nothing(repo: Path) -> None:
    with pytest.raises(cleanroom.CleanRoomError, match="git failed to restore the approved"):
        cleanroom.open_room(paths_of(repo), restore=("0" * 40, ["tests"]))
    assert rooms(repo) == [] and leftovers() == []


def test_close_removes_what_the_checks_left_even_read_only(repo: Path) -> None:
    room = opened(repo)
    junk = room.cwd / "node_modules" / "pkg"
    junk.mkdir(parents=True)
    (junk / "index.js").write_text("x")
    junk.chmod(0o500)
    (room.cwd / "src" / "app.py").write_text("changed in the room\n")
    cleanroom.close(room)
    assert not room.scratch.exists() and rooms(repo) == []
    assert (repo / "src" / "app.py").read_text() == FILES["src/app.py"]


KILLED = r"""
import os, sys, time
from ralphstate.storage.repo import cleanroom
from ralphstate.storage.system.paths import LoopPaths
root = sys.argv[1]
room = cleanroom.open_room(LoopPaths(root, os.path.join(root, ".loop")))
print(room.top, flush=True)
time.sleep(60)
"""


def test_a_room_whose_process_was_killed_is_removed_by_the_next(repo: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(repo)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        top = Path(child.stdout.readline().strip())
        assert top.is_dir() and rooms(repo) == [str(top)]
        # A room whose process still runs is never taken away.
        assert cleanroom.clear_leftovers(repo, 10) == [] and top.is_dir()
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    wait_for(lambda: not alive(child.pid), "the killed process to be gone")
    assert top.is_dir() and rooms(repo) == [str(top)]  # what a crash leaves
    room = opened(repo)  # the next room takes it away
    try:
        assert not top.parent.exists() and rooms(repo) == [str(room.top)]
    finally:
        cleanroom.close(room)
    assert rooms(repo) == []


def test_a_room_whose_directory_is_gone_is_pruned(repo: Path) -> None:
    room = opened(repo)
    shutil.rmtree(room.scratch)  # the system cleaned its temporary directory
    assert rooms(repo) == [str(room.top)]
    assert cleanroom.clear_leftovers(repo, 10) == [room.top]
    assert rooms(repo) == []


def test_a_record_whose_room_is_a_link_removes_nothing_through_it(
    repo: Path, tmp_path: Path
) -> None:
    """A record ralphstate did not write (or a room put back as a link) names a link:
    the record goes, the link and what it names stay."""
    mine = scratch.own()
    assert mine is not None
    target = tmp_path / "elsewhere"
    (target / "repo").mkdir(parents=True)
    (target / "repo" / "keep.txt").write_text("keep\n")
    name = f"{cleanroom.PREFIX}1-linked"
    link = mine / name
    link.symlink_to(target, target_is_directory=True)
    (mine / cleanroom.RECORDS).mkdir(exist_ok=True)
    record = mine / cleanroom.RECORDS / f"{name}.json"
    record.write_text(json.dumps({"pid": 999999999, "repo": str(repo), "top": "repo"}))
    try:
        assert cleanroom.clear_leftovers(repo, 10) == []
        assert (target / "repo" / "keep.txt").read_text() == "keep\n"
        assert link.is_symlink() and not record.exists()
    finally:
        link.unlink()


def test_another_repositorys_leftover_is_left_to_it(repo: Path, tmp_path: Path) -> None:
    mine = scratch.own()
    assert mine is not None
    room_dir = mine / f"{cleanroom.PREFIX}1-other"
    (room_dir / "other").mkdir(parents=True)
    (mine / cleanroom.RECORDS).mkdir(exist_ok=True)
    record = mine / cleanroom.RECORDS / f"{room_dir.name}.json"
    other = {"pid": 999999999, "repo": str(tmp_path / "other"), "top": "other"}
    record.write_text(json.dumps(other))
    try:
        assert cleanroom.clear_leftovers(repo, 10) == []
        assert (room_dir / "other").is_dir() and record.exists()
    finally:
        shutil.rmtree(room_dir)
        record.unlink()


def test_untracked_names_what_git_does_not_ignore(repo: Path) -> None:
    assert cleanroom.untracked(paths_of(repo)) == []
    (repo / "helper.py").write_text("x")
    (repo / "newpkg").mkdir()
    (repo / "newpkg" / "a.py").write_text("x")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("x")
    assert cleanroom.untracked(paths_of(repo)) == ["helper.py", "newpkg/"]


def test_a_sparse_checkout_leaves_nothing_out_of_the_room(repo: Path) -> None:
    """A sparse checkout (whose patterns git copies into a new worktree) that leaves
    the person's test out of the work tree does not leave it out of the room, and it
    changes the checkout settings a person's approval recorded."""
    before = git.checkout_settings(repo)
    run_git(repo, "sparse-checkout", "set", "--no-cone", "/*", "!/tests/test_app.py")
    assert not (repo / "tests" / "test_app.py").exists()
    assert git.checkout_settings(repo) not in (None, before)
    room = opened(repo)
    try:
        assert files(room.top)["tests/test_app.py"] == FILES["tests/test_app.py"]
    finally:
        cleanroom.close(room)


def test_checkout_settings_without_a_sparse_checkout_are_as_they_were(repo: Path) -> None:
    """The fingerprint of a repository with no sparse checkout is the one approvals
    already hold (it did not cover sparse checkouts before)."""
    import hashlib

    pattern = r"^(filter\.|core\.attributesfile)"
    found = run_git(repo, "config", "--get-regexp", pattern, check=False)
    out = f"{found}\n" if found else ""
    assert git.checkout_settings(repo) == hashlib.sha256(out.encode() + b"\0").hexdigest()[:32]
