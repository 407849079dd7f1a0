"""A job cancelled midway (the runner's SIGTERM to `ralphstate ci`) stops the run as
Ctrl-C does, and the branch it pushes holds the loop paused, with the iteration it cut
short recorded: nothing but that iteration is lost. Real processes and a real remote."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from ralphstate.run import spawn
from tests.helpers.gitrepo import git, init_repo, use_identity

HANG = "import sys, time\nsys.stdin.read()\nprint('working', flush=True)\ntime.sleep(20)\n"


def test_a_cancelled_job_pauses_the_loop_and_pushes_its_record(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"check.py": "raise SystemExit(1)\n"})
    rs = [sys.executable, "-m", "ralphstate"]
    check = ["criteria", "check", "tests pass", "python check.py"]
    for args in (["init", "Never done", "-c", "tests pass"], check):
        subprocess.run([*rs, *args], cwd=project, check=True, capture_output=True)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "the loop")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project, "remote", "add", "origin", str(remote))
    git(project, "push", "-q", "origin", "main")
    agent = tmp_path / "hang.py"
    agent.write_text(HANG)
    command = spawn.join_command([sys.executable, str(agent)])
    monkeypatch.setenv("RALPHSTATE_HOME", str(tmp_path / "runner"))
    job = subprocess.Popen(
        # --max 1: a run the signal did not stop still ends on its own, the agent's 20 s on
        [*rs, "ci", "--agent", command, "--branch", "loop/cancel", "--no-next-job", "--max", "1"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ,
    )
    record = project / ".loop" / "runs" / "agent.json"
    deadline = time.monotonic() + 60
    while not record.exists() and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.1)
    assert record.exists(), job.communicate(timeout=30)
    agent_pid = orjson.loads(record.read_bytes())["pid"]

    job.send_signal(signal.SIGTERM)
    out, err = job.communicate(timeout=60)

    assert job.returncode == 3, out + err
    pushed = orjson.loads(git(remote, "show", "loop/cancel:.loop/state.json"))
    assert (pushed["status"], pushed["pauseReason"]) == ("paused", "user")
    assert pushed["iteration"] == 1
    assert b"ralphstate ci: paused (user)" in out
    assert not alive(agent_pid)  # nothing left running past the job


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie, ended but not yet reaped, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return "\nState:\tZ" not in status
