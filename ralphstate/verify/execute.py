"""Running criteria's check commands and recording what they proved.

    results = run_checks(store)                       # every criterion with a check
    results = run_checks(store, ["tests pass"], timeout=60, budget=120)

Each check is a shell command line run by the platform's shell in the project root
(the directory holding `.loop/`), or in the same directory of a clean room (a
temporary worktree of the files git tracks: `verify/isolation.py`), with stdin closed
and stdout and stderr read together as it runs; only the tail is kept
(`limits.MAX_CHECK_OUTPUT_BYTES`,
`MAX_CHECK_OUTPUT_LINES`), so a check that prints gigabytes costs no memory. Each
runs in its own process group (a new session on POSIX), and the whole group is
killed when the check times out, when it is interrupted, and when its shell exits
(so nothing it started in the background outlives it).

Exit code 0 verifies the criterion; anything else, a timeout or a failure to start
makes it failing, and so does a pass that must fail first (`expectFail`: red before
green, verify/firsts.py, which keeps each check's first result in the loop's ledger).
Results go into the state (`criteriaStatus`, `evidence`) and into history, one `check`
event each. Only trusted checks run (see `trust`).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ralphstate.core import clock, fields, limits, redgreen
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.render import NOT_TRUSTED
from ralphstate.core.text import plain_output
from ralphstate.loop.checklist import find_criterion
from ralphstate.storage import children, git, trust
from ralphstate.storage.paths import LoopPaths
from ralphstate.storage.store import Event, Store
from ralphstate.verify import firsts, isolation


class Untrusted(RalphstateError):
    """The loop's checks are not trusted on this machine; nothing was run."""


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
        return f"exit code {self.exit_code}"

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
        }

    def as_dict(self) -> dict[str, Any]:
        return {"criterion": self.criterion, **self.evidence(clock.now_iso())}


def code_fields(code: git.Snapshot | None) -> fields.Evidence:
    """The evidence's tie to the code: `commit`, `dirty` and `tree` (docs/how-to/checks.md)."""
    if code is None:
        return {}
    return {"commit": code.commit, "dirty": code.dirty, "tree": code.tree}


Progress = Callable[[CheckResult], None]


def plan(state: st.State, names: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """(criterion, command) for each named criterion, or every criterion with a check,
    in the loop's order. A named criterion without a check is a mistake."""
    if names is None:
        return [(c, state["checks"][c]) for c in state["criteria"] if c in state["checks"]]
    chosen: list[str] = []
    for name in names:
        found = find_criterion(state, name)
        if found not in state["checks"]:
            give = _command("criteria check", found, '"COMMAND"')
            raise RalphstateError(f"criterion {found!r} has no check; give it one with `{give}`.")
        if found not in chosen:
            chosen.append(found)
    return [(c, state["checks"][c]) for c in state["criteria"] if c in chosen]


def _command(verb: str, name: str, after: str) -> str:
    from ralphstate.core.render import command

    return command(verb, name, after)


def untrusted_message(store: Store) -> str:
    from ralphstate.core.approving import trust_step

    return (
        f"the checks in {store.paths.display(store.paths.state)} are {NOT_TRUSTED}; nothing"
        " was run. Review them (`ralphstate criteria check NAME` or `ralphstate status`),"
        f" then {trust_step()}."
    )


def run_checks(
    store: Store,
    names: Sequence[str] | None = None,
    timeout: float | None = None,
    *,
    budget: float | None = None,
    record: bool = True,
    progress: Progress | None = None,
    by: str = "verify",
    clean: bool | None = False,
    restore: tuple[str, list[str]] | None = None,
) -> list[CheckResult]:
    """Run the loop's checks in the project root, or in a clean room, and record what
    they proved.

    `names`: criteria (names or 1-based numbers) to check; None runs every criterion
    that has a check, and returns [] when none has. `timeout` (seconds) overrides
    every check's own limit (`checkTimeouts[criterion]`, else `limits.CHECK_TIMEOUT`).
    `budget` (seconds) bounds all of them together: a check cut short by it fails as
    timed out, and a check it leaves no time for fails as not run.

    With `record`, the results are written to the state (`criteriaStatus` from the
    exit code, `evidence`) and to history (`check` events, `by` says who ran them) in
    one locked update. A result whose criterion or command changed while it ran is
    not recorded. Recorded or not, the results are judged first (`firsts.judge`).
    `progress` is called with each result as it finishes.

    `clean`: True runs the checks in a clean room (`storage/cleanroom.py`: the tracked
    files as the work tree holds them, with `restore`'s paths as its tree holds them);
    None does so where the loop is in a git repository and its `cleanVerify` is not
    false, and runs them in the project root elsewhere; False, in the project root.

    Raises `Untrusted` (a RalphstateError) when the checks are not trusted, and
    RalphstateError for a name that is not a criterion with a check. On
    KeyboardInterrupt the running check is killed, the finished ones are recorded,
    and the interrupt propagates: nothing is recorded for the check it stopped.
    """
    state = store.load()
    todo = plan(state, names)
    if not todo:
        return []
    if not trust.is_trusted(store.paths, state):
        raise Untrusted(untrusted_message(store))
    results: list[CheckResult] = []
    deadline = None if budget is None else time.monotonic() + budget
    progress = firsts.judging(store, state, progress)  # a pass that must fail first is held
    room = isolation.room(store.paths, state, clean, restore, deadline)
    said: list[str | None] = []  # what a failure in the room says of untracked files
    try:
        for criterion, command in todo:
            limit = timeout if timeout is not None else _own_timeout(state, criterion)
            cwd = str(room.cwd if room else store.paths.root)
            result = _run_within(criterion, command, cwd, limit, deadline)
            if room is not None:
                _in_room(result, room, store.paths, said)
            results.append(result)
            if progress is not None:
                progress(result)
    except KeyboardInterrupt:
        if record and results:
            record_results(store, results, by)
        raise
    finally:
        if room is not None:
            isolation.close(room)
    if room is None:
        code = git.snapshot(store.paths)  # the tree the checks ran on, as they left it
        for result in results:
            result.code = code
    if record:
        record_results(store, results, by)
    else:
        firsts.judge(store, results)
    return results


def _in_room(
    result: CheckResult, room: isolation.Room, paths: LoopPaths, said: list[str | None]
) -> None:
    """A result of the clean room gets the code it ran on (the work tree when the room
    was made) and the room's tree; a failure says which untracked files the room left
    out, when there are some (looked up at the first failure, kept in `said`)."""
    result.code, result.clean_tree = room.code, room.tree
    if result.passed:
        return
    if not said:
        said.append(isolation.left_out(paths))
    if said[0]:
        result.output_tail = f"{result.output_tail}\n{said[0]}".lstrip("\n")


def _own_timeout(state: st.State, criterion: str) -> float:
    return float(state["checkTimeouts"].get(criterion, limits.CHECK_TIMEOUT))


def _run_within(
    criterion: str, command: str, cwd: str, limit: float, deadline: float | None
) -> CheckResult:
    if deadline is None:
        return run_one(criterion, command, cwd, limit)
    left = deadline - time.monotonic()
    if left <= 0:
        return CheckResult(
            criterion,
            command,
            passed=False,
            exit_code=None,
            duration_ms=0,
            timeout=limit,
            problem="not run: the verification time budget was used up",
        )
    if left >= limit:
        return run_one(criterion, command, cwd, limit)
    result = run_one(criterion, command, cwd, left)
    if result.timed_out:
        result.problem = f"timed out after {left:.3g}s: the verification time budget ran out"
    return result


def record_results(store: Store, results: Sequence[CheckResult], by: str = "verify") -> st.State:
    """Write results to the state and history in one update (see `apply`), once the
    ledger has recorded and judged them (verify/firsts.py)."""
    firsts.judge(store, results)

    def change(state: st.State, events: list[Event]) -> st.State:
        events += apply(state, results, by)
        return state

    return store.update(change)


def apply(state: st.State, results: Sequence[CheckResult], by: str) -> list[Event]:
    """Set each result's criterion from its exit code and keep its evidence; return the
    history events. Results whose criterion is gone, or whose check changed since it
    ran, are skipped."""
    at = clock.now_iso()
    events: list[Event] = []
    for result in results:
        name = result.criterion
        if name not in state["criteria"] or state["checks"].get(name) != result.command:
            continue
        state["criteriaStatus"][name] = result.passed
        state["evidence"][name] = result.evidence(at)
        entry = result.evidence(at)
        del entry["at"]
        events.append({"event": "check", "criterion": name, "by": by, **entry})
    return events


# -- running one command -------------------------------------------------------------


def _tail_text(kept: children.Kept, max_lines: int) -> str:
    """The last lines of a check's output, as a person reads them."""
    data = kept.data
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    text = plain_output(text)
    lines = text.rstrip("\n").split("\n")
    if kept.total > len(data) and len(lines) > 1:
        lines = lines[1:]  # the first line was cut through
    return "\n".join(line.rstrip() for line in lines[-max_lines:]).strip("\n")


def run_one(criterion: str, command: str, cwd: str, timeout: float) -> CheckResult:
    """Run one check under `timeout` seconds; never raises but for KeyboardInterrupt."""
    started = time.monotonic()

    def finish(**kw: Any) -> CheckResult:
        elapsed = int((time.monotonic() - started) * 1000)
        return CheckResult(criterion, command, duration_ms=elapsed, timeout=timeout, **kw)

    try:
        proc = children.start(
            command, shell=True, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return finish(passed=False, exit_code=None, problem=f"could not start: {reason}")
    assert proc.stdout is not None
    tail = children.Kept(limits.MAX_CHECK_OUTPUT_BYTES, tail=True)
    reader = children.read(proc.stdout, tail.take)
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
    )


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While checks run, SIGTERM (how a client stops a hook that ran too long) raises
    KeyboardInterrupt, so the running check's process group is killed on the way out."""
    if sys.platform == "win32" or threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
