"""The one way a loop's checks are verified, whoever asks: the Stop hook and the task
gate (hooks/base.py), `ralphstate run` (run/bookkeeping.py), `ralphstate verify`
(cli/verify.py), `init`'s baseline (verify/baseline.py) and the CI job (ci/trusted.py).

    found = pipeline.verify(store, pipeline.Ask(by="verify", clean=True))
    found = pipeline.verify(store, pipeline.Ask(names, by="stop", afford=True, record=False))
    found.results, found.fresh, found.deferred

It reads top to bottom, one step after the other (docs/explanation/design.md, "The
verification pipeline"):

1. gather: the facts, once: the state, the chosen criteria, their trust, the ledger's
   entry, and, for a verification a hook must afford, the trees git names;
2. plan (core/verifyplan.py, pure): which checks run, with which limits, which need not
   (verified on this code already) and which do not fit the hook's budget, or that
   none runs (untrusted);
3. room: where they run: a clean room (verify/isolation.py) or the project root;
4. run: side by side (verify/pool.py), each as verify/checkrunner.py runs it, watched
   by a process that records the verification as killed if this one dies
   (verify/watchdog.py);
5. judge (core/verdict.py, pure): which results proved something;
6. record: the ledger judges them first (red before green, verify/firsts.py), then the
   state and history (verify/records.py), unless the caller records them in its own
   update (a hook).

Only trusted checks run (`Untrusted`). A verification stopped by SIGTERM or Ctrl-C
records what finished and what did not, and raises `pool.Interrupted`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ralphstate.core import checkrun, queries, verdict, verifyplan
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.render import NOT_TRUSTED
from ralphstate.core.verifyplan import Deferred
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import ledger, truststore
from ralphstate.storage.repo import cleanroom, git
from ralphstate.verify import checkrunner, firsts, isolation, pool, records, watchdog
from ralphstate.verify.onecheck import CheckResult

__all__ = ["Ask", "Deferred", "Untrusted", "Verification", "untrusted_message", "verify"]

Progress = Callable[[CheckResult], None]
Restore = tuple[str, list[str]]


class Untrusted(RalphstateError):
    """The loop's checks are not trusted on this machine; nothing was run."""


@dataclass
class Ask:
    """What a caller asks of a verification.

    `names`: criteria (names or 1-based numbers) to check; None: every criterion with a
    check. `by`: who asks (stop, task, run, verify, init, ci). `timeout` (seconds)
    overrides every check's own limit; `budget` bounds them all together (a check it
    cuts short fails as timed out, one it leaves no time for as not run). `clean`: True
    runs the checks in a clean room, None where the loop is in a git repository and its
    `cleanVerify` is not false, False in the project root; `restore` (a tree id,
    pathspecs) puts those paths back in the room as that tree holds them (None: the
    guarded files as approved). `record`: the results go into the state and history;
    `progress` is called with each result, in the loop's order. `afford`: as a hook can
    afford (core/verifyplan.py): passes on this code reused, what does not fit the
    loop's `verifyBudget` left out (a hook hands them to verify/background.py)."""

    names: Sequence[str] | None = None
    by: str = "verify"
    timeout: float | None = None
    budget: float | None = None
    clean: bool | None = False
    restore: Restore | None = None
    record: bool = True
    progress: Progress | None = None
    afford: bool = False


@dataclass
class Verification:
    """What a verification did: the checks that ran to a result (`results`, in the
    loop's order); those not run because verified on this code (`fresh`); those left to
    the hook's background verification (`deferred`), with the hook's `budget` they did
    not fit; and whether its checks run in a clean room (`clean`, where a hook asked)."""

    results: list[CheckResult] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)
    deferred: list[Deferred] = field(default_factory=list)
    budget: float = 0.0
    clean: bool = False


def verify(store: Store, ask: Ask) -> Verification:
    """Verify the loop's trusted checks as `ask` says (see the module).

    Raises `Untrusted` when the checks are not trusted here (nothing ran), and
    RalphstateError for a name that is not a criterion with a check, or a clean room
    that cannot be made. On KeyboardInterrupt the running checks are killed and
    `pool.Interrupted` is raised, once the finished ones are recorded and the
    verification as stopped (with `record` or without)."""
    found = gather(store, ask)
    made = verifyplan.plan(found.facts)
    if made.untrusted:
        raise Untrusted(untrusted_message(store))
    if not made.jobs:
        return record(store, found, made, verdict.Verdict(), ask)
    dog = watchdog.start(store.paths, ask.by, [job.criterion for job in made.jobs])
    try:  # the watchdog records the verification as killed if this process dies first
        results = run(store, found, made, ask, dog)
        judged = verdict.judge(made, results, ask.afford)
        return record(store, found, made, judged, ask)
    finally:
        if dog is not None:
            dog.close()


def untrusted_message(store: Store) -> str:
    """The one sentence said when the loop's checks are not trusted here."""
    from ralphstate.core.approving import trust_step

    return (
        f"the checks in {store.paths.display(store.paths.state)} are {NOT_TRUSTED}; nothing"
        " was run. Review them (`ralphstate criteria check NAME` or `ralphstate status`),"
        f" then {trust_step()}."
    )


# -- 1. gather ----------------------------------------------------------------------


@dataclass
class Gathered:
    """The facts the plan reads (`facts`), and what the later steps need of them: the
    loop directory's ledger entry as read (`entry`), when the budget began (`started`,
    a `time.monotonic()` value), what a clean room restores (`restore`) and whether the
    guarded files were compared for it already (`compared`)."""

    facts: verifyplan.Facts
    entry: ledger.Entry | None = None
    started: float = 0.0
    restore: Restore | None = None
    compared: bool = False


def gather(store: Store, ask: Ask) -> Gathered:
    """The facts, each looked up once: the state, the chosen checks, their trust, the
    ledger's entry and, for a verification a hook must afford, the trees git names
    (asked only when a check could be reused; the guarded files are then compared,
    once, for the plan and the room alike)."""
    state = store.load()
    todo = verifyplan.choose(state, ask.names)
    clean = queries.clean_verify(state)
    facts = verifyplan.Facts(state, todo, True, ask.afford, ask.timeout, ask.budget, clean)
    found = Gathered(facts, restore=ask.restore, compared=ask.restore is not None)
    if not todo:
        return found
    facts.trusted = truststore.is_trusted(store.paths, state)
    found.started = time.monotonic()
    if not facts.trusted:
        return found
    try:
        found.entry = ledger.read(store.paths)
        facts.entry = _of_loop(found.entry, state)
        if ask.afford and verifyplan.may_reuse(facts.entry, [c for c, _ in todo]):
            _trees(store, found)
    except KeyboardInterrupt as exc:  # before any check ran: all of them are unfinished
        raise _stopped_before(store, exc, [c for c, _ in todo], ask.by) from None
    return found


def _trees(store: Store, found: Gathered) -> None:
    """The work tree's id, and, where the checks run in a clean room, its tracked
    files' tree and whether the room would put guarded files back as approved."""
    facts = found.facts
    if not facts.clean:
        code = git.snapshot(store.paths)
        facts.tree = code.tree if code else None
        return
    both = git.tracked_snapshot(store.paths)
    if both is None:  # outside git: no tree to compare
        return
    facts.tree, facts.tracked = both[0].tree, both[1]
    if verifyplan.candidates(facts) and not found.compared:
        approved = isolation.approved_guards(store.paths, facts.state, facts.entry)
        found.restore, found.compared = approved or isolation.NOTHING, True
    facts.differs = found.restore is None or bool(found.restore[1])


def _of_loop(entry: ledger.Entry | None, state: st.State) -> dict[str, Any]:
    """The ledger's entry when it is about this loop, else {} (as storage/peruser/
    ledger.py `of_loop` reads it)."""
    if entry is None or entry.get("loop") != state.get("loopId"):
        return {}
    return dict(entry)


def _stopped_before(
    store: Store, exc: KeyboardInterrupt, names: list[str], by: str
) -> pool.Interrupted:
    """An interrupt before any check ran, recorded: all of `names` are unfinished."""
    stopped = _stopped(exc, names)
    records.interrupted(store, [], names, by, stopped.how)
    return stopped


# -- 3. room and 4. run -------------------------------------------------------------


def run(
    store: Store,
    found: Gathered,
    made: verifyplan.Plan,
    ask: Ask,
    dog: watchdog.Watchdog | None = None,
) -> list[CheckResult]:
    """Build the room and run the plan's checks in it, side by side, within the plan's
    budget; `dog` (verify/watchdog.py) is told of each check's process."""
    state = found.facts.state
    jobs = [pool.Job(p.criterion, p.command, p.limit, p.alone, p.last) for p in made.jobs]
    names = [job.criterion for job in jobs]
    deadline = None if made.budget is None else found.started + made.budget
    who = _producer(ask.by)
    progress = firsts.judging(state, found.entry, ask.progress)  # a pass that must fail
    try:  # first is held before anyone is shown it
        try:
            room = _room(store, found, ask, deadline)
        except cleanroom.TamperedRoom as exc:
            return [checkrunner.tampered(job, str(exc), who) for job in jobs]
        try:
            results = pool.run(
                jobs,
                str(room.cwd if room else store.paths.root),
                checkrunner.runner(room, store.paths, who),
                at_once=checkrun.jobs(state),
                deadline=deadline,
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
        return results
    except KeyboardInterrupt as exc:
        stopped = _stopped(exc, names)
        records.interrupted(store, stopped.finished, names, ask.by, stopped.how)
        raise stopped from None


def _room(store: Store, found: Gathered, ask: Ask, deadline: float | None) -> isolation.Room | None:
    """The clean room the checks run in, or None (the project root), as `ask.clean`
    and the loop's `cleanVerify` say; the guarded files are compared with the approval
    here when gather did not compare them."""
    state = found.facts.state
    if ask.clean is False or (ask.clean is None and not found.facts.clean):
        return None
    restore = found.restore
    if not found.compared:
        restore = isolation.approved_guards(store.paths, state, found.facts.entry)
    return isolation.room(store.paths, state, ask.clean, restore, deadline)


def _stopped(exc: KeyboardInterrupt, names: list[str]) -> pool.Interrupted:
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


# -- 6. record ----------------------------------------------------------------------


def record(
    store: Store, found: Gathered, made: verifyplan.Plan, judged: verdict.Verdict, ask: Ask
) -> Verification:
    """The ledger judges the results (red before green: a pass that must fail first is
    held), and, when `ask` records, the state and history take them; what the
    verification did, for its caller."""
    if made.jobs and ask.record:
        records.results(store, judged.results, ask.by)
    elif made.jobs:
        firsts.judge(store, judged.results)
    done = Verification(judged.results, made.fresh, made.deferred + judged.cut)
    done.budget = made.budget or 0.0
    done.clean = ask.afford and found.facts.clean
    if done.deferred and done.clean:  # the command the model is told must work here
        done.clean = git.toplevel(store.paths.root) is not None
    return done
