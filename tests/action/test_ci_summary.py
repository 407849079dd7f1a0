"""`ralphstate ci-summary`, the last job of a matrix of loops: every loop's branch on a
real bare remote in one table, a branch that cannot be read a row that says so. Real
git, the real command line. (Under `act`, with the example matrix:
tests/action/test_chain.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.helpers.gitrepo import git, use_identity


@pytest.fixture
def remote(tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A remote with three loop branches: one complete, one paused, one whose state is
    not JSON; and one branch that is no loop's."""
    use_identity(monkeypatch, isolated)
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "-b", "main", str(work))
    (work / "README.md").write_text("project\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "base")
    git(work, "push", "-q", str(bare), "main")
    loops = {
        "done": {"spec": "Export | CSV", "criteria": ["a", "b"], "status": "complete",
                 "criteriaStatus": {"a": True, "b": True}, "iteration": 4,
                 "usage": {"cost": 1.5}},
        "stuck": {"spec": "Search", "criteria": ["fast"], "status": "paused",
                  "pauseReason": "review", "criteriaStatus": {"fast": False}, "iteration": 9},
    }  # fmt: skip
    for name, state in [*loops.items(), ("broken", None)]:
        git(work, "checkout", "-q", "-b", f"ralphstate/{name}", "main")
        (work / ".loop").mkdir(exist_ok=True)
        body = orjson.dumps(state) if state else b"{ not json"
        (work / ".loop" / "state.json").write_bytes(body)
        git(work, "add", "-A")
        git(work, "commit", "-qm", name)
        git(work, "push", "-q", str(bare), f"ralphstate/{name}")
    git(work, "push", "-q", str(bare), "main:feature/other")
    return bare


def summarize(tmp_path: Path, remote: Path, *args: str) -> tuple[int, str, str]:
    runner = tmp_path / "runner"
    git(tmp_path, "clone", "-q", str(remote), str(runner))
    summary = tmp_path / "summary.md"
    env = {
        **os.environ,
        "GITHUB_STEP_SUMMARY": str(summary),
        "RALPHSTATE_HOME": str(tmp_path / "rs"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", "ci-summary", *args],
        cwd=runner,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    table = summary.read_text() if summary.exists() else ""
    return done.returncode, done.stdout + done.stderr, table


def test_every_loop_branch_is_one_row(remote: Path, tmp_path: Path) -> None:
    code, said, table = summarize(tmp_path, remote)

    assert code == 0, said
    assert "1 of 3 complete" in table
    assert "| `ralphstate/done` | complete | 4 | 2/2 | 1.50 | Export \\| CSV |" in table
    assert "| `ralphstate/stuck` | paused (review) | 9 | 0/1 |  | Search |" in table
    assert "| `ralphstate/broken` | .loop/state.json is not a loop's state |" in table
    assert "feature/other" not in table
    assert table.strip() == said.strip()


def test_the_loops_named_are_the_rows_and_a_missing_one_says_so(
    remote: Path, tmp_path: Path
) -> None:
    code, said, table = summarize(tmp_path, remote, "--loops", "stuck\nnever-started")

    assert code == 0, said
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `ralphstate/stuck` | paused (review) | 9 | 0/1 |  | Search |",
        "| `ralphstate/never-started` | no such branch | | | | |",
    ]


def test_a_remote_that_cannot_be_read_is_one_sentence(tmp_path: Path, isolated: Path) -> None:
    runner = tmp_path / "runner"
    git(tmp_path, "init", "-q", str(runner))
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", "ci-summary", "--remote", str(tmp_path / "none")],
        cwd=runner,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "could not fetch from" in done.stderr and "Traceback" not in done.stderr


def test_a_branch_deleted_on_the_remote_is_no_longer_a_row(remote: Path, tmp_path: Path) -> None:
    """Run again in the same checkout (a self-hosted runner's workspace), a loop whose
    branch is gone is not shown from what the last run fetched."""
    code, said, _ = summarize(tmp_path, remote)
    assert code == 0 and "ralphstate/broken" in said
    git(tmp_path, "--git-dir", str(remote), "branch", "-D", "ralphstate/broken")

    again = subprocess.run(
        [sys.executable, "-m", "ralphstate", "ci-summary"],
        cwd=tmp_path / "runner",
        capture_output=True,
        text=True,
        check=False,
    )

    assert again.returncode == 0, again.stderr
    assert "ralphstate/broken" not in again.stdout and "1 of 2 complete" in again.stdout
