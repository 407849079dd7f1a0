"""Verification that fits any suite, through real `ralphstate` and hook processes in real
repositories: a check verified on the code the work tree holds is not run again at a
stop; a suite longer than the stop's budget is verified by the hook's own background
verification, and the loop completes at a later stop; checks run side by side, those that
must run alone with nothing beside them, and are printed in the loop's order."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_process
from tests.helpers.checks import script
from tests.helpers.gitrepo import git, init_repo, use_identity
from tests.helpers.loops import load

SID = "session-a"
DONE = "All done. <loop-complete>"
POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell checks")


@pytest.fixture
def repo(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"app.py": "VALUE = 1\n", ".gitignore": "runs/\n"})
    (project / "runs").mkdir()
    return project


def counted(root: Path, name: str, seconds: float = 0.0, code: int = 0) -> str:
    """A check that appends a line to runs/NAME each time it starts (outside the clean
    room: the path is absolute), sleeps `seconds` and exits `code`."""
    log = root / "runs" / name
    return script(
        root / "runs" / f"{name}.py",
        "import sys, time\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write('ran\\n')\n"
        f"time.sleep({seconds})\n"
        f"sys.exit({code})\n",
    )


def runs(root: Path, name: str) -> int:
    log = root / "runs" / name
    return len(log.read_text().splitlines()) if log.exists() else 0


def stop(root: Path) -> dict[str, Any]:
    data = {"session_id": SID, "cwd": str(root), "last_assistant_message": DONE}
    done = run_process(["hook", "stop"], cwd=root, input=orjson.dumps(data), timeout=120)
    assert done.returncode == 0, done
    assert done.stderr == b"", done.stderr
    out: dict[str, Any] = orjson.loads(done.stdout)
    return out


def claim(rs: Any, *names: str) -> None:
    for name in names:
        assert rs("criteria", "set", name, "true").code == 0


def history(root: Path) -> list[dict[str, Any]]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


# -- a suite longer than the stop's budget ---------------------------------------------


RUNNING = "ralphstate is running it itself, in a clean room, in the background (running for "


def stop_until_done(root: Path, tries: int = 30) -> list[dict[str, Any]]:
    """Stops, a second apart, while the stop blocks on the background verification."""
    outs = [stop(root)]
    while outs[-1].get("decision") == "block" and RUNNING in outs[-1]["reason"]:
        assert len(outs) < tries, outs[-1]
        time.sleep(1)
        outs.append(stop(root))
    return outs


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
@POSIX_ONLY
def test_a_suite_longer_than_the_budget_completes_a_loop_at_a_stop(rs: Any, repo: Path) -> None:
    """The budget is 1 s and the suite takes 3: the stop blames nothing and verifies
    the check itself in the background; a later stop takes its pass and completes.
    Then, on new code, the stop knows from the last run that it cannot fit and does not
    run it in the hook: only the background verification does."""
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "tests pass", counted(repo, "suite", 3)).code == 0
    assert rs("config", "verify-budget", "1").out == "verify-budget: 1s\n"
    assert "checks at a stop: 1s · " in rs("status").out
    claim(rs, "tests pass")

    out = stop(repo)
    assert out["decision"] == "block"
    reason = out["reason"]
    assert "ralphstate did not run 1 check here: it does not fit the 1s a stop may spend" in reason
    assert "(tests pass (cut short by the stop's time)). Nothing failed" in reason
    assert RUNNING in reason, reason
    assert "Your own `ralphstate verify` does not stand for it" in reason
    assert "Fix what" not in reason and "failed" not in reason.replace("Nothing failed", "")
    state = load(repo)
    assert state["criteriaStatus"] == {"tests pass": True}  # nothing set back
    assert state["evidence"]["tests pass"]["result"] == "claimed"
    assert (state["status"], state["iteration"]) == ("in_progress", 1)
    assert history(repo)[-1]["event"] == "verify_yourself"
    assert history(repo)[-1]["left"] == ["tests pass"]

    outs = stop_until_done(repo)
    assert "decision" not in outs[-1], outs[-1]
    assert outs[-1]["systemMessage"].startswith("ralphstate: loop complete after ")
    assert load(repo)["status"] == "complete"
    assert load(repo)["evidence"]["tests pass"]["by"] == "stop"
    assert runs(repo, "suite") == 2  # cut short once in the hook, once in the background

    # More work on new code: the last run (3 s) says it cannot fit a 1 s budget.
    assert rs("criteria", "set", "tests pass", "false").code == 0
    assert rs("resume").code == 0
    (repo / "app.py").write_text("VALUE = 2\n")
    claim(rs, "tests pass")
    started = time.monotonic()
    out = stop(repo)
    assert out["decision"] == "block"
    assert "(tests pass (3s last time))" in out["reason"] and RUNNING in out["reason"]
    assert time.monotonic() - started < 3  # not run in the hook
    assert "decision" not in stop_until_done(repo)[-1]
    assert runs(repo, "suite") == 3


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
@POSIX_ONLY
def test_a_failing_check_is_blamed_and_the_long_one_left_to_the_model(rs: Any, repo: Path) -> None:
    assert rs("init", "Build it", "-c", "tests pass", "-c", "lint clean").code == 0
    assert rs("criteria", "check", "tests pass", counted(repo, "suite", 3)).code == 0
    assert rs("criteria", "check", "lint clean", counted(repo, "lint", 0, 1)).code == 0
    assert rs("config", "verify-budget", "1").code == 0
    claim(rs, "tests pass", "lint clean")
    reason = stop(repo)["reason"]
    head, _, rest = reason.partition("\n\n")
    assert head.startswith("ralphstate did not run 1 check here: it does not fit the 1s")
    assert RUNNING in head
    assert rest.startswith("You claimed every criterion; ralphstate ran the checks and 1 failed.")
    assert load(repo)["criteriaStatus"] == {"tests pass": True, "lint clean": False}


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
@POSIX_ONLY
def test_the_task_gate_keeps_a_task_open_whose_check_does_not_fit(rs: Any, repo: Path) -> None:
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "tests pass", counted(repo, "suite", 3)).code == 0
    assert rs("config", "verify-budget", "1").code == 0
    data = {"session_id": SID, "cwd": str(repo), "task_id": "1", "task_subject": "tests pass"}
    done = run_process(["hook", "task-completed"], cwd=repo, input=orjson.dumps(data), timeout=60)
    assert done.returncode == 2  # the task stays open: the client tells the model why
    err = done.stderr.decode()
    assert err.startswith("ralphstate: this task stays open until its checks have run.\n")
    assert "ralphstate is running it itself, in a clean room, in the background" in err
    assert err.endswith("Then complete the task again.\n")
    assert load(repo)["evidence"] == {}  # cut short: nothing recorded, nothing blamed

    # The background verification ends; a later completion of the task takes its pass.
    for _ in range(30):
        time.sleep(1)
        again = run_process(
            ["hook", "task-completed"], cwd=repo, input=orjson.dumps(data), timeout=60
        )
        if again.returncode == 0:
            break
        assert "in the background (running for " in again.stderr.decode(), again.stderr
    assert again.returncode == 0, again.stderr
    assert load(repo)["evidence"]["tests pass"]["by"] == "task"
    assert runs(repo, "suite") == 2  # cut short in the hook, then in the background


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_a_budget_of_zero_leaves_every_check_to_the_model(rs: Any, repo: Path) -> None:
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "tests pass", counted(repo, "suite")).code == 0
    assert rs("config", "verify-budget", "0").code == 0
    claim(rs, "tests pass")
    reason = stop(repo)["reason"]
    assert "(tests pass (not timed yet))" in reason and RUNNING in reason
    assert load(repo)["status"] == "in_progress"
    assert "loop complete" in stop_until_done(repo)[-1]["systemMessage"]
    assert runs(repo, "suite") == 1  # only in the background


def test_the_budget_is_a_setting(rs: Any, repo: Path) -> None:
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "tests pass", counted(repo, "suite")).code == 0
    assert rs("config", "verify-budget").out == "default (120s)\n"
    assert "\nchecks at a stop: 120s (the default) · " in rs("status").out
    assert rs("config", "verify-budget", "300").out == "verify-budget: 300s\n"
    assert load(repo)["verifyBudget"] == 300
    bad = rs("config", "verify-budget", "a lot")
    assert bad.code == 1 and "verify-budget must be seconds from 0 to 3600" in bad.err
    assert rs("config", "verify-jobs", "3").out == "verify-jobs: 3\n"
    assert "\nchecks at a stop: 300s · 3 at once\n" in rs("status").out
    assert rs("config", "verify-budget", "default").out == "verify-budget: default (120s)\n"


# -- fresh evidence is not run again ------------------------------------------------------


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_checks_verified_on_this_code_are_not_run_again(rs: Any, repo: Path) -> None:
    assert rs("init", "Build it", "-c", "a", "-c", "b").code == 0
    assert rs("criteria", "check", "a", counted(repo, "a")).code == 0
    assert rs("criteria", "check", "b", counted(repo, "b")).code == 0
    assert rs("verify", "--clean", "a").code == 0
    claim(rs, "b")
    out = stop(repo)
    assert "loop complete" in out["systemMessage"]
    assert (runs(repo, "a"), runs(repo, "b")) == (1, 1)  # only b ran at the stop


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_in_place_evidence_does_not_stand_for_the_clean_room(rs: Any, repo: Path) -> None:
    assert rs("init", "Build it", "-c", "a").code == 0
    assert rs("criteria", "check", "a", counted(repo, "a")).code == 0
    assert rs("verify").code == 0  # in the project: not what the Stop hook proves
    assert "loop complete" in stop(repo)["systemMessage"]
    assert runs(repo, "a") == 2


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_evidence_written_by_hand_is_run_again(rs: Any, repo: Path) -> None:
    """The stop trusts a pass only when the ledger, outside the project, saw it."""
    assert rs("init", "Build it", "-c", "a", "-c", "b").code == 0
    assert rs("criteria", "check", "a", counted(repo, "a")).code == 0
    assert rs("criteria", "check", "b", counted(repo, "b", 0, 1)).code == 0
    assert rs("verify", "--clean", "a").code == 0  # a real pass of a, on this code
    path = repo / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw["criteriaStatus"]["b"] = True
    raw["evidence"]["b"] = {**raw["evidence"]["a"], "command": raw["checks"]["b"]}
    path.write_bytes(orjson.dumps(raw))
    out = stop(repo)
    assert out["decision"] == "block" and "- b: `" in out["reason"]
    assert (runs(repo, "a"), runs(repo, "b")) == (1, 1)


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_a_change_to_the_code_runs_the_check_again(rs: Any, repo: Path) -> None:
    assert rs("init", "Build it", "-c", "a").code == 0
    assert rs("criteria", "check", "a", counted(repo, "a")).code == 0
    assert rs("verify", "--clean").code == 0
    (repo / "app.py").write_text("VALUE = 3\n")
    assert "loop complete" in stop(repo)["systemMessage"]
    assert runs(repo, "a") == 2
    git(repo, "status")  # the repository is left as it was: no worktree, no lock


# -- side by side ------------------------------------------------------------------------


def barrier(root: Path, name: str, count: int) -> str:
    """A check that passes only when `count` such checks run at the same time: each
    marks itself, then waits (5 s at most) until all have."""
    here = root / "runs" / "here"
    here.mkdir(exist_ok=True)
    return script(
        root / "runs" / f"barrier-{name}.py",
        "import os, sys, time\n"
        f"open(os.path.join({str(here)!r}, {name!r}), 'w').close()\n"
        "deadline = time.monotonic() + 5\n"
        f"while len(os.listdir({str(here)!r})) < {count}:\n"
        "    if time.monotonic() > deadline:\n"
        "        sys.exit(1)\n"
        "    time.sleep(0.02)\n",
    )


def test_checks_run_side_by_side_and_print_in_the_loops_order(rs: Any, project: Path) -> None:
    (project / "runs").mkdir()
    names = ["one", "two", "three", "four"]
    assert rs("init", "Build it", *[a for n in names for a in ("-c", n)]).code == 0
    for name in names:
        assert rs("criteria", "check", name, barrier(project, name, len(names))).code == 0
    done = rs("verify")
    assert done.code == 0, done
    shown = [line.split()[:2] for line in done.out.splitlines()[:4]]
    assert shown == [["PASS", n] for n in names]
    assert [e["criterion"] for e in history(project) if e["event"] == "check"] == names


def test_the_bound_on_checks_at_once_is_kept(rs: Any, project: Path) -> None:
    (project / "runs").mkdir()
    assert rs("init", "Build it", "-c", "one", "-c", "two").code == 0
    for name in ("one", "two"):
        assert rs("criteria", "check", name, barrier(project, name, 2)).code == 0
    assert rs("config", "verify-jobs", "1").code == 0
    assert rs("verify").code == 1  # one at a time, neither ever meets the other


def alone_check(root: Path, name: str, alone: bool) -> str:
    """A check that marks itself running for 0.3 s; one that runs alone fails when it
    sees another running."""
    running = root / "runs" / "running"
    running.mkdir(exist_ok=True)
    look = (
        f"    if os.listdir({str(running)!r}) != [{name!r}]:\n        sys.exit(1)\n"
        if alone
        else "    pass\n"
    )
    return script(
        root / "runs" / f"alone-{name}.py",
        "import os, sys, time\n"
        f"mark = os.path.join({str(running)!r}, {name!r})\n"
        "open(mark, 'w').close()\n"
        "for _ in range(15):\n"
        f"{look}"
        "    time.sleep(0.02)\n"
        "os.unlink(mark)\n",
    )


def test_a_check_that_runs_alone_has_nothing_beside_it(rs: Any, project: Path) -> None:
    (project / "runs").mkdir()
    names = ["a", "b", "solo", "c", "d"]
    assert rs("init", "Build it", *[a for n in names for a in ("-c", n)]).code == 0
    for name in names:
        command = alone_check(project, name, name == "solo")
        assert rs("criteria", "check", name, command).code == 0
    described = rs("criteria", "check", "solo", "--alone").out
    assert described.endswith("(timeout 600s, default; runs alone)\n")
    assert "  solo: " in rs("status").out and "  (runs alone)" in rs("status").out
    assert load(project)["runAlone"] == ["solo"]
    for _ in range(3):
        done = rs("verify")
        assert done.code == 0, done.out
    assert rs("criteria", "check", "solo", "--not-alone").code == 0
    assert load(project)["runAlone"] == []


@pytest.mark.usefixtures("unconfined_checks")
@POSIX_ONLY
def test_a_background_verification_that_keeps_ending_without_a_result_fails_open(
    rs: Any, repo: Path
) -> None:
    """A job on this code whose process ended with no result is started again, at most
    MAX_TRIES times in a row; then the stop lets the agent go and says why, rather than
    block on it at every stop."""
    from ralphstate.storage.system import paths
    from ralphstate.verify import background

    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "tests pass", counted(repo, "suite")).code == 0
    assert rs("config", "verify-budget", "0").code == 0
    claim(rs, "tests pass")
    loop = paths.at(str(repo / ".loop"))
    gone = subprocess.Popen(["true"])  # a process that is gone
    gone.wait()
    job = background.Job(
        ["tests pass"], background.identity(loop, load(repo)), "0" * 64, gone.pid,
        time.time(), tries=background.MAX_TRIES,
    )  # fmt: skip
    background.job_path(loop).parent.mkdir(parents=True, exist_ok=True)
    background.job_path(loop).write_bytes(orjson.dumps(dataclasses.asdict(job)))

    data = {"session_id": SID, "cwd": str(repo), "last_assistant_message": DONE}
    done = run_process(["hook", "stop"], cwd=repo, input=orjson.dumps(data), timeout=60)

    assert done.returncode == 0, done
    out = orjson.loads(done.stdout) if done.stdout.strip() else {}
    assert out.get("decision") != "block", out
    said = done.stderr.decode() + str(out)
    assert "ended 3 times without a result" in said, said
    assert load(repo)["status"] == "in_progress"
    assert runs(repo, "suite") == 0


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
@POSIX_ONLY
def test_outside_git_the_background_verification_is_never_said_to_be_clean(
    rs: Any, project: Path, tmp_path: Path
) -> None:
    """Outside a git repository the checks run in the project root: neither the stop
    that starts the background verification nor one that finds it still running says
    it runs in a clean room. (The check writes outside the project: a file it wrote
    there would change the code's identity, and the job would start again.)"""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "runs").mkdir(parents=True)
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "tests pass", counted(elsewhere, "suite", 4)).code == 0
    assert rs("config", "verify-budget", "1").code == 0
    claim(rs, "tests pass")

    first, second = stop(project), stop(project)

    for out in (first, second):
        assert out["decision"] == "block", out
        assert "ralphstate is running it itself, in the background" in out["reason"], out
        assert "clean room" not in out["reason"], out
