"""Child processes: each starts in a process group of its own, is stopped with its whole
group, and has its output read as it comes with only a bounded part kept.

    child = children.start(argv, cwd=root, stdout=subprocess.PIPE)
    children.send(child, "terminate")       # one stage, to the whole group
    children.stop(child, grace=2.0)         # terminate; kill what is left after 2 s
    children.kill(child)                    # at once: a time budget is running
    done = children.run(["git", "status"], cwd=root, timeout=60, limit=256 * 1024)

On POSIX a child starts a new session, so its process group is its own and the
terminal's Ctrl-C does not reach it; a stage is a signal to that group ("interrupt"
SIGINT, "terminate" SIGTERM, "kill" SIGKILL), which reaches whatever the child started
in the background too. On Windows a child starts with CREATE_NEW_PROCESS_GROUP;
"interrupt" is a CTRL_BREAK to its group, "terminate" and "kill" are `taskkill /T` on
its process tree (`/F` for kill, and the child itself is then killed).

Output is read by a thread per stream (`read`), so a child that prints a lot never
blocks on a full pipe, and `Kept` keeps the first or the last bytes of it, never more
than its limit (`storage/repo/git.py` keeps the start of git's answer, `verify/onecheck.py`
the end of a check's output).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

TYPE_CHECKING = False  # `typing` is not imported at run time: the status line runs `run`
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from typing import IO, Any, Literal

    Stage = Literal["interrupt", "terminate", "kill"]

WINDOWS = sys.platform == "win32"
# How long a reader may go on after the child ended (something it started, outside its
# group, can hold the pipe open).
READ_AFTER_EXIT = 5.0
_CHUNK = 64 * 1024
# How often `stop` looks whether the group has ended.
_POLL = 0.02


def start(
    args: str | Sequence[str],
    *,
    shell: bool = False,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int = subprocess.DEVNULL,
    stdout: int = subprocess.DEVNULL,
    stderr: int = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """Start `args` in a process group of its own; OSError when it cannot be started.
    `stdin`, `stdout` and `stderr` are `subprocess.PIPE`, `DEVNULL` or `STDOUT`."""
    return subprocess.Popen(
        args,
        shell=shell,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        **_own_group(),
    )


def _own_group() -> dict[str, Any]:
    if sys.platform == "win32":  # spelled out so type checkers follow the branch
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


# -- stopping ----------------------------------------------------------------------


def send(child: subprocess.Popen[bytes], stage: Stage) -> None:
    """Send one stage of stopping to the child's whole group (its tree on Windows).
    A group that has ended already is not an error."""
    if sys.platform == "win32":  # spelled out so type checkers follow the branch
        _send_windows(child, stage)
        return
    signum = {
        "interrupt": signal.SIGINT,
        "terminate": signal.SIGTERM,
        "kill": signal.SIGKILL,
    }[stage]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


def _send_windows(child: subprocess.Popen[bytes], stage: Stage) -> None:  # pragma: no cover
    if stage == "interrupt":
        with contextlib.suppress(OSError):
            os.kill(child.pid, signal.CTRL_BREAK_EVENT)  # type: ignore[attr-defined,unused-ignore]
        return
    if child.poll() is None:
        # taskkill /T ends the whole tree; /F only at the last stage.
        command = ["taskkill", "/T", "/PID", str(child.pid)]
        if stage == "kill":
            command.insert(1, "/F")
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=10,
                check=False,
            )
    if stage == "kill":
        with contextlib.suppress(OSError):
            child.kill()


def kill(child: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole group at once (the child is not waited for)."""
    send(child, "kill")


def stop(child: subprocess.Popen[bytes], grace: float) -> None:
    """Stop the child's group: terminate, then kill, `grace` seconds apart; each stage goes
    to the whole group, the kill only when something in it still runs `grace` seconds
    later. The child is reaped when it ends within the last grace period."""
    stages: tuple[Stage, ...] = ("terminate", "kill")
    for stage in stages:
        send(child, stage)
        if _ended(child, grace):
            return


def _ended(child: subprocess.Popen[bytes], within: float) -> bool:
    """Wait up to `within` seconds for the child and (on POSIX) its whole group to end."""
    deadline = time.monotonic() + within
    while True:
        try:
            child.wait(max(min(_POLL, deadline - time.monotonic()), 0))
        except subprocess.TimeoutExpired:
            pass
        else:
            if not group_alive(child.pid):
                return True
            time.sleep(_POLL)
        if time.monotonic() >= deadline:
            return False


def group_alive(pgid: int) -> bool:
    """Some process of the group `pgid` still exists (POSIX; False on Windows, where
    there is no such group to ask)."""
    if sys.platform == "win32":  # spelled out so type checkers follow the branch
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # what is left cannot be signalled: no use waiting for it
        return False
    return True


# -- output ------------------------------------------------------------------------


class Kept:
    """The bytes a stream carried, bounded: the first `limit` of them, or with `tail`
    the last; and how many there were in all."""

    def __init__(self, limit: int, *, tail: bool = False) -> None:
        self.limit = limit
        self.tail = tail
        self.buffer = bytearray()
        self.total = 0

    def take(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.tail:
            self.buffer += chunk
            if len(self.buffer) > 2 * self.limit:  # trimmed now and then, not per chunk
                del self.buffer[: len(self.buffer) - self.limit]
        elif len(self.buffer) < self.limit:
            self.buffer += chunk[: self.limit - len(self.buffer)]

    @property
    def data(self) -> bytes:
        return bytes(self.buffer[-self.limit :] if self.tail else self.buffer)


def read(
    stream: IO[bytes], take: Callable[[bytes], None], name: str = "ralphstate-child-output"
) -> threading.Thread:
    """A started daemon thread that reads `stream` until it ends (or fails), handing
    each chunk to `take` as it comes."""

    def drain() -> None:  # holds the stream, so it stays open while it is read
        fd = stream.fileno()
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, _CHUNK):
                take(chunk)

    thread = threading.Thread(target=drain, name=name, daemon=True)
    thread.start()
    return thread


def write(stream: IO[bytes], data: bytes) -> threading.Thread:
    """A started daemon thread that writes `data` to `stream` and closes it, so a child
    that reads slowly, or not at all, never blocks its parent; one that ends without
    reading it all is not an error."""

    def feed() -> None:
        with contextlib.suppress(OSError):  # BrokenPipeError: it stopped reading
            try:
                stream.write(data)
            finally:
                stream.close()

    thread = threading.Thread(target=feed, name="ralphstate-child-input", daemon=True)
    thread.start()
    return thread


def finish_reading(thread: threading.Thread, stream: IO[bytes], timeout: float) -> bool:
    """Wait up to `timeout` seconds for `thread` to read `stream` to its end, then close
    the stream; False (and the stream left to the thread) when it is still reading:
    a process outside the group holds the pipe open."""
    thread.join(timeout)
    if thread.is_alive():
        return False
    with contextlib.suppress(OSError):
        stream.close()
    return True


# -- one command, its answer kept --------------------------------------------------


class Finished:
    """How a command `run` waited for ended: its exit code (None: it was killed at its
    timeout) and the bytes kept of its stdout and stderr."""

    __slots__ = ("code", "err", "out")

    def __init__(self, code: int | None, out: bytes, err: bytes) -> None:
        self.code = code
        self.out = out
        self.err = err


def run(
    args: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float | None,
    limit: int,
    tail: bool = False,
) -> Finished:
    """Run `args` until it ends, or kill its group at `timeout` seconds (None: no
    limit). Its stdin carries `input`, else it is closed. The first `limit` bytes of
    stdout and of stderr are kept (with `tail`, the last), the rest read and dropped.
    OSError when it cannot be started. An interrupt (KeyboardInterrupt) leaves the
    command to finish on its own, outside the terminal's group."""
    stdin = subprocess.DEVNULL if input is None else subprocess.PIPE
    child = start(
        args, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None and child.stderr is not None
    if input is not None:
        assert child.stdin is not None
        write(child.stdin, input)
    out, err = Kept(limit, tail=tail), Kept(limit, tail=tail)
    readers = [
        (read(child.stdout, out.take), child.stdout),
        (read(child.stderr, err.take), child.stderr),
    ]
    code: int | None = None
    try:
        code = child.wait(timeout)
    except subprocess.TimeoutExpired:
        kill(child)
        child.wait()
    finally:
        for thread, stream in readers:
            finish_reading(thread, stream, READ_AFTER_EXIT)
    return Finished(code, out.data, err.data)
