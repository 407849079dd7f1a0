"""`ralphstate run --commit` through real processes in a real repository whose `.loop/`
git does not ignore (as `init` leaves it): the evidence names the commit that holds
the verified code, the run leaves the work tree clean (its last state and history in a
commit of their own), `.loop/.gitignore` goes along, and commit subjects are cut at a
word."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import commits as run_commits
from ralphstate.run import spawn
from ralphstate.verify import confine
from tests.helpers import run_process
from tests.helpers.gitrepo import commits, git, init_repo, use_identity
from tests.helpers.terminal import at_terminal

# Fixes calc.py, then claims the criterion the prompt names.
AGENT = r"""
import re, subprocess, sys
from pathlib import Path

prompt = sys.stdin.read()
Path("calc.py").write_text("def add(a, b):\n    return a + b\n")
name = re.search(r'ralphstate (?:criteria set|verify) "([^"]*)"', prompt).group(1)
subprocess.run([sys.executable, "-m", "ralphstate", "criteria", "set", name, "true"], check=True)
print("fixed add", flush=True)
"""
CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\nassert add(1, 2) == 3\n"


@pytest.fixture
def repo(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"calc.py": CALC, "test_calc.py": TEST})
    return project


@pytest.fixture
def agent(tmp_path: Path) -> str:
    script = tmp_path / "agents" / "agent.py"
    script.parent.mkdir()
    script.write_text(AGENT)
    return spawn.join_command([sys.executable, str(script)])


def rs(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return run_process(list(args), cwd=root, timeout=timeout)


def checked_loop(root: Path, criterion: str = "tests pass") -> None:
    check = spawn.join_command([sys.executable, "test_calc.py"])
    for args in (
        ("init", "Fix add", "-c", criterion),
        ("criteria", "check", criterion, check),
    ):
        done = rs(root, *args)
        assert done.returncode == 0, done.stderr
    typed = at_terminal(["trust"], cwd=root)  # the person, at their terminal
    assert typed.code == 0, typed.screen


def state(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((root / ".loop" / "state.json").read_bytes())
    return data


def test_the_evidence_names_the_commit_that_holds_the_verified_code(repo: Path, agent: str) -> None:
    checked_loop(repo)
    first = git(repo, "rev-parse", "HEAD")

    done = rs(repo, "run", "--agent", agent, "--commit")

    assert done.returncode == 0, done.stdout + done.stderr
    work = git(repo, "log", "--format=%H", "--grep", "iteration 1", "-1")
    assert work and work != first
    assert git(repo, "show", "--format=", "--name-only", work).splitlines() == [
        ".loop/.gitignore",
        ".loop/history.jsonl",
        ".loop/state.json",
        "calc.py",
    ]
    evidence = state(repo)["evidence"]["tests pass"]
    assert (evidence["result"], evidence["commit"], evidence["dirty"]) == ("verified", work, False)
    [made] = [e for e in history(repo) if e["event"] == "commit"]
    assert (made["commit"], made["evidence"]) == (work, ["tests pass"])
    assert evidence["tree"] == tree_of(repo, work)  # the code the check ran on is that commit's


def test_a_complete_run_leaves_the_work_tree_clean(repo: Path, agent: str) -> None:
    checked_loop(repo)

    done = rs(repo, "run", "--agent", agent, "--commit")

    assert done.returncode == 0, done.stdout + done.stderr
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert commits(repo)[:2] == [
        "ralphstate: the loop's record after the run (complete)",
        'ralphstate: iteration 1: "tests pass" met',
    ]
    # The last commit holds the loop's own files only, as the run left them.
    assert git(repo, "show", "--format=", "--name-only", "HEAD").splitlines() == [
        ".loop/history.jsonl",
        ".loop/state.json",
    ]
    committed = orjson.loads(git(repo, "show", "HEAD:.loop/state.json"))
    assert committed["status"] == "complete"
    assert git(repo, "ls-files", ".loop/.gitignore") == ".loop/.gitignore"
    said = f"commit {git(repo, 'rev-parse', 'HEAD')[:10]}: {commits(repo)[0]}"
    assert said in done.stdout.decode().splitlines()


def test_a_repository_that_ignores_the_loop_gets_no_record_commit(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str
) -> None:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"calc.py": CALC, "test_calc.py": TEST, ".gitignore": ".loop/\n"})
    checked_loop(project)

    done = rs(project, "run", "--agent", agent, "--commit")

    assert done.returncode == 0, done.stdout + done.stderr
    assert commits(project)[0] == 'ralphstate: iteration 1: "tests pass" met'
    assert git(project, "status", "--porcelain") == ""


def test_commit_subjects_are_cut_at_a_word(repo: Path, agent: str) -> None:
    long_name = "the exporter writes every column of the report in the order the page shows"
    checked_loop(repo, long_name)

    done = rs(repo, "run", "--agent", agent, "--commit")

    assert done.returncode == 0, done.stdout + done.stderr
    subject = commits(repo)[1]
    assert subject == 'ralphstate: iteration 1: "the exporter writes every column of the…'
    assert len(subject) <= run_commits.SUBJECT_CHARS


@pytest.mark.parametrize(
    ("text", "cut"),
    [
        ("short enough", "short enough"),
        ("a b c " * 20, "a b c a b c a b c a b c a b c…"),
        ("x" * 40, "x" * 29 + "…"),
        ("word; " * 10, "word; word; word; word; word…"),
    ],
)
def test_cut(text: str, cut: str) -> None:
    assert run_commits.cut(text, 30) == cut
    assert len(run_commits.cut(text, 30)) <= 30


def history(root: Path) -> list[dict[str, Any]]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


def tree_of(root: Path, commit: str) -> str:
    """The tree of `commit` without the loop's directory."""
    env = {**os.environ, "GIT_INDEX_FILE": str(root / ".git" / "scratch-index")}
    for args in (["read-tree", commit], ["rm", "-rqf", "--cached", ".loop"], ["write-tree"]):
        done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_log_and_watch_show_the_run_in_words_with_short_ids(repo: Path, agent: str) -> None:
    checked_loop(repo)
    assert rs(repo, "run", "--agent", agent, "--commit").returncode == 0
    work = git(repo, "log", "--format=%H", "--grep", "iteration 1", "-1")

    log = rs(repo, "log").stdout.decode()
    watch = rs(repo, "watch", "--once").stdout.decode()

    shown = {
        line.split("] ", 1)[0].split()[-2]: line.split("] ", 1)[1] for line in log.splitlines()
    }
    # A check runs confined where bubblewrap starts (verify/confine.py); the line says so.
    confined = " · confined: true" if confine.bubblewrap() else ""
    assert re.fullmatch(
        rf'"tests pass" verified by run · exit code 0, \d+\.\ds · on {first(repo)[:10]} \(dirty\)'
        rf" · clean room{re.escape(confined)}",
        shown["check"],
    ), shown["check"]
    assert shown["commit"] == (
        f'{work[:10]} "ralphstate: iteration 1: "tests pass" met" · 4 files'
        ' · evidence: "tests pass"'
    )
    assert shown["run_iteration"].startswith("run 1: exit 0 in ")
    assert shown["run_iteration"].endswith(
        ", then complete · 1/1 criterion · 0/0 steps · .loop/runs/0001.log"
        ' · sandbox: "unconfined"'  # the tests' default (tests/conftest.py)
    )
    assert shown["run_finished"].startswith("complete · 1 iteration in ")
    assert shown["approved"] == "the proof: 1 criterion, 1 check"
    for text in (log, watch):
        assert not re.search(r"[0-9a-f]{16}", text), text  # no id in full
        assert "=False" not in text and "=None" not in text
    for event in ("check", "commit", "run_iteration", "run_finished"):
        # 160: a confined check's line adds " · confined: true" (17) to its 140.
        assert len(f"2026-01-01T00:00:00Z  #1   {event:<16} [you] {shown[event]}") <= 160


def first(root: Path) -> str:
    return git(root, "rev-list", "--max-parents=0", "HEAD")
