"""What the Stop hook counts toward a stall, through real `ralphstate hook stop`
processes and real git: a turn that changed the project's files is progress, though
nothing was recorded; a stop while the agent reports background work running is held
(neither a stop without progress nor one with it); the files are looked at only at a
stop whose bookkeeping did not change."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import loops, run_process
from tests.helpers.gitrepo import git, init_repo, use_identity

SHELL = pytest.mark.skipif(sys.platform == "win32", reason="a shell script named git")
NEEDS_GIT = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
RUNNING = [{"id": "b1", "type": "shell", "status": "running", "description": "pytest -q"}]


@pytest.fixture(params=["git", "no git"])
def root(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a `src/app.py`, in a git repository with it committed, or not."""
    path = tmp_path / "the project"
    path.mkdir()
    if request.param == "git":
        if shutil.which("git") is None:
            pytest.skip("needs git")
        use_identity(monkeypatch, tmp_path)
        init_repo(path, {"src/app.py": "print('hello')\n", ".gitignore": "build/\n"})
    else:
        (path / "src").mkdir()
        (path / "src" / "app.py").write_text("print('hello')\n")
    return path


def stop(root: Path, env: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    """One Stop of the owning session, in its own process: what it printed (a block)."""
    data = {"session_id": loops.SID, "cwd": str(root), "last_assistant_message": "working"}
    done = run_process(
        ["hook", "stop"], cwd=root, input=orjson.dumps({**data, **fields}), env=env, timeout=60
    )
    assert done.returncode == 0, done
    assert b"Traceback" not in done.stderr, done.stderr
    out: dict[str, Any] = orjson.loads(done.stdout) if done.stdout.strip() else {}
    return out


def edit(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"print('hello')\n# turn {n}\n" + "#" * n)


def test_turns_that_edit_the_project_do_not_stall(root: Path) -> None:
    loops.make_loop(root, stallLimit=2)
    stop(root)  # the first look at the files: nothing to compare them with yet
    for n in range(1, 7):
        edit(root / "src" / "app.py", n)  # the same file, edited again each turn
        if n % 2 == 0:
            edit(root / "src" / f"new_{n}.py", n)
        assert stop(root)["decision"] == "block"
        assert loops.load(root)["blocksWithoutProgress"] == 0
    # Then turns that change nothing: two blocks without progress, and the third stop
    # pauses the loop as a stall.
    assert stop(root)["decision"] == "block"
    assert stop(root)["decision"] == "block"
    assert "decision" not in stop(root)
    state = loops.load(root)
    assert (state["status"], state["pauseReason"], state["iteration"]) == ("paused", "stall", 9)


def test_files_the_project_does_not_hold_are_no_progress(root: Path) -> None:
    """Ignored files in git; outside git, tools' caches and installed packages; and the
    loop's own directory: a turn that only wrote there changed nothing."""
    loops.make_loop(root, stallLimit=2)
    if (root / ".git").exists():
        not_work = ["build/out.txt"]
    else:
        not_work = [".cache/x", "__pycache__/app.pyc", "node_modules/a/index.js"]
    not_work.append(".loop/scratch.txt")
    assert stop(root)["decision"] == "block"  # the first look: nothing to compare with
    for path in not_work:
        edit(root / path, 1)
    assert stop(root)["decision"] == "block"
    for path in not_work:
        edit(root / path, 2)
    assert "decision" not in stop(root)
    state = loops.load(root)
    assert (state["pauseReason"], state["iteration"]) == ("stall", 2)


@pytest.mark.parametrize("limit", [1, 3])
def test_a_stop_while_background_work_runs_is_not_a_stall(root: Path, limit: int) -> None:
    loops.make_loop(root, stallLimit=limit)
    for _ in range(limit):
        assert stop(root, background_tasks=[])["decision"] == "block"
    assert loops.load(root)["blocksWithoutProgress"] == limit
    for _ in range(4):  # at the limit, but a test suite runs in the background
        assert stop(root, background_tasks=RUNNING)["decision"] == "block"
    state = loops.load(root)
    assert (state["status"], state["blocksWithoutProgress"], state["iteration"]) == (
        "in_progress",
        limit,  # held: not cleared either
        limit + 4,
    )
    ended = [{**RUNNING[0], "status": "completed"}]
    assert "decision" not in stop(root, background_tasks=ended)
    assert loops.load(root)["pauseReason"] == "stall"


@NEEDS_GIT
@SHELL
def test_git_is_asked_only_at_a_stop_whose_bookkeeping_did_not_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cost of looking at the files is paid only where the bookkeeping alone would
    count a stop without progress: a loop that records its work never runs git."""
    use_identity(monkeypatch, tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    init_repo(project)
    real = shutil.which("git")
    log = tmp_path / "git.log"
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    loops.make_loop(project, stallLimit=2)

    for record in (
        ["criteria", "set", "tests pass", "true"],
        ["step", "done", "tokenizer"],
        ["criteria", "set", "lint clean", "true"],
        ["step", "done", "parser"],
    ):
        assert run_process(record, cwd=project).returncode == 0
        log.unlink(missing_ok=True)
        assert stop(project, env)["decision"] == "block"
        assert not log.exists()
    stop(project, env)
    # The filters the configuration names are asked first, to turn them off
    # (storage/repo/gitenv.py); reading configuration runs nothing.
    calls = [c for c in log.read_text().splitlines() if not c.startswith("config ")]
    assert len(calls) == 1 and " status " in f" {calls[0]} ", calls
    assert calls[0].startswith("--no-optional-locks status --porcelain=v2")


@NEEDS_GIT
def test_a_commit_of_the_work_in_the_turn_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_identity(monkeypatch, tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    init_repo(project, {"app.py": "x = 1\n", ".gitignore": ".loop/\n"})
    loops.make_loop(project, stallLimit=1)
    stop(project)
    edit(project / "app.py", 1)
    git(project, "commit", "-qam", "work")  # edited and committed: a clean tree again
    assert stop(project)["decision"] == "block"
    assert loops.load(project)["blocksWithoutProgress"] == 0
    assert stop(project)["decision"] == "block"
    assert "decision" not in stop(project)


# A scheduled wakeup in Claude Code's Stop input (`CronCreate`, `ScheduleWakeup`, `/loop`).
WAKEUP = [{"id": "cron-001", "schedule": "*/5 * * * *", "recurring": False, "prompt": "check CI"}]


def test_a_stop_waiting_on_a_scheduled_wakeup_is_not_a_stall(root: Path) -> None:
    loops.make_loop(root, stallLimit=1)
    assert stop(root, background_tasks=[], session_crons=[])["decision"] == "block"
    assert loops.load(root)["blocksWithoutProgress"] == 1
    for _ in range(3):  # at the limit, but the session waits for its wakeup
        assert stop(root, background_tasks=[], session_crons=WAKEUP)["decision"] == "block"
    state = loops.load(root)
    assert (state["status"], state["blocksWithoutProgress"]) == ("in_progress", 1)
    assert "decision" not in stop(root, background_tasks=[], session_crons=[])
    assert loops.load(root)["pauseReason"] == "stall"
