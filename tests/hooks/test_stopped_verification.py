"""A verification stopped before its checks finished, through real hook processes and
real checks: the client's SIGTERM, and a SIGKILL nothing can catch. The checks never
outlive the hook that started them, and the stop is recorded where the person and the
next session look: history, `status`, SessionStart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_process
from tests.helpers.checks import PASS, alive, sleeper, wait_for
from tests.helpers.loops import load

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="signals and process groups")

SID = "session-a"
DONE = "All done. <loop-complete>"


@pytest.fixture
def pids() -> Iterator[list[int]]:
    """Processes a test started through a check: any still alive at its end is killed,
    so a failing test leaves nothing behind."""
    found: list[int] = []
    yield found
    for pid in found:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def looped(rs: Any, root: Path, checks: dict[str, str]) -> None:
    """A loop whose criteria are `checks`' keys, each with its check, all claimed met."""
    assert rs("init", "Build it", *[a for n in checks for a in ("-c", n)]).code == 0
    for name, command in checks.items():
        assert rs("criteria", "check", name, command).code == 0
        assert rs("criteria", "set", name, "true").code == 0


def signalled(
    root: Path, event: str, data: dict[str, Any], started: list[Path], signum: int
) -> int:
    """`ralphstate hook EVENT` on `data`, sent `signum` once every file of `started`
    exists (its checks have begun): its exit code."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ralphstate", "hook", event],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    proc.stdin.write(orjson.dumps(data))
    proc.stdin.close()
    wait_for(lambda: all(path.exists() for path in started), "the checks to start")
    proc.send_signal(signum)
    return proc.wait(timeout=30)


def gone(pids: list[int]) -> None:
    """Wait until none of `pids` runs; fail when one outlives 10 s."""
    wait_for(lambda: not any(alive(pid) for pid in pids), "the checks to be killed", 10)


def claim() -> dict[str, Any]:
    return {"session_id": SID, "cwd": "", "last_assistant_message": DONE}


def session_start(root: Path) -> dict[str, Any]:
    data = {"session_id": SID, "cwd": str(root), "source": "startup"}
    done = run_process(["hook", "session-start"], cwd=root, input=orjson.dumps(data))
    assert done.returncode == 0, done
    out: dict[str, Any] = orjson.loads(done.stdout)
    return out


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_sigterm_kills_the_checks_and_records_the_stop(
    rs: Any, project: Path, pids: list[int]
) -> None:
    slow, slow_pid, slow_started = sleeper(project, "slow")
    bg, bg_pid, bg_started = sleeper(project, "background")
    looped(rs, project, {"quick": PASS, "slow": f"{bg} & {slow}"})
    assert rs("criteria", "check", "slow", "--alone").code == 0  # after quick has finished
    data = {**claim(), "cwd": str(project)}
    code = signalled(project, "stop", data, [slow_started, bg_started], signal.SIGTERM)
    assert code == 0  # the client gave up: the stop goes through, as for any fault
    pids += [int(slow_pid.read_text()), int(bg_pid.read_text())]
    gone(pids)  # the check and what it started in the background
    state = load(project)
    mark = state["verifyInterrupted"]
    assert mark is not None
    assert (mark["by"], mark["how"], mark["criteria"]) == ("stop", "terminated", ["slow"])
    assert state["evidence"]["quick"]["result"] == "verified"  # what finished is kept
    assert state["evidence"]["slow"]["result"] == "claimed"  # the claim stands, unproven
    (event,) = [e for e in history(project) if e["event"] == "verify_interrupted"]
    assert (event["by"], event["how"], event["criteria"]) == ("stop", "terminated", ["slow"])
    status = rs("status").out
    assert "\nThe Stop hook's verification was stopped " in status
    assert " finished: `ralphstate verify` runs it.\n" in status
    out = session_start(project)
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "The Stop hook's verification was stopped " in context
    assert "so they proved nothing: the Stop hook runs them again at your next claim" in context
    assert "The Stop hook's verification was stopped " in out["systemMessage"]
    assert rs("criteria", "check", "slow", PASS).code == 0  # a quick one, for the test
    assert rs("verify").code == 0  # each check ran again: nothing is said any more
    assert load(project)["verifyInterrupted"] is None
    assert "verification was stopped" not in rs("status").out


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_sigkill_of_the_hook_kills_its_check_and_records_the_kill(
    rs: Any, project: Path, pids: list[int]
) -> None:
    """SIGKILL cannot be caught: the watchdog beside the hook kills the check's group and
    records the kill."""
    slow, slow_pid, slow_started = sleeper(project, "slow")
    bg, bg_pid, bg_started = sleeper(project, "background")
    looped(rs, project, {"slow": f"{bg} & {slow}"})
    data = {**claim(), "cwd": str(project)}
    code = signalled(project, "stop", data, [slow_started, bg_started], signal.SIGKILL)
    assert code == -signal.SIGKILL
    pids += [int(slow_pid.read_text()), int(bg_pid.read_text())]
    gone(pids)
    wait_for(lambda: load(project)["verifyInterrupted"] is not None, "the kill to be recorded", 10)
    mark = load(project)["verifyInterrupted"]
    assert mark is not None
    assert (mark["by"], mark["how"], mark["criteria"]) == ("stop", "killed", ["slow"])
    assert "\nThe Stop hook's verification was killed " in rs("status").out
    assert load(project)["criteriaStatus"] == {"slow": True}  # the claim stands, unproven


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_sigkill_of_verify_kills_its_checks(rs: Any, project: Path, pids: list[int]) -> None:
    """`ralphstate verify` killed outright (a shell's timeout that does not wait) takes
    its checks with it, running side by side, and the kill is recorded."""
    one, one_pid, one_started = sleeper(project, "one")
    two, two_pid, two_started = sleeper(project, "two")
    looped(rs, project, {"one": one, "two": two})
    proc = subprocess.Popen(
        [sys.executable, "-m", "ralphstate", "verify"],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(lambda: one_started.exists() and two_started.exists(), "the checks to start")
    proc.kill()
    proc.wait(timeout=30)
    pids += [int(one_pid.read_text()), int(two_pid.read_text())]
    gone(pids)
    wait_for(lambda: load(project)["verifyInterrupted"] is not None, "the kill to be recorded", 10)
    mark = load(project)["verifyInterrupted"]
    assert mark is not None
    assert (mark["by"], mark["how"], mark["criteria"]) == ("verify", "killed", ["one", "two"])


def history(root: Path) -> list[dict[str, Any]]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]
