"""Clean-room verification through the real commands and hook processes, in real
repositories: `verify --clean`, the Stop hook and `ralphstate run` run the checks in a
temporary worktree of the tracked files, so an untracked or ignored file cannot make
a check pass; the evidence says so; `cleanVerify` turns it off; the room is always
removed, when a check times out or is interrupted too."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import spawn
from ralphstate.storage.repo import git as storage_git
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.verify import confine, pipeline
from tests.helpers import run_process
from tests.helpers.checks import alive, py, sleeper, wait_for
from tests.helpers.gitrepo import git, init_repo, use_identity
from tests.helpers.loops import load

SID = "session-a"
# How a sealed pass is said here: confined where bubblewrap starts.
LEVEL = "sealed and confined" if confine.bubblewrap() else "sealed"
AGE = re.compile(r"\b\d+s\b")
# The check: a module `helper` can be imported from the directory it runs in.
NEEDS_HELPER = py("import helper")
UNTRACKED = (
    "ralphstate: this check ran in a clean room, which holds only the files git tracks;"
    " untracked files (helper.py) are not in it: `git add` puts them in."
)


@pytest.fixture
def repo(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"app.py": "VALUE = 1\n", ".gitignore": "build/\n*.pyc\n"})
    return project


def worktrees(root: Path) -> list[str]:
    """The worktrees git knows of besides the repository's own."""
    listed = git(root, "worktree", "list", "--porcelain").splitlines()
    return [line for line in listed if line.startswith("worktree ")][1:]


def loop_with(rs: Any, check: str, name: str = "tests pass") -> None:
    assert rs("init", "Build it", "-c", name).code == 0
    assert rs("criteria", "check", name, check).code == 0


def test_a_check_that_passes_only_because_of_an_untracked_file_fails_clean(
    rs: Any, repo: Path
) -> None:
    loop_with(rs, NEEDS_HELPER)
    (repo / "helper.py").write_text("X = 1\n")
    assert rs("verify").code == 0  # in place, the untracked file is there
    assert "clean" not in load(repo)["evidence"]["tests pass"]
    done = rs("verify", "--clean")
    assert done.code == 1
    assert "FAIL  tests pass" in done.out
    assert "ModuleNotFoundError: No module named 'helper'" in done.out
    assert done.out.splitlines()[-2] == f"    {UNTRACKED}"  # the end of its output
    evidence = load(repo)["evidence"]["tests pass"]
    assert evidence["result"] == "failing" and evidence["clean"] is True
    assert evidence["outputTail"].endswith(UNTRACKED)
    git(repo, "add", "helper.py")  # what the failure says to do
    assert rs("verify", "--clean").code == 0
    assert worktrees(repo) == []


def test_an_ignored_file_does_not_count_and_is_not_named(rs: Any, repo: Path) -> None:
    loop_with(rs, py("import os, sys; sys.exit(0 if os.path.exists('build/out.txt') else 1)"))
    (repo / "build").mkdir()
    (repo / "build" / "out.txt").write_text("made by hand\n")
    assert rs("verify").code == 0
    done = rs("verify", "--clean")
    assert done.code == 1 and "untracked" not in done.out  # nothing untracked to name


def test_uncommitted_edits_of_tracked_files_are_in_the_clean_room(rs: Any, repo: Path) -> None:
    value_is_2 = py("import sys; sys.exit(0 if 'VALUE = 2' in open('app.py').read() else 1)")
    loop_with(rs, value_is_2)
    assert rs("verify", "--clean").code == 1
    (repo / "app.py").write_text("VALUE = 2\n")  # edited, neither staged nor committed
    assert rs("verify", "--clean").code == 0
    evidence = load(repo)["evidence"]["tests pass"]
    # `tree` stays the work tree's (what the stale rule compares); `cleanTree` is the room's.
    snap = storage_git.snapshot(LoopPaths(repo, repo / ".loop"))
    assert snap is not None and evidence["tree"] == snap.tree
    assert evidence["dirty"] is True and evidence["cleanTree"] == snap.tree  # all tracked


def test_deleted_tracked_files_are_gone_from_the_clean_room(rs: Any, repo: Path) -> None:
    loop_with(rs, py("import os, sys; sys.exit(1 if os.path.exists('app.py') else 0)"))
    assert rs("verify", "--clean").code == 1
    (repo / "app.py").unlink()  # deleted, the deletion not staged
    assert rs("verify", "--clean").code == 0


def test_evidence_and_status_say_clean_room(rs: Any, repo: Path) -> None:
    loop_with(rs, py("pass"))
    status = rs("status").out
    assert "\nclean-room verification: on (the default)\n" in status
    assert rs("verify", "--clean").code == 0
    shown = AGE.sub("Ns", rs("status").out)
    # (a check that passed before any work is also said to be already true, after this)
    assert "  [x] tests pass  (verified Ns ago, sealed" in shown
    (check,) = [e for e in history(repo) if e["event"] == "check"]
    assert check["clean"] is True and check["cleanTree"]
    assert '"clean": true' in rs("show").out
    as_json = orjson.loads(rs("verify", "--clean", "--json").out)
    assert as_json[0]["clean"] is True
    assert rs("verify").code == 0  # in place: no such mark
    shown = AGE.sub("Ns", rs("status").out)
    assert "  [x] tests pass  (verified Ns ago" in shown and "clean room)" not in shown
    assert "clean" not in load(repo)["evidence"]["tests pass"]


def test_the_setting_is_shown_and_changed_by_config(rs: Any, repo: Path) -> None:
    loop_with(rs, py("pass"))
    assert rs("config", "clean-verify").out == "default (on)\n"
    assert rs("config", "clean-verify", "off").out == "clean-verify: off\n"
    assert load(repo)["cleanVerify"] is False
    assert "\nclean-room verification: OFF (ralphstate config clean-verify off)\n" in (
        rs("status").out
    )
    (config,) = [e for e in history(repo) if e["event"] == "config"]
    assert (config["key"], config["value"], config["from"]) == ("cleanVerify", False, None)
    bad = rs("config", "clean-verify", "sometimes")
    assert bad.code == 1 and "is not true or false" in bad.err
    assert rs("config", "clean-verify", "on").out == "clean-verify: on\n"
    assert "\nclean-room verification: on\n" in rs("status").out


def test_outside_git_the_checks_run_in_place_and_clean_is_refused(rs: Any, project: Path) -> None:
    loop_with(rs, py("pass"))
    assert "\nclean-room verification: not a git repository" in rs("status").out
    done = rs("verify", "--clean")
    assert done.code == 1 and "is not in a git repository" in done.err
    store = load_store(project)
    (result,) = pipeline.verify(store, pipeline.Ask(clean=None)).results  # in place here
    assert result.passed and result.clean_tree is None


def load_store(root: Path) -> Any:
    from ralphstate.storage.loopdir.store import Store

    return Store(LoopPaths(root, root / ".loop"))


def test_a_project_in_a_subdirectory_runs_in_that_directory_of_the_room(
    rs: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = repo / "services" / "api"
    sub.mkdir(parents=True)
    (sub / "api.py").write_text("API = 1\n")
    git(repo, "add", "services")
    monkeypatch.chdir(sub)
    here = py(
        "import os, sys; sys.exit(0 if os.path.basename(os.getcwd()) == 'api'"
        " and os.path.exists('api.py') and os.path.exists('../../app.py') else 1)"
    )
    assert rs("init", "Build it", "-c", "tests pass", "--here").code == 0
    assert rs("criteria", "check", "tests pass", here).code == 0
    assert rs("verify", "--clean").code == 0
    assert load(sub)["evidence"]["tests pass"]["clean"] is True


def history(root: Path) -> list[dict[str, Any]]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


# -- the room is always removed ------------------------------------------------------------


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_the_room_is_removed_when_a_check_times_out(rs: Any, repo: Path, tmp_path: Path) -> None:
    command, pid_file, _ = sleeper(tmp_path)
    loop_with(rs, command)
    done = rs("verify", "--clean", "--timeout", "1")
    assert done.code == 1 and "timed out after 1s" in done.out
    assert not alive(int(pid_file.read_text()))
    assert worktrees(repo) == []


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_room_is_removed_when_verify_is_interrupted(
    rs: Any, repo: Path, tmp_path: Path, signum: int
) -> None:
    command, pid_file, started = sleeper(tmp_path)
    loop_with(rs, command)
    child = subprocess.Popen(
        [sys.executable, "-m", "ralphstate", "verify", "--clean"],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(started.exists, "the check to start")
        assert len(worktrees(repo)) == 1
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    assert b"interrupted" in err
    assert not alive(int(pid_file.read_text()))
    assert worktrees(repo) == []


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_room_left_by_a_killed_verify_is_removed_by_the_next_run(
    rs: Any, repo: Path, tmp_path: Path
) -> None:
    command, pid_file, started = sleeper(tmp_path)
    loop_with(rs, command)
    child = subprocess.Popen(
        [sys.executable, "-m", "ralphstate", "verify", "--clean"],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(started.exists, "the check to start")
    finally:
        child.kill()  # no chance to remove anything
        child.wait()
    with contextlib.suppress(ProcessLookupError):  # the verify's watchdog may have
        os.kill(int(pid_file.read_text()), signal.SIGKILL)  # killed its check already
    (left,) = worktrees(repo)
    assert rs("criteria", "check", "tests pass", py("pass")).code == 0
    assert rs("verify", "--clean").code == 0
    assert worktrees(repo) == []
    assert not Path(left.split(" ", 1)[1]).exists()


# -- the Stop hook and `ralphstate run` use it ---------------------------------------------


def claim(root: Path) -> dict[str, Any] | None:
    data = {"session_id": SID, "cwd": str(root), "last_assistant_message": "Done. <loop-complete>"}
    done = run_process(["hook", "stop"], cwd=root, input=orjson.dumps(data), timeout=120)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout) if done.stdout.strip() else None


def owned_claimed_loop(rs: Any, monkeypatch: pytest.MonkeyPatch, check: str) -> None:
    with monkeypatch.context() as session:
        session.setenv("CLAUDE_CODE_SESSION_ID", SID)
        assert rs("init", "Build it", "-c", "tests pass").code == 0
    # the person gives the check (an agent's would wait for the person's trust)
    assert rs("criteria", "check", "tests pass", check).code == 0
    assert rs("criteria", "set", "tests pass", "true").code == 0


def test_the_stop_hook_verifies_a_completion_in_a_clean_room(
    rs: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owned_claimed_loop(rs, monkeypatch, NEEDS_HELPER)
    (repo / "helper.py").write_text("X = 1\n")  # enough in place, not in the room
    out = claim(repo)
    assert out is not None and out["decision"] == "block"
    assert "No module named 'helper'" in out["reason"]
    assert UNTRACKED in out["reason"]  # the model is told what to do
    # and the command that reproduces the failure: plain `verify` passes in place.
    assert (
        "Fix what they report; `ralphstate verify --clean` runs the checks again as they"
        " ran here, in a clean room" in out["reason"]
    )
    assert "`ralphstate verify` runs the checks again now" not in out["reason"]
    state = load(repo)
    assert state["status"] == "in_progress" and state["criteriaStatus"]["tests pass"] is False
    assert state["evidence"]["tests pass"]["clean"] is True
    git(repo, "add", "helper.py")
    assert rs("criteria", "set", "tests pass", "true").code == 0
    out = claim(repo)
    assert out is None or out.get("decision") != "block"
    state = load(repo)
    assert state["status"] == "complete" and state["evidence"]["tests pass"]["clean"] is True
    message = out.get("systemMessage", "") if out else ""
    assert f"verified by its check ({LEVEL}): tests pass" in message
    assert worktrees(repo) == []


def test_with_clean_verify_off_the_stop_hook_runs_the_checks_in_place(
    rs: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owned_claimed_loop(rs, monkeypatch, NEEDS_HELPER)
    assert rs("config", "clean-verify", "off").code == 0
    (repo / "helper.py").write_text("X = 1\n")
    claim(repo)
    state = load(repo)
    assert state["status"] == "complete"
    assert "clean" not in state["evidence"]["tests pass"]


AGENT = r"""
import subprocess, sys
from pathlib import Path
Path("helper.py").write_text("X = 1\n")
if sys.argv[1] == "adds":
    subprocess.run(["git", "add", "helper.py"], check=True)
subprocess.run([sys.executable, "-m", "ralphstate", "criteria", "set", "tests pass", "true"],
               check=True)
"""


@pytest.mark.parametrize(
    ("behaviour", "complete"), [("forgets", False), ("adds", True)], ids=["untracked", "added"]
)
def test_run_accepts_a_completion_only_from_the_clean_room(
    rs: Any, repo: Path, tmp_path: Path, behaviour: str, complete: bool
) -> None:
    loop_with(rs, NEEDS_HELPER)
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = spawn.join_command([sys.executable, str(script), behaviour])
    done = run_process(["run", "--agent", agent, "--max", "1"], cwd=repo, timeout=120)
    state = load(repo)
    assert (state["status"] == "complete") is complete, done.stdout
    assert (done.returncode == 0) is complete
    evidence = state["evidence"]["tests pass"]
    assert evidence["clean"] is True and (evidence["result"] == "verified") is complete
    assert worktrees(repo) == []


def test_a_room_that_cannot_be_made_fails_the_stop_open_without_completing(
    rs: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ralphstate.storage.repo import cleanroom
    from tests.helpers.hardening import hook

    owned_claimed_loop(rs, monkeypatch, py("pass"))

    def broken(*args: object, **kw: object) -> None:
        raise cleanroom.CleanRoomError("could not make the clean room: git failed to commit")

    monkeypatch.setattr(cleanroom, "open_room", broken)
    data = {"session_id": SID, "cwd": str(repo), "last_assistant_message": "<loop-complete>"}
    done = hook("stop", data)
    assert done.code == 0 and b'"block"' not in done.out
    assert "could not make the clean room: git failed to commit" in done.text
    assert load(repo)["status"] == "in_progress"


def test_the_clean_room_runs_the_guarded_tests_as_the_person_approved_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rs: Any
) -> None:
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "guarded"
    root.mkdir()
    init_repo(root, {"tests/test_value.py": "VALUE_OK = False\n", "tests/new.txt": "x\n"})
    monkeypatch.chdir(root)
    assert rs("init", "Make it true", "-c", "ok").code == 0
    check = py("import runpy; assert runpy.run_path('tests/test_value.py')['VALUE_OK']")
    assert rs("criteria", "check", "ok", check).code == 0
    (root / "tests" / "test_value.py").write_text("VALUE_OK = True\n")  # weakened in place
    (root / "tests" / "test_added.py").write_text("def test_new():\n    pass\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the agent's edit, committed")
    assert rs("verify").code == 0  # in place the weakened test passes
    assert rs("verify", "--clean").code == 1  # the clean room has the approved one back
    assert load(root)["evidence"]["ok"]["result"] == "failing"
