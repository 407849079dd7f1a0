"""One loop, one job at a time: the second `ralphstate ci` on a loop whose lock another
job holds on the remote stops before anything runs, in one sentence; the first goes on
and loses nothing; a lock whose job died is taken over. Real processes, a real remote,
each job in its own clone with its own per-user directory, as two runners would be."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from ralphstate.ci import limitshare, remotelock
from ralphstate.run import spawn
from tests.helpers import run_agents
from tests.helpers.gitrepo import git, init_repo, use_identity

FIXTURES = Path(__file__).parent.parent / "fixtures"

SLOW = (
    "import sys, time\nfrom pathlib import Path\nsys.stdin.read()\n"
    "Path('step.txt').write_text('one\\n')\nprint('working', flush=True)\ntime.sleep(6)\n"
)
RS = [sys.executable, "-m", "ralphstate"]
BRANCH = "loop/one"


@pytest.fixture
def remote(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"check.py": "raise SystemExit(1)\n"})
    check = ["criteria", "check", "tests pass", "python check.py"]
    for args in (["init", "Never done", "-c", "tests pass"], check):
        subprocess.run([*RS, *args], cwd=project, check=True, capture_output=True)
    git(project, "add", "-A")
    git(project, "commit", "-qm", "the loop")
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(project, "remote", "add", "origin", str(bare))
    git(project, "push", "-q", "origin", "main")
    return bare


def runner(tmp_path: Path, remote: Path, name: str) -> tuple[Path, dict[str, str]]:
    """A new runner: a clone of the remote and a per-user directory of its own."""
    clone = tmp_path / name
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    env = {**os.environ, "RALPHSTATE_HOME": str(tmp_path / f"{name}-home")}
    return clone, env


def ci(clone: Path, env: dict[str, str], agent: Path) -> subprocess.Popen[bytes]:
    command = spawn.join_command([sys.executable, str(agent)])
    args = ["ci", "--agent", command, "--branch", BRANCH, "--no-next-job", "--max", "1"]
    return subprocess.Popen(
        [*RS, *args], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_a_second_job_on_a_loop_stops_and_the_first_loses_nothing(
    remote: Path, tmp_path: Path
) -> None:
    agent = tmp_path / "slow.py"
    agent.write_text(SLOW)
    first_clone, first_env = runner(tmp_path, remote, "first")
    second_clone, second_env = runner(tmp_path, remote, "second")
    first = ci(first_clone, first_env, agent)
    record = first_clone / ".loop" / "runs" / "agent.json"
    deadline = time.monotonic() + 60
    while not record.exists() and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.1)
    assert record.exists(), first.communicate(timeout=30)

    second = ci(second_clone, second_env, agent)
    out, err = second.communicate(timeout=120)

    assert second.returncode == 1, out + err
    assert b"another job runs this loop" in err and len(err.strip().splitlines()) == 1
    assert not (second_clone / ".loop" / "runs" / "agent.json").exists()  # nothing ran
    out, err = first.communicate(timeout=120)
    pushed = orjson.loads(git(remote, "show", f"{BRANCH}:.loop/state.json"))
    assert pushed["iteration"] == 1  # the first job's iteration, on the remote
    assert git(remote, "show", f"{BRANCH}:step.txt") == "one"
    assert git(remote, "for-each-ref", remotelock.PREFIX) == ""  # let go at its end


def test_a_lock_whose_job_died_is_taken_over(remote: Path, tmp_path: Path) -> None:
    clone, env = runner(tmp_path, remote, "runner")
    tree = git(clone, "hash-object", "-t", "tree", "-w", "/dev/null")
    dead = git(clone, "commit-tree", tree, "-m", f"{time.time() - 60:.0f} a job that died")
    git(clone, "push", "-q", "origin", f"{dead}:{remotelock.ref_of(BRANCH)}")
    agent = tmp_path / "quick.py"
    agent.write_text("import sys\nsys.stdin.read()\nprint('working')\n")

    done = ci(clone, env, agent)
    _out, err = done.communicate(timeout=120)

    assert b"another job" not in err, err
    assert orjson.loads(git(remote, "show", f"{BRANCH}:.loop/state.json"))["iteration"] == 1
    assert git(remote, "for-each-ref", remotelock.PREFIX) == ""


def test_a_usage_limit_one_job_finds_parks_the_jobs_of_every_other_loop(
    remote: Path, tmp_path: Path
) -> None:
    """The first loop's agent hits the provider's usage limit (a real client's recorded
    output, resetting days away): its job tells the remote; a job of another loop that
    starts next does not start its agent at all, and says until when."""
    agents = tmp_path / "agents"
    agents.mkdir()
    script = run_agents.write(agents)
    limit = (FIXTURES / "outputs" / "codex_exec_json_usage_limit.jsonl").read_bytes()
    run_agents.replay(agents, limit, exit_code=1)
    limited = run_agents.command(script, "stdin", "replay")
    first_clone, first_env = runner(tmp_path, remote, "first")
    first_env.update(run_agents.env(agents))
    args = ["ci", "--agent", limited, "--branch", BRANCH, "--no-next-job", "--max", "1"]
    done = subprocess.run([*RS, *args], cwd=first_clone, env=first_env, capture_output=True)
    assert b"is told to every other job" in done.stdout, done.stdout + done.stderr
    told = git(remote, "log", "-1", "--format=%B", limitshare.REF)
    assert limitshare.words(float(told.split()[0])) == "2027-01-01T10:00:00Z"

    second_clone, second_env = runner(tmp_path, remote, "second")
    mark = tmp_path / "second-agent-ran"
    other = spawn.join_command([sys.executable, "-c", f"open({str(mark)!r}, 'w')"])
    args = ["ci", "--agent", other, "--branch", "loop/other", "--no-next-job"]
    parked = subprocess.run([*RS, *args], cwd=second_clone, env=second_env, capture_output=True)

    assert parked.returncode == 3, parked.stdout + parked.stderr
    assert b"resets at 2027-01-01T10:00:00Z" in parked.stdout
    assert b"ralphstate ci: paused (limit)" in parked.stdout
    assert not mark.exists()  # its agent never started
