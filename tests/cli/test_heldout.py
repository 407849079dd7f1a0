"""`ralphstate heldout add|list|show|remove`: what the person keeps, where, and the
mistakes each said in one sentence. The agent's side (nothing of them reaches it, a
hard-coded answer is caught) is tests/adversarial/test_heldout.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ralphstate.storage.peruser import heldoutstore
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.gitrepo import git, use_identity

HIDDEN = "def test_hidden():\n    assert 10 + 1 == 11\n"


@pytest.fixture
def repo(loop: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The loop's project committed in git."""
    use_identity(monkeypatch, isolated)
    (loop / "calc.py").write_text("X = 1\n")
    git(loop, "init", "-q", "-b", "main")
    git(loop, "add", "-A")
    git(loop, "commit", "-q", "-m", "start")
    return loop


@pytest.fixture
def hidden(tmp_path: Path) -> Path:
    where = tmp_path / "kept by the person"
    where.mkdir()
    path = where / "test_hidden.py"
    path.write_text(HIDDEN)
    return path


def test_added_files_are_kept_by_hash_outside_the_project(
    repo: Path, hidden: Path, isolated: Path, rs: Any
) -> None:
    done = rs("heldout", "add", "1", "--command", "false", "--file", str(hidden))
    assert done.code == 0, done.err
    assert "Added held-out check h1 to 'tests pass'." in done.out

    [check] = heldoutstore.checks_of(LoopPaths(repo, repo / ".loop"))
    [entry] = check["files"]
    assert entry["name"] == "test_hidden.py" and entry["size"] == len(HIDDEN)
    kept = heldoutstore.directory(LoopPaths(repo, repo / ".loop")) / "files" / entry["sha256"]
    assert kept.read_text() == HIDDEN and isolated in kept.parents
    assert not any("test_hidden" in p.read_text(errors="replace") for p in _files(repo))
    listed = rs("heldout", "list").out
    assert "command: false" in listed and "file: test_hidden.py" in listed, listed


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_a_file_inside_the_project_is_refused(repo: Path, rs: Any) -> None:
    (repo / "tests_hidden.py").write_text(HIDDEN)
    done = rs("heldout", "add", "tests pass", "--command", "true", "--file", "tests_hidden.py")
    assert done.code != 0
    assert "inside the project, where the agent reads it" in done.err, done.err
    assert heldoutstore.checks_of(LoopPaths(repo, repo / ".loop")) == []


def test_a_project_outside_git_is_refused(loop: Path, rs: Any) -> None:
    done = rs("heldout", "add", "tests pass", "--command", "true")
    assert done.code != 0 and "not in a git repository" in done.err, done.err


def test_an_unknown_criterion_and_check_are_one_sentence_each(repo: Path, rs: Any) -> None:
    done = rs("heldout", "add", "no such", "--command", "true")
    assert done.code != 0 and "Traceback" not in done.err and done.err.count("\n") == 1
    gone = rs("heldout", "remove", "h9")
    assert gone.code != 0 and "no held-out check 'h9'" in gone.err, gone.err


def test_remove_takes_it_out(repo: Path, rs: Any) -> None:
    assert rs("heldout", "add", "tests pass", "--command", "true").code == 0
    assert rs("heldout", "remove", "h1").out == "Removed held-out check h1.\n"
    assert "No held-out checks" in rs("heldout", "list").out


def test_a_store_it_cannot_read_is_never_overwritten(repo: Path, rs: Any) -> None:
    paths = LoopPaths(repo, repo / ".loop")
    index = heldoutstore.directory(paths) / "checks.json"
    index.parent.mkdir(parents=True)
    index.write_bytes(b"{not json")

    done = rs("heldout", "add", "tests pass", "--command", "true")

    assert done.code != 0 and "cannot be read" in done.err, done.err
    assert index.read_bytes() == b"{not json"


@pytest.fixture
def started(project: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch, rs: Any) -> Path:
    """A project in git whose loop started there: the ledger knows its start tree."""
    use_identity(monkeypatch, isolated)
    (project / "calc.py").write_text("X = 1\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "start")
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    return project


def test_a_check_that_passes_on_the_start_tree_is_said_already_true(
    started: Path, hidden: Path, rs: Any
) -> None:
    # It passes only where its file was placed, in the room of the start tree.
    done = rs(
        "heldout", "add", "tests pass", "--command", "test -f test_hidden.py",
        "--file", str(hidden),
    )  # fmt: skip
    assert done.code == 0, done.err
    assert "already true: it passes on the tree the loop started on" in done.out, done.out
    assert "on the start tree: already true" in rs("heldout", "list").out


def test_a_check_that_fails_on_the_start_tree_is_said_so(started: Path, rs: Any) -> None:
    done = rs("heldout", "add", "tests pass", "--command", "test -f calc_done.py")
    assert done.code == 0, done.err
    assert "it fails on the tree the loop started on, as it should" in done.out, done.out
