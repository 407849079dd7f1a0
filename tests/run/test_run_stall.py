"""When `ralphstate run` calls an iteration progress, through real `ralphstate run`
processes, real git and scripted agents (tests/helpers/run_agents.py): the loop's
bookkeeping, or the content of the project's files. The run's own `--commit` of what
was there is no progress, so a stuck agent stalls at the same iteration with it as
without it; an agent's new work counts, committed or not; an empty commit, ignored
files and the loop's own files do not."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_agents, run_process
from tests.helpers.gitrepo import commits, git, init_repo, use_identity

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def repo(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project, a git repository with one commit."""
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"README": "the project\n"})
    return project


def start(root: Path, *extra: str) -> None:
    done = run_process(
        ["init", "Fix the parser", "-c", "tests pass", "-s", "fix it", *extra], cwd=root
    )
    assert done.returncode == 0, done.stderr


def run(root: Path, script: Path, behaviour: str, *args: str) -> dict[str, Any]:
    """`ralphstate run --json` with the scripted agent; its JSON result."""
    agent = run_agents.command(script, "stdin", behaviour)
    done = run_process(["run", "--agent", agent, "--json", *args], cwd=root, timeout=120)
    assert done.returncode in (0, 3), done.stderr
    result: dict[str, Any] = orjson.loads(done.stdout)
    return result


def decisions(root: Path) -> list[str]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    events = [orjson.loads(line) for line in lines]
    return [e["decision"] for e in events if e["event"] == "run_iteration"]


def made_commits(root: Path) -> int:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    return sum(orjson.loads(line)["event"] == "commit" for line in lines)


STALLED_AT_4 = ["continue", "continue", "continue", "stall"]


@pytest.mark.parametrize(
    ("behaviour", "dirty", "expected"),
    [
        # Work in the first iteration, then nothing: three quiet iterations stall.
        ("note-once", False, STALLED_AT_4),
        # Nothing at all, on a tree left dirty before the run: three quiet iterations.
        ("idle", True, ["continue", "continue", "stall"]),
    ],
    ids=["work once, then stuck", "stuck on a dirty tree"],
)
@pytest.mark.parametrize("commit", [False, True], ids=["without --commit", "with --commit"])
def test_the_runs_own_commit_is_no_progress(
    repo: Path, script: Path, behaviour: str, dirty: bool, expected: list[str], commit: bool
) -> None:
    start(repo, "--stall-limit", "3")
    if dirty:
        (repo / "README").write_text("the project, edited before the run\n")
    flags = [*(["--commit"] if commit else []), *(["--allow-dirty"] if dirty else [])]

    result = run(repo, script, behaviour, "--max", "8", *flags)

    assert (result["outcome"], result["reason"]) == ("paused", "stall")
    assert decisions(repo) == expected
    # --commit committed the work after the iteration that left it, and the iteration
    # after that commit still counted as one without progress.
    assert made_commits(repo) == (1 if commit else 0)
    # the first commit, the iteration's, and the loop's own record when the run ended
    assert len(commits(repo)) == (3 if commit else 1)


def test_an_empty_commit_is_no_progress(repo: Path, script: Path) -> None:
    start(repo, "--stall-limit", "2")

    result = run(repo, script, "empty-commit", "--max", "6")

    assert (result["outcome"], result["reason"]) == ("paused", "stall")
    assert decisions(repo) == ["continue", "stall"]
    assert len(commits(repo)) == 3  # the agent committed twice: HEAD moved, nothing else


def test_an_agents_edits_count_as_progress_committed_or_not(repo: Path, script: Path) -> None:
    start(repo, "--stall-limit", "1")

    edited = run(repo, script, "note", "--max", "3")
    committed = run(repo, script, "commit", "--max", "3")

    assert edited["reason"] == committed["reason"] == "run_max"
    assert decisions(repo) == ["continue", "continue", "run_max"] * 2
    assert git(repo, "status", "--porcelain", "--", "notes.txt") == "?? notes.txt"


def test_ignored_files_and_the_loops_own_are_no_progress(repo: Path, script: Path) -> None:
    (repo / ".gitignore").write_text("notes.txt\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore the notes")
    start(repo, "--stall-limit", "2")

    result = run(repo, script, "note", "--max", "6")

    assert (result["outcome"], result["reason"]) == ("paused", "stall")
    assert decisions(repo) == ["continue", "stall"]
    assert (repo / "notes.txt").read_text().count("was here") == 2


def test_outside_git_a_written_file_counts_as_progress(project: Path, script: Path) -> None:
    start(project, "--stall-limit", "1")

    noted = run(project, script, "note", "--max", "3")
    idle = run(project, script, "idle", "--max", "3")

    assert noted["reason"] == "run_max"
    assert idle["reason"] == "stall"
    assert decisions(project) == ["continue", "continue", "run_max", "stall"]
