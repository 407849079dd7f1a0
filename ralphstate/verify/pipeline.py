"""The one way a loop's checks are verified, whoever asks: the Stop hook and the task
gate (hooks/base.py), `ralphstate run` (run/bookkeeping.py), `ralphstate verify`
(cli/verify.py), `init`'s baseline (verify/baseline.py) and the CI job (ci/trusted.py).

    found = pipeline.verify(store, pipeline.Ask(by="verify", clean=True))
    found = pipeline.verify(store, pipeline.Ask(names, by="stop", afford=True, record=False))
    found.results, found.fresh, found.deferred

It reads top to bottom, one step after the other (docs/explanation/design.md, "The
verification pipeline"):

1. gather: the facts, once: the state, the chosen criteria, their trust, and, for a
   verification a hook must afford, the ledger's entry and the trees git names;
2. plan (core/verifyplan.py, pure): which checks run, with which limits, which need not
   (verified on this code already) and which do not fit the hook's budget;
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

from ralphstate.core import checkrun, queries, verdict, verifyplan
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.render import NOT_TRUSTED
from ralphstate.core.verifyplan import Deferred
from ralphstate.loop.checklist import find_criterion
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
    loop's `verifyBudget` left to `ralphstate verify`."""

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
    `ralphstate verify` (`deferred`), with the hook's `budget` they did not fit; and
    whether its checks run in a clean room (`clean`, where a hook asked)."""

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
    state = store.load()
    todo = verifyplan.choose(state, _resolved(state, ask.names))
    clean = ask.afford and queries.clean_verify(state)
    if not todo:
        return Verification(budget=checkrun.budget(state) if ask.afford else 0.0, clean=clean)
    if not truststore.is_trusted(store.paths, state):
        raise Untrusted(untrusted_message(store))
    started = time.monotonic()
    names = [c for c, _ in todo]
    try:
        facts, restore = gather(store, state, todo, ask)
        made = verifyplan.plan(facts)
        deadline = None if made.budget is None else started + made.budget
        jobs = [p.criterion for p in made.jobs]
        dog = watchdog.start(store.paths, ask.by, jobs) if jobs else None
    except KeyboardInterrupt as exc:  # before any check ran: all of them are unfinished
        stopped = _stopped(exc, names)
        records.interrupted(store, [], names, ask.by, stopped.how)
        raise stopped from None
    try:  # the watchdog stays until the results are recorded
        results = run(store, state, made.jobs, ask, restore, deadline, dog) if made.jobs else []
        found = verdict.judge(made, results, ask.afford)
        record(store, found.results, ask)
    finally:
        if dog is not None:
            dog.close()
    done = Verification(found.results, made.fresh, made.deferred + found.cut, made.budget or 0.0)
    done.clean = clean
    if done.deferred and done.clean:  # the command the model is told must work here
        done.clean = git.toplevel(store.paths.root) is not None
    return done


def untrusted_message(store: Store) -> str:
    """The one sentence said when the loop's checks are not trusted here."""
    from ralphstate.core.approving import trust_step

    return (
        f"the checks in {store.paths.display(store.paths.state)} are {NOT_TRUSTED}; nothing"
        " was run. Review them (`ralphstate criteria check NAME` or `ralphstate status`),"
        f" then {trust_step()}."
    )


# -- 1. gather ----------------------------------------------------------------------


def gather(
    store: Store, state: st.State, todo: list[tuple[str, str]], ask: Ask
) -> tuple[verifyplan.Facts, Restore | None]:
    """The facts the plan needs, each looked up once, and what the room restores. git
    is asked only when a hook's check could be reused; the guarded files are compared
    only when one could be (computed here once, for the room too)."""
    clean = queries.clean_verify(state)
    facts = verifyplan.Facts(state, todo, ask.afford, ask.timeout, ask.budget, clean)
    restore = ask.restore
    if not ask.afford:
        return facts, restore
    facts.entry = ledger.of_loop(store.paths, state) or {}
    if not verifyplan.may_reuse(facts.entry, [c for c, _ in todo]):
        return facts, restore
    if not clean:
        code = git.snapshot(store.paths)
        facts.tree = code.tree if code else None
        return facts, restore
    both = git.tracked_snapshot(store.paths)
    if both is None:  # outside git: no tree to compare
        return facts, restore
    facts.tree, facts.tracked = both[0].tree, both[1]
    if verifyplan.candidates(facts) and restore is None:
        restore = isolation.approved_guards(store.paths, state) or isolation.NOTHING
    facts.differs = restore is None or bool(restore[1])
    return facts, restore


def _resolved(state: st.State, names: Sequence[str] | None) -> list[str] | None:
    """The criteria `names` name (texts or 1-based numbers), each once."""
    if names is None:
        return None
    found: list[str] = []
    for name in names:
        criterion = find_criterion(state, name)
        if criterion not in found:
            found.append(criterion)
    return found


# -- 3. room and 4. run -------------------------------------------------------------


def run(
    store: Store,
    state: st.State,
    planned: list[verifyplan.Planned],
    ask: Ask,
    restore: Restore | None,
    deadline: float | None,
    dog: watchdog.Watchdog | None = None,
) -> list[CheckResult]:
    """Build the room and run the `planned` checks in it, side by side, within
    `deadline` (a `time.monotonic()` value; None: no bound), watched by `dog`."""
    jobs = [pool.Job(p.criterion, p.command, p.limit, p.alone, p.last) for p in planned]
    names = [job.criterion for job in jobs]
    who = _producer(ask.by)
    progress = firsts.judging(store, state, ask.progress)  # a pass that must fail first is held
    try:
        try:
            room = isolation.room(store.paths, state, ask.clean, restore, deadline)
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


def record(store: Store, results: list[CheckResult], ask: Ask) -> None:
    """The ledger judges `results` (red before green: a pass that must fail first is
    held), and, when `ask` records, the state and history take them."""
    if ask.record:
        records.results(store, results, ask.by)
    else:
        firsts.judge(store, results)
