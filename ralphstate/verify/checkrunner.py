"""How each check of a verification runs: the pipeline's `run` step
(verify/pipeline.py). A check runs within its limit and the verification's deadline,
with the environment recorded at approval (never the caller's), and, in a clean room,
armed to say which pytest plugins it loaded; what the room's guarded files became
while it ran, and which untracked files the room left out, are said with its result.

    run = checkrunner.runner(room, paths, who="stop")   # one per verification
    result = run(job, cwd, deadline, running)           # as verify/pool.py calls it
"""

from __future__ import annotations

import threading
import time

from ralphstate.storage.peruser import checkenv, truststore
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.verify import isolation, pool, probe
from ralphstate.verify.onecheck import CheckResult, run_one


def runner(
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
