"""What a snapshot of the work tree writes (storage/repo/git.py, storage/system/scratch.py), in real
repositories and real processes: nothing lands in the project's `.git`; an untracked
file past the size limit is summarised by its size and times, never read; and no
temporary pack or scratch store is left behind, even when the time limit kills git."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import pytest

from ralphstate.core import limits
from ralphstate.storage.repo import git, guarded
from ralphstate.storage.system import scratch
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import run_process
from tests.helpers.checks import alive, wait_for
from tests.helpers.gitrepo import git as run_git
from tests.helpers.gitrepo import init_repo, use_identity
from tests.helpers.person import trust

# A sparse file this large takes no disk, and git needs many seconds to read it.
HUGE = 16 << 30


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "repo"
    root.mkdir()
    init_repo(root, {"app.py": "VALUE = 1\n", "tests/test_app.py": "x = 1\n"})
    (root / ".loop").mkdir()
    (root / ".loop" / "state.json").write_text("{}")
    return root


def paths_of(root: Path) -> LoopPaths:
    return LoopPaths(root, root / ".loop")


def objects(root: Path) -> dict[str, int]:
    """Every file of the repository's object directory, with its size."""
    top = root / ".git" / "objects"
    return {p.relative_to(top).as_posix(): p.stat().st_size for p in top.rglob("*") if p.is_file()}


def stores(pid: int) -> list[str]:
    """The scratch stores of process `pid` on the disk."""
    mine = f"{scratch.PREFIX}{pid}-"
    return [p.name for p in scratch.parent().iterdir() if p.name.startswith(mine)]


def sparse(path: Path, size: int) -> None:
    with path.open("ab") as handle:
        handle.truncate(size)


def snap(root: Path, budget: float = limits.GIT_SNAPSHOT_SECONDS) -> git.Snapshot:
    found = git.snapshot(paths_of(root), budget)
    assert found is not None
    return found


def written(root: Path, data: bytes) -> bool:
    """The repository holds a blob of `data`."""
    blob = subprocess.run(
        ["git", "hash-object", "--stdin"], cwd=root, input=data, capture_output=True, check=True
    ).stdout.decode()
    return subprocess.run(["git", "cat-file", "-e", blob.strip()], cwd=root).returncode == 0


def ralphstate(root: Path, *args: str, timeout: float = 120) -> str:
    done = run_process(list(args), cwd=root, timeout=timeout)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def evidence(root: Path) -> dict[str, object]:
    state = orjson.loads((root / ".loop" / "state.json").read_bytes())
    found: dict[str, object] = state["evidence"]["tests pass"]
    return found


def checked_loop(root: Path, clean: str) -> None:
    """A loop in `root` whose one criterion's check passes, its clean room `clean`."""
    (root / ".loop" / "state.json").unlink()
    (root / ".loop").rmdir()
    ralphstate(root, "init", "Build it", "-c", "tests pass")
    ralphstate(root, "criteria", "check", "tests pass", "exit 0")
    trust(root)  # given by a process with no terminal: the person trusts it here
    ralphstate(root, "config", "clean-verify", clean)


# -- nothing in .git -----------------------------------------------------------------


def test_verify_in_place_writes_nothing_into_the_repository(repo: Path) -> None:
    checked_loop(repo, "off")
    before = objects(repo)
    trees = set()
    for turn in range(3):  # an untracked file and a tracked one change between verifies
        (repo / "notes.txt").write_bytes(os.urandom(200_000))
        (repo / "app.py").write_text(f"VALUE = {turn + 2}\n")
        assert "passed" in ralphstate(repo, "verify")
        trees.add(evidence(repo)["tree"])
    assert len(trees) == 3 and None not in trees  # each verify tied to its own tree
    assert objects(repo) == before
    assert not written(repo, (repo / "notes.txt").read_bytes())
    assert stores(os.getpid()) == []


def test_a_clean_room_keeps_only_the_tracked_files_it_checks_out(repo: Path) -> None:
    """The clean room checks a commit of the tracked files out of the repository, so
    their edits and that commit are git's to keep; no untracked file goes in."""
    checked_loop(repo, "on")
    (repo / "notes.txt").write_bytes(os.urandom(200_000))
    (repo / "app.py").write_text("VALUE = 2\n")
    (repo / "dataset.bin").write_bytes(os.urandom(3 << 20))  # past the limit: not read
    assert "passed" in ralphstate(repo, "verify", "--clean")
    assert evidence(repo)["clean"] is True and evidence(repo)["tree"]
    assert written(repo, b"VALUE = 2\n")
    assert not written(repo, (repo / "notes.txt").read_bytes())
    assert not written(repo, (repo / "dataset.bin").read_bytes())


def test_comparing_the_guarded_files_writes_nothing_into_the_repository(repo: Path) -> None:
    approved = guarded.snapshot(paths_of(repo), ["tests/"])
    assert approved is not None
    (repo / "tests" / "test_app.py").write_text("x = 2\n")
    before = objects(repo)
    found = guarded.compare(paths_of(repo), approved, ["tests/"])
    assert found is not None and found.changed == ["tests/test_app.py"]
    shown = guarded.diff(paths_of(repo), approved, ["tests/test_app.py"])
    assert shown is not None and "+x = 2" in shown
    assert objects(repo) == before


# -- untracked files past the limit --------------------------------------------------


def test_a_huge_untracked_file_is_summarised_not_read(repo: Path) -> None:
    assert limits.SNAPSHOT_BIG_FILE_BYTES == 1024 * 1024
    clean = snap(repo).tree
    before = objects(repo)
    sparse(repo / "disk.img", HUGE)
    started = time.monotonic()
    first = snap(repo, budget=5.0)  # reading 16 GiB would take far longer
    assert time.monotonic() - started < 5.0
    assert first.dirty and first.tree != clean
    assert snap(repo).tree == first.tree  # the same file: the same tree
    stat = (repo / "disk.img").stat()
    os.utime(repo / "disk.img", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    touched = snap(repo).tree
    assert touched != first.tree
    sparse(repo / "disk.img", HUGE + 1)
    assert snap(repo).tree not in (first.tree, touched)
    (repo / "disk.img").unlink()
    assert snap(repo).tree == clean
    assert objects(repo) == before and stores(os.getpid()) == []


def test_verify_records_the_tree_beside_a_huge_untracked_file(repo: Path) -> None:
    checked_loop(repo, "off")
    sparse(repo / "disk.img", HUGE)
    before = objects(repo)
    started = time.monotonic()
    assert "passed" in ralphstate(repo, "verify")
    assert time.monotonic() - started < limits.GIT_SNAPSHOT_SECONDS
    assert evidence(repo)["tree"] and evidence(repo)["dirty"] is True
    assert objects(repo) == before


def test_the_size_limit_is_git_configuration(repo: Path) -> None:
    data = os.urandom(2 << 20)
    (repo / "data.bin").write_bytes(data)
    summarised = snap(repo).tree
    run_git(repo, "config", "ralphstate.bigFileThreshold", "4m")
    read = snap(repo).tree
    assert read != summarised
    run_git(repo, "config", "ralphstate.bigFileThreshold", "four megabytes")
    assert snap(repo).tree == summarised  # not a size: the default
    run_git(repo, "config", "ralphstate.bigFileThreshold", "4M")
    assert not written(repo, data)
    # Read, it is in the tree as git would commit it: committing it changes nothing.
    run_git(repo, "add", "data.bin")
    run_git(repo, "commit", "-q", "-m", "data")
    assert snap(repo).tree == read == run_git(repo, "rev-parse", "HEAD^{tree}")


def test_small_untracked_files_are_in_the_tree_as_git_would_commit_them(repo: Path) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "new.py").write_text("y = 2\n")
    (repo / "odd name *.txt").write_text("glob characters\n")
    (repo / "link").symlink_to("app.py")
    (repo / "app.py").write_text("VALUE = 3\n")
    (repo / "tests" / "test_app.py").unlink()
    found = snap(repo)
    run_git(repo, "add", "-A", ":/", ":(exclude).loop")
    run_git(repo, "commit", "-q", "-m", "all")
    assert found.tree == run_git(repo, "rev-parse", "HEAD^{tree}")


def committed_tree(root: Path) -> str:
    """The tree of the work tree as `git add -A` stages it, the loop left out: what a
    snapshot that read every file would give (written to a scratch index)."""
    env = dict(os.environ, GIT_INDEX_FILE=str(root / ".git" / "scratch-index"))
    for args in (["add", "-A", ":/", ":(exclude).loop"], ["write-tree"]):
        done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=True)
    (root / ".git" / "scratch-index").unlink()
    return done.stdout.decode().strip()


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one byte more"])
def test_snapshot_big_file_bytes(repo: Path, extra: int) -> None:
    (repo / "data.bin").write_bytes(os.urandom(limits.SNAPSHOT_BIG_FILE_BYTES + extra))
    found = snap(repo).tree
    assert (found == committed_tree(repo)) is (extra == 0)  # read whole, or summarised


@pytest.mark.parametrize("extra", [1, 0], ids=["names below the limit", "at the limit"])
def test_max_untracked_list_bytes(repo: Path, monkeypatch: pytest.MonkeyPatch, extra: int) -> None:
    (repo / "a.txt").write_text("small\n")
    (repo / "data.bin").write_bytes(os.urandom(2 << 20))
    names = len(b"a.txt\0data.bin\0")
    monkeypatch.setattr(limits, "MAX_UNTRACKED_LIST_BYTES", names + extra)
    found = snap(repo).tree
    # Below it the big file is summarised; at it git reads every file, as `git add -A`.
    assert (found == committed_tree(repo)) is (extra == 0)


# -- nothing left behind -------------------------------------------------------------


def test_no_temporary_pack_is_left_when_the_time_limit_kills_git(repo: Path) -> None:
    run_git(repo, "config", "ralphstate.bigFileThreshold", "100g")  # read it, whatever it costs
    sparse(repo / "disk.img", HUGE)
    before = objects(repo)
    assert git.snapshot(paths_of(repo), budget=1.5) is None  # git killed while reading it
    assert objects(repo) == before
    assert not any("tmp_" in name for name in objects(repo))
    assert stores(os.getpid()) == []


KILLED = r"""
import time
from ralphstate.storage.system import scratch
with scratch.store() as where:
    print(where, flush=True)
    time.sleep(60)
"""


def test_a_store_whose_process_was_killed_is_removed_by_the_next_snapshot(repo: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", KILLED], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        where = Path(child.stdout.readline().strip())
        assert where.is_dir() and stores(child.pid) == [where.name]
        snap(repo)
        assert where.is_dir()  # a store whose process still runs is never taken away
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    wait_for(lambda: not alive(child.pid), "the killed process to be gone")
    assert where.is_dir()  # what a crash leaves
    snap(repo)
    assert not where.exists() and stores(child.pid) == []


@pytest.mark.skipif(sys.platform == "win32", reason="user ids")
def test_the_stores_are_in_a_private_directory_of_the_users_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = tmp_path / f"{scratch.PARENT}{os.getuid()}"
    assert scratch.parent() == mine and mine.stat().st_mode & 0o777 == 0o700
    with scratch.store() as where:
        assert where.parent == mine and (where / "objects" / "pack").is_dir()
    assert list(mine.iterdir()) == []
    mine.chmod(0o755)  # not private: the temporary directory itself
    assert scratch.parent() == tmp_path
    mine.rmdir()
    mine.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    assert scratch.parent() == tmp_path
