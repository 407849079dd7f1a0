"""One agent process for `ralphstate run`: started in its own process group, its
output streamed to the terminal and to a log file, and stopped in order when it
must be (interrupt, then terminate, then kill, with a grace period between).

Ctrl-C reaches only this process (the agent has its own process group, so the
terminal does not signal it); `Interrupts` turns the first one into an orderly
stop of the agent and a second one into an immediate exit.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.system import children

WINDOWS = sys.platform == "win32"
# How often the waiting loop looks at the clock and at Ctrl-C.
_POLL = 0.05

Echo = Callable[[bytes], None]


# -- the command line ------------------------------------------------------------


def split_command(text: str) -> list[str]:
    """The agent command as an argument list: shell-like quoting, no shell."""
    try:
        if WINDOWS:
            parts = [_unquote(p) for p in shlex.split(text, posix=False)]
        else:
            parts = shlex.split(text)
    except ValueError as exc:
        raise RalphstateError(f"the agent command {text!r} cannot be read ({exc}).") from None
    if not parts:
        raise RalphstateError("the agent command is empty.")
    return parts


def _unquote(part: str) -> str:
    if len(part) >= 2 and part[0] == part[-1] == '"':
        return part[1:-1]
    return part


def join_command(argv: list[str]) -> str:
    """An argument list as one line a person could paste into their shell."""
    return subprocess.list2cmdline(argv) if WINDOWS else shlex.join(argv)


def resolve(program: str, cwd: Path) -> str | None:
    """The program's path: looked up on PATH, or relative to `cwd` when it names a path."""
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program)
        path = path if path.is_absolute() else cwd / path
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(program)


# -- Ctrl-C ------------------------------------------------------------------------


class Interrupts:
    """While installed, Ctrl-C, SIGTERM and SIGHUP (the terminal closed) are counted
    instead of raising at once.

    With an agent running, the first one asks the wait loop to stop the agent in
    order; a second kills the agent's process group and raises KeyboardInterrupt.
    With no agent running, any of them raises KeyboardInterrupt.
    """

    def __init__(self) -> None:
        self.count = 0
        # True from just before the agent starts until it has ended.
        self.agent_phase = False
        self.child: subprocess.Popen[bytes] | None = None
        # The name of the first signal that came (SIGINT, SIGTERM, SIGHUP).
        self.first: str | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.first is None:
            self.first = signal.Signals(signum).name
        if self.agent_phase:
            if self.count < 2:
                return  # the wait loop starts the orderly stop
            if self.child is not None:
                children.kill(self.child)
        raise KeyboardInterrupt

    def __enter__(self) -> Interrupts:
        # SIGHUP: closing the terminal must stop the agent as SIGTERM does, not end the
        # runner and leave the agent running in its own session.
        wanted = [signal.SIGINT] if WINDOWS else [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
        for signum in wanted:
            try:
                self._previous[signum] = signal.signal(signum, self._handle)
            except ValueError:  # not the main thread: leave Ctrl-C as it is
                break
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()


# -- one agent run -----------------------------------------------------------------


@dataclass
class AgentRun:
    """What happened to one agent process."""

    exit_code: int
    duration: float
    timed_out: bool = False
    # Stopped for printing nothing for `idle_timeout` seconds (then also `timed_out`).
    idle: bool = False
    interrupted: bool = False
    # Stopped because the duration budgets ran out (the run sets it; then not `timed_out`).
    out_of_budget: bool = False
    # The stages sent to stop it: "interrupt", "terminate", "kill".
    stops: list[str] = field(default_factory=list)
    output_bytes: int = 0

    def describe(self) -> str:
        """`exit 0`, `exit 2` or `signal SIGTERM`, as a person reads it."""
        if self.exit_code < 0:
            try:
                return f"signal {signal.Signals(-self.exit_code).name}"
            except ValueError:
                return f"signal {-self.exit_code}"
        return f"exit {self.exit_code}"


class _Pump:
    """Copies the agent's output to the log file and the terminal until it ends."""

    def __init__(self, stream: IO[bytes], log: IO[bytes], echo: Echo) -> None:
        self.stream = stream
        self.log = log
        self.echo = echo
        self.lock = threading.Lock()
        self.closed = False
        self.count = 0
        # When the agent last printed anything (monotonic seconds).
        self.last = time.monotonic()
        self.reader = children.read(stream, self.take, "ralphstate-agent-output")

    def take(self, chunk: bytes) -> None:
        with self.lock:
            self.last = time.monotonic()
            if self.closed:
                return  # abandoned: keep draining so the writer never blocks
            self.count += len(chunk)
            with contextlib.suppress(OSError, ValueError):
                self.log.write(chunk)
                self.log.flush()
            with contextlib.suppress(OSError, ValueError):
                self.echo(chunk)

    def finish(self, timeout: float) -> None:
        """Stop copying once the output ends, or after `timeout` seconds."""
        children.finish_reading(self.reader, self.stream, timeout)
        with self.lock:
            self.closed = True


def _feed(stream: IO[bytes], data: bytes) -> None:
    # The agent closed its stdin, or exited: what it read is what it got.
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
    with contextlib.suppress(OSError, ValueError):
        stream.close()


def run_agent(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin_data: bytes | None,
    log: IO[bytes],
    echo: Echo,
    interrupts: Interrupts,
    timeout: float | None = None,
    grace: float = limits.RUN_GRACE_SECONDS,
    idle_timeout: float | None = None,
    started_as: Callable[[int], None] | None = None,
) -> AgentRun:
    """Run the agent to its end, streaming its output (stdout and stderr, merged).

    Past `timeout`, or after a Ctrl-C, it is stopped in order: interrupt, then
    terminate, then kill, `grace` seconds apart. Raises RalphstateError when it
    cannot be started, KeyboardInterrupt on a second Ctrl-C. `started_as(pid)` is
    told the agent's process id as soon as it runs.
    """
    started = time.monotonic()
    interrupts.agent_phase = True
    try:
        child = children.start(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        interrupts.child = child
        if started_as is not None:
            started_as(child.pid)
    except OSError as exc:
        interrupts.agent_phase = False
        reason = exc.strerror or type(exc).__name__
        raise RalphstateError(f"could not start the agent {argv[0]!r}: {reason}.") from None
    assert child.stdout is not None
    pump = _Pump(child.stdout, log, echo)
    if stdin_data is not None:
        assert child.stdin is not None
        threading.Thread(
            target=_feed, args=(child.stdin, stdin_data), name="ralphstate-agent-input", daemon=True
        ).start()
    result = AgentRun(exit_code=0, duration=0.0)
    try:
        idle = (lambda: time.monotonic() - pump.last) if idle_timeout is not None else None
        result.exit_code = _wait(
            child, result, interrupts, started, timeout, grace, idle, idle_timeout
        )
    finally:
        interrupts.agent_phase = False
        interrupts.child = None
        result.interrupted = result.interrupted or bool(interrupts.count)
        if child.returncode is None:  # leaving on a second Ctrl-C or an error
            children.kill(child)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(limits.RUN_DRAIN_SECONDS)
        elif result.stops:
            children.kill(child)  # what is left of a group that was told to stop
        pump.finish(limits.RUN_DRAIN_SECONDS)
    result.duration = time.monotonic() - started
    result.output_bytes = pump.count
    return result


def _wait(
    child: subprocess.Popen[bytes],
    result: AgentRun,
    interrupts: Interrupts,
    started: float,
    timeout: float | None,
    grace: float,
    quiet_for: Callable[[], float] | None = None,
    idle_timeout: float | None = None,
) -> int:
    stages: list[children.Stage] = ["interrupt", "terminate", "kill"]
    next_stage_at: float | None = None
    while True:
        try:
            return child.wait(_POLL)
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if next_stage_at is None:
            if interrupts.count:
                result.interrupted = True
            elif timeout is not None and now - started >= timeout:
                result.timed_out = True
            elif quiet_for is not None and idle_timeout is not None and quiet_for() >= idle_timeout:
                result.timed_out = result.idle = True
            else:
                continue
            next_stage_at = now
        if now >= next_stage_at and len(result.stops) < len(stages):
            stage = stages[len(result.stops)]
            result.stops.append(stage)
            children.send(child, stage)
            next_stage_at = now + grace


@contextlib.contextmanager
def prompt_file(text: str) -> Iterator[Path]:
    """A temporary file holding the prompt, removed afterwards."""
    import tempfile

    fd, name = tempfile.mkstemp(prefix="ralphstate-prompt-", suffix=".md")
    try:
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
        except OSError as exc:  # a full disk: say which file
            exc.filename = exc.filename or name
            raise
        yield Path(name)
    finally:
        with contextlib.suppress(OSError):
            Path(name).unlink()
