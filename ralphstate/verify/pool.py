"""Running a verification's checks side by side (docs/explanation/hooks.md, "Long test
suites").

    results = pool.run(jobs, cwd, at_once=8, deadline=None, progress=show, watch=dog)

At most `at_once` checks run at the same time, each in a thread of its own that waits
for its process (`onecheck.run_one`); a check that runs alone starts once nothing else
runs, and nothing starts beside it. They start in `core.checkrun.order`'s order: the
longest last run first, the checks that run alone last. Results come back in the loop's
order whatever order they finished in, and `progress` sees each as soon as every check
before it in that order has finished, so what is printed is the same from run to run.

A `deadline` (a `time.monotonic()` value) bounds them all: a check it cuts short fails
as timed out, one it leaves no time for as not run, and both say the budget ran out
(`CheckResult.budget_cut`). On KeyboardInterrupt (Ctrl-C, or SIGTERM through
`onecheck.terminate_as_interrupt`) every running check's process group is killed and
`Interrupted` is raised with the results that had finished.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ralphstate.core import checkrun
from ralphstate.storage.system import children

if TYPE_CHECKING:
    import subprocess

# A check's result, as the runner makes it (verify/onecheck.py `CheckResult`).
R = TypeVar("R")

# How often the scheduler wakes while it waits for a check, so that a signal's
# KeyboardInterrupt is raised in it without delay on every platform.
_WAKE = 0.2
# How long an interrupted pool waits for its threads once their checks were killed.
_JOIN_AFTER_KILL = 1.0


@dataclass
class Job:
    """One check to run: its criterion and command, its own time limit (seconds),
    whether it runs alone, and the seconds its last run took (None: not known)."""

    criterion: str
    command: str
    limit: float
    alone: bool = False
    last: float | None = None


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt while checks run."""


class Interrupted(KeyboardInterrupt):
    """The checks were stopped before they all finished: the results that had
    (`finished`, in the loop's order), the criteria whose check had not
    (`unfinished`), and how (`how`: "terminated" for SIGTERM, else "interrupted")."""

    def __init__(self, finished: list[Any], unfinished: list[str], how: str) -> None:
        super().__init__(how)
        self.finished = finished
        self.unfinished = unfinished
        self.how = how


class Watch(Protocol):
    """Told of each check's process group as it starts and once it was killed
    (verify/watchdog.py)."""

    def started(self, pgid: int) -> None: ...
    def ended(self, pgid: int) -> None: ...


class Running:
    """The checks' processes that run now: killed all at once on an interrupt, each
    told to the watch as it starts and ends."""

    def __init__(self, watch: Watch | None) -> None:
        self.lock = threading.Lock()
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.stopping = False
        self.watch = watch

    def started(self, proc: subprocess.Popen[bytes]) -> None:
        with self.lock:
            self.procs[proc.pid] = proc
            if self.watch is not None:
                self.watch.started(proc.pid)
            if self.stopping:  # started as the others were being killed
                children.kill(proc)

    def ended(self, proc: subprocess.Popen[bytes]) -> None:
        with self.lock:
            self.procs.pop(proc.pid, None)
            if self.watch is not None:
                self.watch.ended(proc.pid)

    def kill_all(self) -> None:
        with self.lock:
            self.stopping = True
            for proc in self.procs.values():
                children.kill(proc)


# How one job is run: (job, where, deadline, running) -> its result.
Runner = Callable[[Job, str, "float | None", Running], R]


def run(
    jobs: Sequence[Job],
    cwd: str,
    runner: Runner[R],
    *,
    at_once: int,
    deadline: float | None = None,
    progress: Callable[[R], None] | None = None,
    watch: Watch | None = None,
) -> list[R]:
    """Run `jobs` in `cwd` with `runner`, at most `at_once` at a time; their results in
    the jobs' order. Raises Interrupted on KeyboardInterrupt (see the module)."""
    running = Running(watch)
    done: queue.Queue[tuple[int, R | BaseException]] = queue.Queue()
    results: dict[int, R] = {}
    shown = 0
    threads: list[threading.Thread] = []
    planned = [(job.criterion, job.last, job.alone) for job in jobs]
    pending = checkrun.order(planned)
    now: set[int] = set()
    try:
        while pending or now:
            while pending and _may_start(jobs, pending[0], now, at_once):
                i = pending.pop(0)
                now.add(i)
                threads.append(_start(i, jobs[i], cwd, runner, deadline, running, done))
            i, result = _next(done)
            now.discard(i)
            if isinstance(result, BaseException):
                running.kill_all()
                raise result
            results[i] = result
            while shown in results:
                if progress is not None:
                    progress(results[shown])
                shown += 1
    except KeyboardInterrupt as exc:
        running.kill_all()
        _join(threads, time.monotonic() + _JOIN_AFTER_KILL)
        finished = [results[i] for i in sorted(results)]
        unfinished = [job.criterion for i, job in enumerate(jobs) if i not in results]
        how = "terminated" if isinstance(exc, Terminated) else "interrupted"
        raise Interrupted(finished, unfinished, how) from None
    return [results[i] for i in range(len(jobs))]


def _may_start(jobs: Sequence[Job], i: int, now: set[int], at_once: int) -> bool:
    if any(jobs[j].alone for j in now):
        return False
    return not now if jobs[i].alone else len(now) < max(1, at_once)


def _start(
    i: int,
    job: Job,
    cwd: str,
    runner: Runner[R],
    deadline: float | None,
    running: Running,
    done: queue.Queue[tuple[int, R | BaseException]],
) -> threading.Thread:
    def work() -> None:
        try:
            done.put((i, runner(job, cwd, deadline, running)))
        except BaseException as exc:  # noqa: BLE001 - the scheduler raises it
            done.put((i, exc))

    thread = threading.Thread(target=work, name=f"ralphstate-check-{i}", daemon=True)
    thread.start()
    return thread


def _next(
    done: queue.Queue[tuple[int, R | BaseException]],
) -> tuple[int, R | BaseException]:
    """The next check to finish, waking now and then so an interrupt is not held up."""
    while True:
        try:
            return done.get(timeout=_WAKE)
        except queue.Empty:
            continue


def _join(threads: list[threading.Thread], until: float) -> None:
    for thread in threads:
        thread.join(max(0.0, until - time.monotonic()))
