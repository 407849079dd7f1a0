"""A kept clean room (storage/repo/roomstock.py, `cleanroom.open_room(keep=True)`) in real
repositories: it holds exactly the tracked files as a new room does, whatever the stock
it started from held (a file rewritten with its size and time kept, a file added, a
directory turned into a link out of the room, a mode changed, a check's output); it
writes only what differs; and it leaves git's list of worktrees as a new room does."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphstate.storage.repo import cleanroom, roomstock
from ralphstate.storage.repo.roomstock import rmtree
from ralphstate.storage.system import scratch
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.gitrepo import git as run_git
from tests.helpers.gitrepo import init_repo, use_identity

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="modes and links")

FILES = {
    "src/app.py": "VALUE = 1\n",
    "src/deep/more.py": "MORE = 2\n",
    "tests/test_app.py": "def test_value():\n    assert True\n",
    "run.sh": "#!/bin/sh\necho hi\n",
    ".gitignore": ".loop/\n",
}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if scratch.own() is None:
        pytest.skip("no private directory: nothing is kept")
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "repo"
    root.mkdir()
    init_repo(root, FILES)
    (root / "run.sh").chmod(0o755)
    run_git(root, "add", "run.sh")
    run_git(root, "commit", "-q", "-m", "exec")
    (root / ".loop").mkdir()
    yield root
    rmtree(stock_of(root))


def stock_of(root: Path) -> Path:
    mine = scratch.own()
    assert mine is not None
    return mine / roomstock.name(root)


def opened(root: Path) -> cleanroom.Room:
    room = cleanroom.open_room(LoopPaths(root, root / ".loop"), keep=True)
    assert room is not None
    return room


def files(top: Path) -> dict[str, str]:
    """Every file and link under `top` but git's own, by its path from `top`."""
    found = {}
    for base, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names + [d for d in dirs if (Path(base) / d).is_symlink()]:
            path = Path(base) / name
            rel = path.relative_to(top).as_posix()
            if rel == ".git":
                continue
            found[rel] = f"-> {path.readlink()}" if path.is_symlink() else path.read_text()
    return found


def rooms(repo: Path) -> list[str]:
    listed = run_git(repo, "worktree", "list", "--porcelain").splitlines()
    return [line for line in listed if line.startswith("worktree ")][1:]


def test_a_kept_room_is_a_room_and_its_files_are_kept_for_the_next(repo: Path) -> None:
    room = opened(repo)
    try:
        assert files(room.top) == FILES
        assert rooms(repo) == [f"worktree {room.top}"]
        assert run_git(room.top, "status", "--porcelain") == ""
        assert run_git(room.top, "rev-parse", "HEAD~1") == run_git(repo, "rev-parse", "HEAD")
        assert os.access(room.top / "run.sh", os.X_OK)
        before = Path(room.top / "src" / "app.py").stat().st_ino
    finally:
        cleanroom.close(room)
    assert rooms(repo) == [] and not room.scratch.exists()
    assert files(stock_of(repo)) == FILES  # given back
    (repo / "tests" / "test_app.py").write_text("def test_value():\n    assert 1\n")
    again = opened(repo)
    try:
        assert files(again.top)["tests/test_app.py"] == "def test_value():\n    assert 1\n"
        assert Path(again.top / "src" / "app.py").stat().st_ino == before  # not written again
        assert not stock_of(repo).exists()  # one room at a time has it
    finally:
        cleanroom.close(again)


def test_what_the_stock_holds_is_never_trusted(repo: Path, tmp_path: Path) -> None:
    cleanroom.close(opened(repo))
    stock = stock_of(repo)
    # A test rewritten with its size and times kept, a file added, a conftest.py, a mode.
    test = stock / "tests" / "test_app.py"
    times = Path(test).stat()
    test.write_text("def test_value():\n    assert 1==1")
    os.utime(test, ns=(times.st_atime_ns, times.st_mtime_ns))
    (stock / "tests" / "conftest.py").write_text("import pytest\n")
    (stock / "src" / "__pycache__").mkdir()
    (stock / "output.txt").write_text("a check's output\n")
    (stock / "tests" / "left.pyc").write_text("a check's output in a directory it made read-only")
    (stock / "tests").chmod(0o555)
    (stock / "run.sh").chmod(0o644)
    (stock / "src" / "app.py").chmod(0o444)
    # A directory made a link out of the room: nothing may be written through it.
    outside = tmp_path / "outside"
    outside.mkdir()
    rmtree(stock / "src" / "deep")
    (stock / "src" / "deep").symlink_to(outside)
    room = opened(repo)
    try:
        assert files(room.top) == FILES
        assert list(outside.iterdir()) == []
        assert not (room.top / "src" / "deep").is_symlink()
        assert os.access(room.top / "run.sh", os.X_OK)
        mode = stat.S_IMODE(Path(room.top / "src" / "app.py").stat().st_mode)
        assert mode == stat.S_IMODE(Path(repo / "src" / "app.py").stat().st_mode)
        assert room.notes == []
    finally:
        cleanroom.close(room)


def test_two_rooms_at_once_each_hold_the_files(repo: Path) -> None:
    cleanroom.close(opened(repo))
    first = opened(repo)
    try:
        second = opened(repo)  # the stock is the first's: this one writes its own
        try:
            assert files(first.top) == files(second.top) == FILES
        finally:
            cleanroom.close(second)
    finally:
        cleanroom.close(first)
    assert rooms(repo) == [] and files(stock_of(repo)) == FILES


def test_a_deleted_file_is_not_in_the_next_room(repo: Path) -> None:
    cleanroom.close(opened(repo))
    (repo / "src" / "deep" / "more.py").unlink()
    room = opened(repo)
    try:
        assert files(room.top) == {k: v for k, v in FILES.items() if k != "src/deep/more.py"}
    finally:
        cleanroom.close(room)
