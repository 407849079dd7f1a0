"""Locks on a file system without flock: real processes in which `fcntl.flock` fails
as it does on such mounts (ENOLCK: NFS without its lock daemon; EOPNOTSUPP, ENOSYS:
some FUSE and SMB mounts). The lock degrades to a marker file with stale detection;
an empty lock file an earlier process left behind never counts as held."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import state as st
from ralphstate.storage.peruser import registry
from ralphstate.storage.system import process
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import run_agents
from tests.helpers.gitrepo import init_repo, use_identity

POSIX = pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX's")
ERRNOS = [errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS]

# Run ralphstate with flock failing as the file system would make it fail.
NO_FLOCK = """
import errno, fcntl, os, sys

def flock(fd, operation):
    raise OSError(int(os.environ["NO_FLOCK_ERRNO"]), "flock refused by the test")

fcntl.flock = flock
"""
COMMAND = (
    NO_FLOCK
    + """
from ralphstate.__main__ import main
sys.exit(main(sys.argv[1:]))
"""
)
LOCKER = (
    NO_FLOCK
    + """
from pathlib import Path
from ralphstate.storage.system import locking

lock, trace, rounds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
for _ in range(rounds):
    with locking.hold(lock, 30):
        with trace.open("a") as handle:
            handle.write(f"in {os.getpid()}\\n")
        with trace.open("a") as handle:
            handle.write(f"out {os.getpid()}\\n")
"""
)


def no_flock(code: int, script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_FLOCK_ERRNO": str(code)},
        check=False,
    )


@POSIX
@pytest.mark.parametrize("code", ERRNOS, ids=errno.errorcode.get)
def test_without_flock_locks_left_empty_by_earlier_processes_are_not_held(
    project: Path, rs: Any, code: int
) -> None:
    assert rs("init", "Export invoices", "-c", "tests pass").code == 0
    assert rs("criteria", "add", "docs written").code == 0
    # Every lock file an earlier process took is there, empty.
    assert (project / ".loop" / "state.lock").read_bytes() == b""

    done = no_flock(code, COMMAND, "criteria", "set", "1", "true", cwd=project)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "tests pass: met\n"
    adopted = no_flock(code, COMMAND, "adopt", cwd=project)  # writes the registry too
    assert (adopted.returncode, adopted.stderr) == (0, "")
    state = st.parse((project / ".loop" / "state.json").read_bytes())
    assert state["criteriaStatus"]["tests pass"] is True
    assert registry.knows(LoopPaths(project, project / ".loop"), state)
    assert sorted(p.name for p in (project / ".loop").iterdir() if "soft" in p.name) == []


@POSIX
def test_without_flock_the_lock_still_excludes(tmp_path: Path) -> None:
    lock, trace = tmp_path / "x.lock", tmp_path / "trace"
    lock.write_bytes(b"")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(lock), str(trace), "40"],
            env={**os.environ, "NO_FLOCK_ERRNO": str(errno.ENOLCK)},
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    lines = trace.read_text().splitlines()
    assert len(lines) == 3 * 40 * 2
    for entered, left in zip(lines[::2], lines[1::2], strict=True):
        assert entered.startswith("in ") and left == "out " + entered[3:]


@POSIX
def test_without_flock_a_lock_whose_owner_died_is_taken_over_and_a_live_one_is_not(
    project: Path, rs: Any
) -> None:
    assert rs("init", "Export invoices", "-c", "tests pass").code == 0
    marker = project / ".loop" / "state.lock.soft"
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    host = socket.gethostname()
    marker.write_text(f"{gone.stdout.strip()}\n{host}\n12345\n")
    done = no_flock(errno.ENOLCK, COMMAND, "criteria", "set", "1", "true", cwd=project)
    assert (done.returncode, done.stderr) == (0, "")
    assert not marker.exists()

    me = os.getpid()
    marker.write_text(f"{me}\n{host}\n{process.start_time(me)}\n")
    hook = no_flock(
        errno.ENOLCK,
        COMMAND,
        "hook",
        "pre-compact",
        cwd=project,
    )
    assert hook.returncode == 0
    held = no_flock(errno.ENOLCK, COMMAND, "pause", cwd=project)
    assert held.returncode == 1
    assert held.stderr == (
        f"ralphstate: {Path('.loop', 'state.lock')} is held by another process; gave up after 5s.\n"
    )
    assert marker.exists()
    assert orjson.loads((project / ".loop" / "state.json").read_bytes())["status"] == "in_progress"


@POSIX
@pytest.mark.parametrize("code", [0, *ERRNOS], ids=lambda c: errno.errorcode.get(c, "flock"))
def test_a_runs_lock_is_asked_as_the_store_takes_its_own(
    project: Path, rs: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """`worktree remove` and `init --force` refuse while a `ralphstate run` drives the
    loop, in one line, whether or not flock works (0: it does): on NFS without its lock
    daemon (ENOLCK) `worktree remove` once removed the worktree under the run, and
    ENOSYS added a warning of filelock's before the refusal."""
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"README": "the project\n", ".gitignore": ".loop/\n"})
    assert rs("init", "Export invoices", "-c", "tests pass").code == 0
    assert rs("worktree", "add", "alpha").code == 0
    alpha = project.parent / f"{project.name}-worktrees" / "alpha"
    record = tmp_path / "agent record"
    record.mkdir()
    monkeypatch.setenv("FAKE_AGENT_DIR", str(record))
    agent = run_agents.command(run_agents.write(tmp_path / "agents"), "stdin", "hang")

    # ralphstate on that file system (code 0: flock works)
    argv = [sys.executable, "-c", COMMAND] if code else [sys.executable, "-m", "ralphstate"]
    env = {**os.environ, "NO_FLOCK_ERRNO": str(code)}

    def ralphstate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*argv, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
        )

    runner = subprocess.Popen(
        [*argv, "run", "--agent", agent],
        cwd=alpha,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not (record / "pid").exists():  # the agent runs: the run holds its lock
            assert runner.poll() is None and time.monotonic() < deadline, runner.stderr
            time.sleep(0.05)
        removed = ralphstate("worktree", "remove", "alpha", cwd=project)
        assert (removed.returncode, removed.stdout) == (1, "")
        assert removed.stderr == (
            f"ralphstate: a `ralphstate run` is driving the loop in {alpha}; stop it first.\n"
        )
        assert (alpha / ".loop" / "state.json").exists()
        again = ralphstate("init", "--force", "Something else", "-c", "docs", cwd=alpha)
        assert again.returncode == 1
        assert again.stderr == (
            "ralphstate: a `ralphstate run` is driving this loop; stop it (Ctrl-C in its"
            " terminal) before you start another.\n"
        )
    finally:
        runner.send_signal(signal.SIGINT)
        _, err = runner.communicate(timeout=60)
    assert runner.returncode == 3, err
    removed = ralphstate("worktree", "remove", "alpha", cwd=project)
    assert removed.returncode == 0, removed.stderr
    assert not alpha.exists()
