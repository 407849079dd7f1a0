"""Running criteria's check commands and recording what they proved.

    results = run_checks(store)                       # every criterion with a check
    results = run_checks(store, ["tests pass"], timeout=60, budget=120)

Each check is a shell command line (verify/onecheck.py) run in the project root (the
directory holding `.loop/`), or in the same directory of a clean room (a temporary
worktree of the files git tracks: `verify/isolation.py`).

The checks run side by side, at most the loop's `verifyJobs` at once, a check in
`runAlone` with nothing beside it (verify/pool.py); each has its own output and
evidence, and results come back, and are shown, in the loop's order. While they run, a
watchdog process kills their groups if this process is killed outright
(verify/watchdog.py). A verification stopped before its checks finished is recorded
(`verifyInterrupted`, a `verify_interrupted` line in history).

Exit code 0 verifies the criterion; anything else, a timeout or a failure to start
makes it failing, and so does a pass that must fail first (`expectFail`: red before
green, verify/firsts.py, which keeps each check's first result in the loop's ledger).
Results go into the state (`criteriaStatus`, `evidence`) and into history, one `check`
event each. Only trusted checks run (see `trust`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ralphstate.core import checkrun, clock, fixsteps, limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.render import NOT_TRUSTED
from ralphstate.loop.checklist import find_criterion
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import checkenv, truststore
from ralphstate.storage.repo import cleanroom, git
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.verify import firsts, isolation, pool, probe, watchdog
from ralphstate.verify.onecheck import CheckResult, run_one


class Untrusted(RalphstateError):
    """The loop's checks are not trusted on this machine; nothing was run."""


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
    timed out, and a check it leaves no time for fails as not run (`budget_cut`).

    With `record`, the results are written to the state (`criteriaStatus` from the
    exit code, `evidence`) and to history (`check` events, `by` says who ran them) in
    one locked update. A result whose criterion or command changed while it ran is
    not recorded. Recorded or not, the results are judged first (`firsts.judge`).
    `progress` is called with each result, in the loop's order.

    `clean`: True runs the checks in a clean room (`storage/repo/cleanroom.py`: the tracked
    files as the work tree holds them, with `restore`'s paths as its tree holds them);
    None does so where the loop is in a git repository and its `cleanVerify` is not
    false, and runs them in the project root elsewhere; False, in the project root.

    Raises `Untrusted` (a RalphstateError) when the checks are not trusted, and
    RalphstateError for a name that is not a criterion with a check. On
    KeyboardInterrupt the running checks are killed and `pool.Interrupted` (a
    KeyboardInterrupt) is raised, once the finished ones are recorded and the
    verification as stopped (`record_interrupted`, with `record` or without): nothing
    is recorded for the checks it stopped.
    """
    state = store.load()
    todo = plan(state, names)
    if not todo:
        return []
    if not truststore.is_trusted(store.paths, state):
        raise Untrusted(untrusted_message(store))
    deadline = None if budget is None else time.monotonic() + budget
    jobs = [
        pool.Job(c, command, own_limit(state, c, timeout), c in checkrun.alone(state))
        for c, command in todo
    ]
    results = run_jobs(
        store, state, jobs, Where(clean, restore, deadline), record=record, progress=progress, by=by
    )
    if not record:
        firsts.judge(store, results)
    return results


@dataclass
class Where:
    """Where a verification's checks run (see `run_checks`'s `clean` and `restore`),
    and by when they must be done (a `time.monotonic()` value; None: no bound)."""

    clean: bool | None
    restore: tuple[str, list[str]] | None = None
    deadline: float | None = None


def run_jobs(
    store: Store,
    state: st.State,
    jobs: list[pool.Job],
    where: Where,
    *,
    record: bool,
    progress: Progress | None,
    by: str,
) -> list[CheckResult]:
    """Run `jobs` of the loop as `where` says, side by side (`run_checks`, which
    checked their trust, says the rest)."""
    names = [job.criterion for job in jobs]
    progress = firsts.judging(store, state, progress)  # a pass that must fail first is held
    dog = watchdog.start(store.paths, by, names)
    results: list[CheckResult] = []
    try:
        try:
            room = isolation.room(store.paths, state, where.clean, where.restore, where.deadline)
        except cleanroom.TamperedRoom as exc:
            results = [tampered(job, str(exc), _producer(by)) for job in jobs]
            if record:
                record_results(store, results, by)
            _close(dog)
            return results
        try:
            cwd = str(room.cwd if room else store.paths.root)
            results = pool.run(
                jobs,
                cwd,
                _runner(room, store.paths, _producer(by)),
                at_once=checkrun.jobs(state),
                deadline=where.deadline,
                progress=progress,
                watch=dog,
            )
        finally:
            if room is not None:
                isolation.close(room)
        if room is None:
            code = git.snapshot(store.paths)  # the tree the checks ran on, as they left it
            for result in results:
                result.code = code
    except KeyboardInterrupt as exc:
        interrupted = stopped(exc, names)
        record_interrupted(store, interrupted.finished, names, by, interrupted.how)
        _close(dog)
        raise interrupted from None
    except BaseException:
        _close(dog)
        raise
    if record:
        record_results(store, results, by)
    _close(dog)
    return results


def tampered(job: pool.Job, why: str, who: str) -> CheckResult:
    """A check that could not run: its room was not what ralphstate made. It fails."""
    return CheckResult(
        job.criterion,
        job.command,
        passed=False,
        exit_code=None,
        duration_ms=0,
        timeout=job.limit,
        problem=why,
        by=who,
    )


def _close(dog: watchdog.Watchdog | None) -> None:
    if dog is not None:
        dog.close()


def stopped(exc: KeyboardInterrupt, names: list[str]) -> pool.Interrupted:
    """An interrupt as `pool.Interrupted`: one raised before any check ran finished none."""
    if isinstance(exc, pool.Interrupted):
        return exc
    how = "terminated" if isinstance(exc, pool.Terminated) else "interrupted"
    return pool.Interrupted([], list(names), how)


def _producer(by: str) -> str:
    """Who produces the results a verification asked for by `by` makes: the agent for a
    `verify` or `init` run from an agent's shell (core/provenance.py)."""
    from ralphstate.core import actor, provenance

    return provenance.producer(by, actor.current().get("kind"))


def _runner(
    room: isolation.Room | None, paths: LoopPaths, who: str = "verify"
) -> pool.Runner[CheckResult]:
    """How each check of a verification runs: within the deadline, and in a clean room
    with the code it ran on (the work tree when the room was made) and the room's tree;
    a failure there says which untracked files the room left out, when there are some
    (looked up once, at the first failure). Each result says `who` produced it."""
    said: list[str] = []
    told: list[bool] = []
    lock = threading.Lock()
    env = checkenv.for_check(truststore.recorded_env(paths))  # never the caller's
    approved = probe.approved_files(paths) if room is not None else None

    def run(job: pool.Job, cwd: str, deadline: float | None, running: pool.Running) -> CheckResult:
        top = str(room.top) if room is not None else None  # the check may write all of it
        armed = probe.arm(room.top, job.criterion, env, job.command) if room is not None else env
        result = _run_within(
            job.criterion, job.command, cwd, job.limit, deadline, running, armed, top
        )
        if room is not None:  # the plugins pytest registered in the room
            found = probe.read(room.top, job.criterion)
            probe.attach(result.strength, found, approved, armed is not env)
            plugins = (result.strength or {}).get("plugins")  # those weaken it, and say so
            failed = probe.raised(room.top, job.criterion) if result.passed else []
            if failed and not plugins:  # a test raised, yet the run passed: reports forged
                result.passed = False
                note = f"{failed[0]} raised, yet pytest reported a pass: no pass counts"
                result.output_tail = f"{result.output_tail}\n{note}".lstrip("\n")
        result.by = who
        if room is None:
            return result
        result.code, result.clean_tree = room.code, room.tree
        with lock:  # what making the room mended, said once
            notes = [] if told else room.notes
            told.append(True)
        if notes:
            result.output_tail = "\n".join([result.output_tail, *notes]).lstrip("\n")
        changed = isolation.tampered(room)
        if changed:  # what ran is not what ralphstate put there: no pass
            result.passed = False
            result.output_tail = f"{result.output_tail}\n{changed}".lstrip("\n")
        if not result.passed:
            with lock:
                if not said:
                    said.append(isolation.left_out(paths) or "")
            if said[0]:
                result.output_tail = f"{result.output_tail}\n{said[0]}".lstrip("\n")
        return result

    return run


def own_limit(state: st.State, criterion: str, timeout: float | None = None) -> float:
    """The seconds a check may run: `timeout` for every check, else its own."""
    if timeout is not None:
        return timeout
    return float(state["checkTimeouts"].get(criterion, limits.CHECK_TIMEOUT))


def _run_within(
    criterion: str,
    command: str,
    cwd: str,
    limit: float,
    deadline: float | None,
    running: pool.Running | None = None,
    env: dict[str, str] | None = None,
    room: str | None = None,
) -> CheckResult:
    if deadline is None:
        return run_one(criterion, command, cwd, limit, running, env, room)
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
            budget_cut=True,
        )
    if left >= limit:
        return run_one(criterion, command, cwd, limit, running, env, room)
    result = run_one(criterion, command, cwd, left, running, env, room)
    if result.timed_out:
        result.problem = f"timed out after {left:.3g}s: the verification time budget ran out"
        result.budget_cut = True
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
    checkrun.ran(cast(st.Raw, state), [str(e["criterion"]) for e in events])
    ran = {str(e["criterion"]) for e in events}  # a check a time budget cut found no gap
    passed = {r.criterion: r.passed for r in results if r.criterion in ran and not r.budget_cut}
    return events + fixsteps.fix_steps(cast(st.Raw, state), passed)


def record_interrupted(
    store: Store, finished: Sequence[CheckResult], names: Sequence[str], by: str, how: str
) -> None:
    """A verification of the checks of `names` was stopped (`how`: terminated,
    interrupted, killed) after the `finished` ones: those are recorded as `verify`
    records them, and the rest in `verifyInterrupted` and a `verify_interrupted` line in
    history, in one update. A state that cannot be written is said on stderr and in
    the log, never raised: the process is on its way out. A check a time budget cut
    short proved nothing, and is counted as not finished."""
    finished = [r for r in finished if not r.budget_cut]
    firsts.judge(store, finished)
    done = {r.criterion for r in finished}
    left = [n for n in names if n not in done]

    def change(state: st.State, events: list[Event]) -> None:
        events += apply(state, finished, by)
        mark = checkrun.interrupted(clock.now_iso(), by, how, left)
        cast(st.Raw, state)["verifyInterrupted"] = mark if left else None
        if left:
            events.append(
                {"event": "verify_interrupted", "by": by, "how": how, "criteria": mark["criteria"]}
            )

    try:
        store.update(change)
    except RalphstateError as exc:
        firsts.say(f"the stopped verification could not be recorded ({str(exc).rstrip('.')})")


def record_killed(head: dict[str, Any]) -> None:
    """In a verification's watchdog (verify/watchdog.py), once the process that ran the
    checks died before the verification ended: record it as killed (`head`: what the
    watchdog was told first). Never raises; what fails is said in the log."""
    try:
        from ralphstate.core import actor

        actor.set_current(head["actor"])
        store = Store(LoopPaths(head["loop"], head["dir"]))
        record_interrupted(store, [], head["criteria"], head["by"], "killed")
    except Exception as exc:  # noqa: BLE001 - nobody is there to tell but the log
        with contextlib.suppress(Exception):
            from ralphstate.storage.peruser import logs

            logs.write(f"ralphstate watchdog: could not record a killed verification ({exc})")
