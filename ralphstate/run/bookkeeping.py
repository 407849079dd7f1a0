"""The loop's state across a `ralphstate run`: the run taking the loop on, each
iteration counted in, the task file re-read, what an iteration spent and how it failed,
and the run's one verification point (`verify_criteria`)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from ralphstate.core import budgets, clock, queries
from ralphstate.core import state as st
from ralphstate.core.errors import NoLoop, RalphstateError
from ralphstate.run import progress, spawn, usage
from ralphstate.run.allowance import Allowance
from ralphstate.run.context import Context, Reporter
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import registry


class Unrecorded(RalphstateError):
    """What an iteration spent could not be written into the state."""


class Stopped(Exception):
    """The loop left `in_progress` from outside the run (paused, cancelled, complete)."""

    def __init__(self, state: st.State) -> None:
        super().__init__(state["status"])
        self.state = state


def check_trusted(store: Store, state: st.State) -> None:
    """RalphstateError when the loop's checks are not trusted here."""
    if not state["checks"]:
        return
    from ralphstate.storage.peruser import truststore
    from ralphstate.verify import pipeline

    if not truststore.is_trusted(store.paths, state):
        raise RalphstateError(pipeline.untrusted_message(store))


def verify_criteria(store: Store, state: st.State, report: Reporter) -> st.State:
    """The run's one verification point, after every iteration (and before the
    first, when every criterion already reads as met).

    A criterion with a check (`checks`) is verified by running it, in a clean room
    where the loop is in a git repository (unless its `cleanVerify` is false):
    `verify/pipeline.py` records pass or fail in `criteriaStatus` and `evidence`. A
    criterion without one counts as verified when `criteriaStatus` says so. Once every
    criterion is, the held-out checks run (verify/heldoutchecks.py): one that fails
    sets its criterion back. Returns the state afterwards.
    """
    from ralphstate.verify import heldoutchecks, pipeline

    held_out = heldoutchecks.has_any(store.paths, state)
    if not state["checks"] and not held_out:
        return state

    def said(result: Any) -> None:
        report.line(progress.check_line(result))

    pipeline.verify(store, pipeline.Ask(by="run", clean=None, progress=said))
    after = store.load()
    if held_out and not queries.unmet(after):
        failed = heldoutchecks.run(store, after, by="run")
        for failure in failed:
            report.line(f"  ✗ {heldoutchecks.said(failure.criterion, failure.hint)}")
        if failed:
            after = store.update(lambda current, events: _held_back(current, events, failed))
    return after


def _held_back(current: st.State, events: list[Event], failed: list[Any]) -> st.State:
    """The criteria held-out checks failed, set back (verify/heldoutchecks.py `mark`)."""
    from ralphstate.verify import heldoutchecks

    events += heldoutchecks.mark(current, failed, "run")
    return current


def begin(ctx: Context, allowance: Allowance) -> st.State:
    """The run takes the loop on: a paused loop resumes, `--max` grows the cap to fit,
    and `run_started` says how the run was asked to go."""
    plan = ctx.plan

    def change(state: st.State, events: list[Event]) -> st.State:
        if state["status"] == "paused":
            events.append({"event": "resumed", "by": "run", "from": state["pauseReason"]})
            state["status"], state["pauseReason"] = "in_progress", None
        elif state["status"] != "in_progress":
            raise Stopped(state)
        if plan.set_max:  # this run's --max: the loop's cap grows to fit it, never shrinks
            raised = max(state["maxIterations"], state["iteration"] + plan.limit)
            if raised > state["maxIterations"]:  # said: the cap is the person's choice
                grown.append((state["maxIterations"], raised))
            state["maxIterations"] = raised
        if not state["startedAt"]:  # running it here adopts it: the registry needs it
            state["startedAt"] = clock.now_iso()
        started: Event = {
            "event": "run_started",
            "agent": plan.agent,
            "promptMode": plan.prompt_mode,
            "limit": plan.limit,
            "timeout": plan.timeout,
            "maxIterations": state["maxIterations"],
            "pid": os.getpid(),
        }
        # This run's budget, and the loop's (docs/how-to/overnight.md, "Budgets").
        started.update(allowance.given(state))
        if plan.fallbacks:
            started["fallbacks"] = plan.fallbacks
        if ctx.box is not None:
            started["sandbox"] = ctx.box.how
        events.append(started)
        return state

    grown: list[tuple[int, int]] = []
    state = ctx.store.update(change)
    for old, new in grown[-1:]:
        ctx.report.line(
            f"the loop's cap grows from {old} to {new} iterations to fit --max {plan.limit}"
            f" (`ralphstate config max-iterations N` sets it)"
        )
    with contextlib.suppress(OSError, RalphstateError):
        registry.record(ctx.store.paths, state)  # running it here is adopting it
    ctx.state = state
    allowance.begin(state)
    return state


def tasks(ctx: Context, state: st.State | None) -> None:
    """Re-read the loop's task file, if it has one, into its steps, before and after
    each iteration; one that cannot be read leaves the steps as last read, and says so."""
    if state is None or not state["tasksFile"]:
        return
    from ralphstate.loop import checklist, taskfile

    try:
        checklist.tasks_refresh(ctx.store)
    except taskfile.TaskFileError as exc:
        ctx.report.line(f"{exc} The steps are those last read from it.")


def start_iteration(ctx: Context, run: int) -> st.State:
    """Count the next iteration in (`iteration_started`); Stopped when the loop left
    `in_progress` from outside."""
    tasks(ctx, ctx.state)

    def change(state: st.State, events: list[Event]) -> st.State:
        if state["status"] != "in_progress":
            raise Stopped(state)
        state["iteration"] += 1
        events.append({"event": "iteration_started", "run": run, "of": ctx.plan.limit})
        return state

    state = ctx.store.update(change)
    ctx.state = state
    return state


def account(
    ctx: Context,
    number: int,
    agent: spawn.AgentRun,
    figures: usage.Usage | None,
    failure: str | None,
) -> st.State:
    """What the iteration spent goes into the loop's `usage`; a failed iteration
    into the state's bounded `errors` list. Returns the state afterwards; Unrecorded
    when the state could not be written (the run cannot hold its budgets without it)."""

    def change(current: st.State, events: list[Event]) -> st.State:
        spend(current, agent, figures)
        if failure is not None:
            st.add_error(current, f"agent {failure}", at=clock.now_iso(), run=True)
            current["errors"][-1]["iteration"] = number
        return current

    try:
        return ctx.store.update(change)
    except NoLoop:
        raise  # deleted or replaced: the run ends `ended_outside`
    except RalphstateError as exc:
        raise Unrecorded(
            f"what iteration {number} spent could not be recorded, so the run stops before"
            f" its budgets go unheld: {str(exc).rstrip('.')}."
        ) from None


def spend(state: st.State, agent: spawn.AgentRun, figures: usage.Usage | None) -> None:
    """Add what one iteration's agent spent to the loop's `usage`."""
    budgets.add_usage(
        state,
        tokens=figures.tokens if figures else 0,
        cost=(figures.cost or 0.0) if figures else 0.0,
        seconds=agent.duration,
    )


def remember_error(ctx: Context, number: int, what: str) -> None:
    """A failed iteration goes into the state's bounded `errors` list."""

    def change(current: st.State, events: list[Event]) -> None:
        st.add_error(current, what, at=clock.now_iso(), run=True)
        current["errors"][-1]["iteration"] = number

    with contextlib.suppress(RalphstateError):
        ctx.store.update(change)
