"""What the hooks on a loop share: loading it, the locked update, telling the person
about a loop that cannot be used, recording the loop in the registry, and running its
checks.

Each hook is a module named after it (`hooks.stop`, `hooks.session_start`, ...) whose
`handle` loads the loop, decides (under the state lock when it writes:
`Store.update`) and returns the agent's output. The rules are not here: the Stop
decision is `core.decide`, ownership is `core.ownership`, the words are `core.render`.
A fault is turned into an allowing answer and a line for the person by `hooks.faults`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ralphstate.agents.contract import Agent
from ralphstate.core import limits, render
from ralphstate.core import state as st
from ralphstate.core.errors import NoLoop, RalphstateError
from ralphstate.hooks import notify
from ralphstate.hooks.faults import Fault, Unusable, complain
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import notices, registry
from ralphstate.storage.system import paths

if TYPE_CHECKING:
    from ralphstate.verify.background import Job
    from ralphstate.verify.heldoutchecks import Failed
    from ralphstate.verify.onecheck import CheckResult
    from ralphstate.verify.pipeline import Verification

Output = dict[str, object]
HookInput = dict[str, object]
Handler = Callable[[Agent, HookInput, paths.LoopPaths], Output | None]
R = TypeVar("R")


def load(loop: paths.LoopPaths) -> tuple[Store, st.State] | None:
    """The loop's store and state; None when it has no state file; Unusable if it
    cannot be used."""
    store = Store(loop, lock_timeout=limits.HOOK_LOCK_TIMEOUT)
    if not store.exists():
        return None
    try:
        return store, store.load()
    except NoLoop:
        return None
    except RalphstateError as exc:
        raise Unusable(str(exc).rstrip(".")) from None


def update(
    store: Store, change: Callable[[st.State, list[Event]], R], read: st.State | None = None
) -> R:
    """`store.update`: a store that cannot be written makes the loop Unusable."""
    try:
        return store.update(change, read=read)
    except RalphstateError as exc:
        raise Unusable(str(exc).rstrip(".")) from None


def telling(event: str) -> Callable[[Handler], Handler]:
    """The handler of the hook `event`, which on a loop it cannot use lets the agent go
    (a fault, on stderr and in the log) and tells the person in a `systemMessage`, once
    per fault per session: the loop holds nobody until it is fixed."""

    def wrap(handler: Handler) -> Handler:
        def run(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
            from ralphstate.core import actor, ownership

            runner = bool(os.environ.get(ownership.ENV_RUNNER))
            actor.set_current(actor.session(agent.name, agent.session_id(hook_input), runner))
            try:
                return handler(agent, hook_input, loop)
            except Unusable as exc:
                return _unusable(event, agent, hook_input, loop, str(exc))

        return run

    return wrap


def _unusable(
    event: str, agent: Agent, hook_input: HookInput, loop: paths.LoopPaths, problem: str
) -> Output | None:
    complain(event, problem)
    if not agent.notices:
        return None
    session = agent.session_id(hook_input)
    if session is not None and not notices.first_time(loop, session, problem):
        return None
    out = agent.render_notice(render.unusable(problem))
    if event == "stop":  # and, since the gate failed open, a notification
        out = notify.attach(out, agent.name, notify.failed_open(problem), os.environ)
    return out


def record(event: str, loop: paths.LoopPaths, state: st.State, pid: str | None) -> None:
    """The loop in the per-user registry, as `state` has it (owned by the agent process
    `pid`, when known); a registry that cannot be written is said, and the hook goes on."""
    try:
        registry.record(loop, state, pid)
    except Exception as exc:  # noqa: BLE001 - the registry is a convenience
        complain(event, f"could not update the loop registry ({exc})")


class Verified:
    """What a run of the checks found: their results, or that they are not trusted;
    and what it left alone: the checks verified on this code already (`fresh`), and
    those left to ralphstate's background verification (`deferred`,
    core/verifyplan.py), with the `budget` they did not fit and whether the checks run
    in a clean room (`clean`)."""

    def __init__(
        self,
        results: list[CheckResult],
        untrusted: bool = False,
        found: Verification | None = None,
        heldout: list[Failed] | None = None,
        background: float | None = None,
    ) -> None:
        self.results = results
        # The seconds ralphstate's own background verification of the checks left has
        # run so far (verify/background.py); None: none runs.
        self.background = background
        self.untrusted = untrusted
        self.heldout = heldout or []  # the held-out checks that failed (verify/heldoutchecks.py)
        self.fresh = found.fresh if found else []
        self.deferred = found.deferred if found else []
        self.budget = found.budget if found else 0.0
        self.clean = found.clean if found else False


def run_checks(
    store: Store,
    names: list[str] | None = None,
    restore: tuple[str, list[str]] | None = None,
    by: str = "stop",
    session: str | None = None,
    held_for: list[str] | None = None,
) -> Verified:
    """Verify-on-stop, the re-run of stale checks, or a tied task's checks (`by`: stop,
    task): the loop's trusted checks (`names`, else all) as a hook can afford them
    (verify/pipeline.py: not again on the code they were verified on, side by side,
    within the loop's budget), outside the state lock, in a clean room where the loop
    is in a git repository (unless its `cleanVerify` is false), with `restore`'s paths
    in it as that tree holds them. Untrusted checks are never run. Once every check
    passed and none was left to the model, the held-out checks of `held_for` (None:
    of every criterion) run (verify/heldoutchecks.py, for `session`). A SIGTERM (a client
    that gave up waiting) kills the running checks, records the verification as
    stopped, and fails open."""
    from ralphstate.verify import onecheck, pipeline, pool

    try:
        with onecheck.terminate_as_interrupt():
            started = time.monotonic()
            found, job = _fitting(store, names, restore, by)
            left = found.budget - (time.monotonic() - started)  # one budget for all
            running = _background(store, found, job, by, _waiting(store, left))
            left = found.budget - (time.monotonic() - started)
            held = _held_out(store, found, held_for, by, session, left)
    except pipeline.Untrusted:
        return Verified([], untrusted=True)
    except RalphstateError as exc:  # (a clean room that cannot be made, say): the person
        raise Unusable(str(exc).rstrip(".")) from None  # is told the gate failed open
    except KeyboardInterrupt as exc:  # SIGTERM: the client gave up waiting for this hook
        left = len(exc.unfinished) if isinstance(exc, pool.Interrupted) else 1
        killed = "the running check was" if left == 1 else "the running checks were"
        raise Fault(
            f"stopped while running the loop's checks; {killed} killed, and the stop is"
            " recorded (`ralphstate status` shows it)"
        ) from None
    return Verified(found.results, found=found, heldout=held, background=running)


def _fitting(
    store: Store, names: list[str] | None, restore: tuple[str, list[str]] | None, by: str
) -> tuple[Verification, Job | None]:
    """What fits the hook (verify/pipeline.py), leaving out the checks a background
    verification of the code as it is now runs (verify/background.py), and that job."""
    from ralphstate.core import verifyplan
    from ralphstate.verify import background

    state = store.load()
    job = background.current(store, state)
    if job is not None:
        names = [c for c, _ in verifyplan.choose(state, names) if c not in job.criteria]
    return _fits(store, names, restore, by), job


def _fits(
    store: Store, names: list[str] | None, restore: tuple[str, list[str]] | None, by: str
) -> Verification:
    """The checks of `names` as a hook affords them (verify/pipeline.py)."""
    from ralphstate.verify import pipeline

    ask = pipeline.Ask(names, by, clean=None, restore=restore, record=False, afford=True)
    return pipeline.verify(store, ask)


def _waiting(store: Store, left: float) -> float:
    """How long the stop may wait for a background verification: what the budget has
    left, or half of it when held-out checks may have to run after it."""
    from ralphstate.verify import heldoutchecks

    return left / 2 if heldoutchecks.has_any(store.paths, store.load()) else left


def _background(
    store: Store, found: Verification, job: Job | None, by: str, wait: float
) -> float | None:
    """The checks that do not fit the hook, verified by ralphstate itself in the
    background (verify/background.py): a job on this code that wrote its results gives
    them (the checks the hook ran itself come first); one still running, or a new one
    for the checks left, keeps them left, waiting up to `wait` seconds for it. Returns
    the seconds the job has run, or None when nothing is left."""
    from ralphstate.core import verifyplan
    from ralphstate.verify import background

    state = store.load()
    if job is not None:
        mine = [c for c, _ in verifyplan.choose(state, None) if c in job.criteria]
        if not found.deferred:  # the hook ran the others: the job has the rest
            results = background.taken(store, job, max(0.0, wait))
            if results is not None:
                found.results += results
                return None
            if not background.ended(job):
                found.deferred = [verifyplan.Deferred(c, None) for c in mine]
                _where(store, found)
                return background.running_for(job)
            _where(store, found)
        # More checks left, or the job ended with no result: one new job for them all.
        found.deferred += [verifyplan.Deferred(c, None) for c in mine]
    if not found.deferred:
        return None
    job = background.start(store, state, [d.criterion for d in found.deferred], by)
    results = background.taken(store, job, max(0.0, wait))
    if results is not None:
        found.results += results
        found.deferred = []
        return None
    return background.running_for(job)


def _where(store: Store, found: Verification) -> None:
    """Whether the checks left run in a clean room, as the model is told: only inside a
    git repository (the pipeline asks only when it left some itself)."""
    from ralphstate.storage.repo import git

    if found.clean:
        found.clean = git.toplevel(store.paths.root) is not None


def _held_out(
    store: Store,
    found: Verification,
    names: list[str] | None,
    by: str,
    session: str | None,
    budget: float,
) -> list[Failed]:
    """The held-out checks that failed, run once the visible checks all passed."""
    if found.deferred or not all(r.passed for r in found.results):
        return []
    from ralphstate.verify import heldoutchecks

    state = store.load()
    if not heldoutchecks.has_any(store.paths, state):
        return []
    return heldoutchecks.run(store, state, names, by=by, session=session, budget=budget)
