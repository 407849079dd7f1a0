"""One check: what it did (`CheckResult`, and the evidence it leaves), and running its
command (`run_one`).

    result = run_one("tests pass", "pytest -q", "/path/to/project", timeout=600)

The command line runs in the platform's shell in `cwd`, with the environment it is
given (the one a person approved, storage/peruser/checkenv.py), with stdin closed and stdout
and stderr read together as it runs; only the tail is kept
(`limits.MAX_CHECK_OUTPUT_BYTES`, `MAX_CHECK_OUTPUT_LINES`), so a check that prints
gigabytes costs no memory. It runs in its own process group (a new session on POSIX),
and the whole group is killed when the check times out, when it is interrupted, and
when its shell exits (so nothing it started in the background outlives it).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralphstate.core import clock, fields, limits, redgreen
from ralphstate.core.text import plain_output
from ralphstate.storage.repo import git
from ralphstate.storage.system import children
from ralphstate.verify import confine, pool, strength

if TYPE_CHECKING:
    from ralphstate.verify.pool import Running


@dataclass
class CheckResult:
    """What one check did."""

    criterion: str
    command: str
    passed: bool
    exit_code: int | None  # None: it was killed, or never started
    duration_ms: int
    timeout: float  # the limit it ran under, in seconds
    timed_out: bool = False
    output_tail: str = ""
    output_bytes: int = 0
    # Why it did not run to an exit code, when it did not ("could not start: ...").
    problem: str | None = None
    # The code it ran on (commit, dirty, tree id); None outside a git repository.
    code: git.Snapshot | None = None
    # It passed, but its criterion must fail before a pass counts and this command never
    # failed: it does not count (`passed` is False); `already_true`: the criterion's
    # first result passed before any work (verify/firsts.py).
    held: bool = False
    already_true: bool = False
    # The id of the tree of the clean room it ran in; None: it ran in the project.
    clean_tree: str | None = None
    # The verification's time budget cut it short, or left it no time: it says nothing
    # of the check (the Stop hook leaves it to its background verification,
    # core/verifyplan.py).
    budget_cut: bool = False
    # How many tests its output said ran (verify/strength.py); None: exit code only.
    strength: dict[str, Any] | None = None
    # Why this pass ran fewer tests than its baseline (verify/firsts.py); None: it did not.
    weakened: str | None = None
    # Who produced it (core/provenance.py: stop, task, run, verify, init, ci, or agent).
    by: str = "verify"
    # It ran confined (verify/confine.py): no write outside its room, no home, no
    # per-user store, no network, no capability. False: it ran with the caller's reach.
    confined: bool = False

    @property
    def result(self) -> fields.EvidenceResult:
        return "verified" if self.passed else "failing"

    @property
    def summary(self) -> str:
        """A few words on how it ended: `exit code 1`, `timed out after 5s`, ..."""
        if self.problem:
            return self.problem
        if self.held:
            return redgreen.HELD
        if self.timed_out:
            return f"timed out after {self.timeout:g}s"
        counted = f"exit code {self.exit_code}"
        if self.strength is not None:  # else "exit code only", said where counts are shown
            counted += f" ({strength.describe(self.strength)})"
        return f"{counted}; {self.weakened}" if self.weakened else counted

    def evidence(self, at: str) -> fields.Evidence:
        """The entry kept in state.json's `evidence` for this criterion."""
        return {
            "result": self.result,
            "command": self.command,
            "exitCode": self.exit_code,
            "timedOut": self.timed_out,
            "durationMs": self.duration_ms,
            "at": at,
            "summary": self.summary,
            "outputTail": self.output_tail,
            "outputBytes": self.output_bytes,
            **code_fields(self.code),
            **({"alreadyTrue": True} if self.already_true else {}),
            **({"clean": True, "cleanTree": self.clean_tree} if self.clean_tree else {}),
            **({"strength": self.strength} if self.exit_code is not None else {}),
            **({"weakened": self.weakened} if self.weakened else {}),
            "by": self.by,
            "confined": self.confined,
        }

    def as_dict(self) -> dict[str, Any]:
        return {"criterion": self.criterion, **self.evidence(clock.now_iso())}


def code_fields(code: git.Snapshot | None) -> fields.Evidence:
    """The evidence's tie to the code: `commit`, `dirty` and `tree` (docs/how-to/checks.md)."""
    if code is None:
        return {}
    return {"commit": code.commit, "dirty": code.dirty, "tree": code.tree}


def _tail_text(kept: children.Kept, max_lines: int) -> str:
    """The last lines of a check's output, as a person reads them."""
    data = kept.data
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    text = plain_output(text)
    lines = text.rstrip("\n").split("\n")
    if kept.total > len(data) and len(lines) > 1:
        lines = lines[1:]  # the first line was cut through
    return "\n".join(line.rstrip() for line in lines[-max_lines:]).strip("\n")


def run_one(
    criterion: str,
    command: str,
    cwd: str,
    timeout: float,
    running: Running | None = None,
    env: dict[str, str] | None = None,
    room: str | None = None,
) -> CheckResult:
    """Run one check under `timeout` seconds, confined to `room` (None: `cwd`) where
    that can be had (verify/confine.py); never raises but for KeyboardInterrupt.
    `running` is told of its process as it starts, and once its group was killed. `env`
    is the check's whole environment (storage/peruser/checkenv.py: the one recorded at
    approval); None, this process's."""
    started = time.monotonic()
    box = confine.wrap(command, Path(room or cwd), Path(cwd), env)

    def finish(**kw: Any) -> CheckResult:
        elapsed = int((time.monotonic() - started) * 1000)
        box.close()
        return CheckResult(
            criterion, command, duration_ms=elapsed, timeout=timeout, confined=box.confined, **kw
        )

    try:
        proc = children.start(
            box.args,
            shell=box.shell,
            cwd=cwd,
            env=box.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return finish(passed=False, exit_code=None, problem=f"could not start: {reason}")
    assert proc.stdout is not None
    if running is not None:
        running.started(proc)
    tail = children.Kept(limits.MAX_CHECK_OUTPUT_BYTES, tail=True)
    tally = strength.Tally()

    def take(chunk: bytes) -> None:
        tail.take(chunk)
        tally.take(chunk)

    reader = children.read(proc.stdout, take)
    timed_out = False
    try:
        try:
            code: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out, code = True, None
    finally:
        # Timeout, interrupt, or the shell has exited: nothing it started lives on. The
        # group is killed at once, not in stages: the checks share a time budget.
        children.kill(proc)
        if running is not None:
            running.ended(proc)
        with contextlib.suppress(BaseException):
            proc.wait()
        # Past this, a process outside the group holds the pipe open.
        children.finish_reading(reader, proc.stdout, children.READ_AFTER_EXIT)
    return finish(
        passed=code == 0 and not timed_out,
        exit_code=code,
        timed_out=timed_out,
        output_tail=_tail_text(tail, limits.MAX_CHECK_OUTPUT_LINES),
        output_bytes=tail.total,
        strength=tally.counts(),
    )


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While checks run, SIGTERM (how a client stops a hook that ran too long) raises
    KeyboardInterrupt, so the running check's process group is killed on the way out."""
    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise pool.Terminated

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
