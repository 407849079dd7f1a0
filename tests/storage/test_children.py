"""Child processes (storage/system/children.py) with real processes: each in a group of its
own, stopped in stages with everything it started, its output read with only a bounded
part kept."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ralphstate.storage.system import children, process
from tests.helpers.checks import alive, wait_for

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")
PY = sys.executable

# Writes its pid to argv[1] and sleeps; with argv[2], ignoring SIGTERM.
SLEEPER = (
    "import os, pathlib, signal, sys, time\n"
    "if sys.argv[2:]: signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))\n"
    "time.sleep(60)\n"
)
# Ignores SIGTERM, and so does the sleeper it starts.
STUBBORN = f"""\
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", {SLEEPER!r}, sys.argv[1], "stubborn"])
time.sleep(60)
"""
# Starts a sleeper in a session of its own, which keeps stdout open, and exits.
ESCAPER = f"""\
import subprocess, sys
subprocess.Popen([sys.executable, "-c", {SLEEPER!r}, sys.argv[1]], start_new_session=True)
"""


def pid_in(path: Path) -> int:
    wait_for(lambda: path.exists() and path.read_text(), f"{path.name} to be written")
    return int(path.read_text())


def test_kept_keeps_the_head_or_the_tail_and_counts_all() -> None:
    head, tail = children.Kept(5), children.Kept(5, tail=True)
    for chunk in (b"abc", b"defgh", b"", b"ijklmnopqrstu"):
        head.take(chunk)
        tail.take(chunk)
    assert (head.data, head.total) == (b"abcde", 21)
    assert (tail.data, tail.total) == (b"qrstu", 21)
    assert len(tail.buffer) <= 2 * 5 + len(b"ijklmnopqrstu")


def test_run_keeps_the_start_of_stdout_and_of_stderr(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('a' * 100000); sys.stderr.write('b' * 100000)"
    done = children.run([PY, "-c", code], cwd=tmp_path, timeout=60, limit=10)
    assert (done.code, done.out, done.err) == (0, b"a" * 10, b"b" * 10)


def test_run_feeds_its_input_and_keeps_the_tail_when_asked(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read()[::-1])"
    data = b"begin" + b"x" * 200_000  # more than a pipe holds: written while it is read
    done = children.run([PY, "-c", code], input=data, timeout=60, limit=5, tail=True)
    assert (done.code, done.out, done.err) == (0, b"nigeb", b"")
    done = children.run([PY, "-c", code], input=b"abc", timeout=None, limit=5)
    assert (done.code, done.out) == (0, b"cba")


def test_input_a_child_never_reads_is_no_error_and_no_hang() -> None:
    started = time.monotonic()
    done = children.run([PY, "-c", "pass"], input=b"x" * 1_000_000, timeout=60, limit=10)
    assert (done.code, done.out) == (0, b"")
    assert time.monotonic() - started < 30


def test_a_program_that_cannot_start_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        children.run(["no-such-program-here"], cwd=tmp_path, timeout=5, limit=10)


@POSIX_ONLY
def test_a_child_leads_a_session_of_its_own() -> None:
    child = children.start([PY, "-c", "import time; time.sleep(60)"])
    try:
        assert os.getsid(child.pid) == os.getpgid(child.pid) == child.pid != os.getsid(0)
    finally:
        children.kill(child)
        child.wait()


@POSIX_ONLY
def test_run_past_its_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleeper.pid"
    script = f"sleep 60 & echo $! > '{pid_file}'; wait"
    started = time.monotonic()
    done = children.run(["sh", "-c", script], cwd=tmp_path, timeout=1.0, limit=10)
    assert done.code is None
    assert time.monotonic() - started < 30
    wait_for(lambda: not alive(pid_in(pid_file)), "the background sleeper to be killed")


@POSIX_ONLY
def test_stop_goes_on_to_kill_when_the_group_ignores_terminate(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    child = children.start([PY, "-c", STUBBORN, str(pid_file)])
    grandchild = pid_in(pid_file)
    started = time.monotonic()
    children.stop(child, grace=0.5)
    assert time.monotonic() - started >= 0.5
    assert child.returncode == -signal.SIGKILL
    wait_for(lambda: not alive(grandchild), "what the child started to be killed")


@POSIX_ONLY
def test_stop_ends_at_the_first_stage_the_group_obeys() -> None:
    child = children.start([PY, "-c", "import time; time.sleep(60)"])
    started = time.monotonic()
    children.stop(child, grace=30)
    assert time.monotonic() - started < 20
    assert child.returncode == -signal.SIGTERM
    assert not children.group_alive(child.pid)


@POSIX_ONLY
def test_reading_gives_up_on_a_pipe_held_open_outside_the_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    child = children.start([PY, "-c", ESCAPER, str(pid_file)], stdout=subprocess.PIPE)
    assert child.stdout is not None
    kept = children.Kept(10)
    reader = children.read(child.stdout, kept.take)
    escaped = pid_in(pid_file)
    try:
        child.wait(30)
        children.kill(child)
        assert not children.finish_reading(reader, child.stdout, 0.3)
        assert not child.stdout.closed  # left to the reader
    finally:
        os.kill(escaped, signal.SIGKILL)
    assert children.finish_reading(reader, child.stdout, 30)
    assert child.stdout.closed


@pytest.mark.skipif(shutil.which("ps") is None, reason="no ps")
def test_without_proc_a_start_time_comes_from_ps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    mine = process.start_time(os.getpid())
    assert mine and mine == process.start_time(os.getpid())
    child = subprocess.Popen([PY, "-c", "pass"])
    child.wait()
    assert process.start_time(child.pid) is None
