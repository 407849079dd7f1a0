"""Locks on a file system without flock: real processes in which `fcntl.flock` fails
as it does on such mounts (ENOLCK: NFS without its lock daemon; EOPNOTSUPP, ENOSYS:
some FUSE and SMB mounts). The lock degrades to a marker file with stale detection;
an empty lock file an earlier process left behind never counts as held."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import state as st
from ralphstate.storage import process, registry
from ralphstate.storage.paths import LoopPaths

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
from ralphstate.storage import locking

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
