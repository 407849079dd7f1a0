"""How a `ralphstate run` ends: complete or paused by its own decision, stopped from
outside, or broken by an error. Each ending is written into the state and history
(`run_finished`), told to the person's notifier (`notify`) and returned as the
run's `Outcome`."""

from __future__ import annotations

import contextlib
import time

from ralphstate.core import budgets, queries
from ralphstate.core import state as st
from ralphstate.core.errors import NoLoop, RalphstateError
from ralphstate.core.render import clip
from ralphstate.run import notifier
from ralphstate.run.context import Context
from ralphstate.run.result import Outcome, RunOutcome, counts
from ralphstate.storage.loopdir.store import Event


def finished(ctx: Context, outcome: RunOutcome, **details: object) -> Event:
    """The `run_finished` history event, however the run ended."""
    return {
        "event": "run_finished",
        "outcome": outcome,
        **details,
        "iterations": len(ctx.records),
        "duration": round(time.monotonic() - ctx.started, 3),
    }


def finish(
    ctx: Context,
    outcome: RunOutcome,
    reason: str | None,
    detail: str | None = None,
    over: str | None = None,
) -> Outcome:
    """Write the ending into the state and history; a second Ctrl-C cuts it short.
    `over`: whose budget was reached, for the reason `budget`."""
    if outcome == "complete" or (outcome == "paused" and reason not in ("user", "review")):
        # What proves the loop changed: a person looks before it counts, and a run that
        # stops for another reason (its --max spent, a stall) says the review first.
        held = _review(ctx, unreadable=outcome == "complete")
        if held is not None:
            if outcome == "paused":
                held = f"{held}; the run had also stopped: {reason}"
            outcome = "paused"
            reason = "review"
            detail = held
    details = finished(ctx, outcome, reason=reason)
    if detail:
        details["detail"] = detail
    ctx.detail = detail
    ctx.over = over
    if ctx.interrupts.first is not None:
        details["signal"] = ctx.interrupts.first

    def change(state: st.State, events: list[Event]) -> st.State:
        if outcome == "complete":
            state["status"], state["pauseReason"] = "complete", None
        elif state["status"] == "in_progress":
            state["status"], state["pauseReason"] = "paused", reason
        events.append(details)
        return state

    try:
        ctx.state = ctx.store.update(change)
    except RalphstateError:
        ctx.note([details])
    return ended(ctx, outcome, reason)


def _review(ctx: Context, unreadable: bool = True) -> str | None:
    """What a person must review before the run's completion counts, in one line;
    None when the proof is as they approved it."""
    from ralphstate.loop import proofreview

    try:
        state = ctx.store.load()
        pending = proofreview.pending(ctx.store, state)
    except RalphstateError as exc:  # a completion that cannot be compared waits for a person
        return (
            f"the proof could not be compared with the approved one ({exc})" if unreadable else None
        )
    if not pending.changes:
        return None
    by = ", ".join(pending.by)
    return clip(f"{'; '.join(pending.changes)} (by {by})", 300)


def stopped(ctx: Context, state: st.State) -> Outcome:
    """The loop was paused, cancelled or completed from outside the run: by the person,
    by the agent's own command (named), or by a hand edit of state.json, which ends the
    run as `ended_outside`, never as complete."""
    from ralphstate.storage.peruser import ledger

    ctx.state = state
    status = state["status"]
    outcomes: dict[str, RunOutcome] = {
        "paused": "paused",
        "cancelled": "cancelled",
        "complete": "complete",
    }
    outcome = outcomes[status]
    if ledger.ended_outside(ctx.store.paths, state):
        outcome = "ended_outside"  # ralphstate did not write that status
    elif outcome == "complete":  # the run never ends complete without its own check
        unproven = _unproven(ctx, state)
        if unproven is not None:
            outcome, ctx.detail = "ended_outside", unproven
    reason = state["pauseReason"] if status == "paused" else None
    if queries.is_blocked(reason):
        ctx.detail = (reason or "")[len(queries.BLOCKED) + 1 :].strip() or None
        reason = queries.BLOCKED
    elif status == "cancelled" or reason == "agent":
        ctx.detail = _by_agent(ctx, state)
    ctx.note([finished(ctx, outcome, reason=reason, by="outside")], state)
    return ended(ctx, outcome, reason)


def _unproven(ctx: Context, state: st.State) -> str | None:
    """Why a completion the run did not make is not proven, once the runner's own check
    ran on it (`bookkeeping.verify_criteria`, whatever the iteration wrote into
    `criteriaStatus`); None when every criterion is verified."""
    from ralphstate.run import bookkeeping

    try:
        after = bookkeeping.verify_criteria(ctx.store, state, ctx.report)
    except RalphstateError as exc:
        return clip(f"marked complete, and the run could not check it ({exc})", 300)
    ctx.state = after
    unmet = queries.unmet(after)
    if not unmet:
        return None
    shown = ", ".join(clip(name, 80) for name in unmet[:5])
    return f"marked complete, but the run's own check does not verify {shown}"


def gone(ctx: Context, why: NoLoop) -> Outcome:
    """state.json was deleted, or holds another loop, while the run went on: the run
    ends `ended_outside`, and writes nothing more into the loop's files."""
    from ralphstate.run.ownloop import Replaced

    replaced = isinstance(why, Replaced)
    ctx.detail = str(why) if replaced else "state.json was deleted during the run"
    ctx.state = None
    return ended(ctx, "ended_outside", "replaced" if replaced else None)


def _by_agent(ctx: Context, state: st.State) -> str | None:
    """ "by claude session 1a2b3c4d" when the agent's own command paused or cancelled
    the loop; None when a person did."""
    from ralphstate.core import actor
    from ralphstate.storage.loopdir.store import of_loop

    try:
        entries = of_loop(ctx.store.history(50), state["loopId"])
    except RalphstateError:
        return None
    for entry in reversed(entries):
        if entry.get("event") in ("paused", "cancelled"):
            who = entry.get("actor")
            return None if actor.is_person(who) else f"by {actor.describe(who)}"
    return None


def failed(ctx: Context, message: str) -> Outcome:
    """The run broke: say so in history and pause the loop (when its file can still
    be written), so no hook keeps a session on a loop whose run stopped."""
    held = _review(ctx, unreadable=False)
    if held is not None:  # a weakened proof (say, an agent's untrusted check) is the cause
        return finish(ctx, "paused", "review", held)
    event = finished(ctx, "error", error=message)
    reason = clip(f"ralphstate run stopped: {message}", 200)

    def change(state: st.State, events: list[Event]) -> None:
        if state["status"] == "in_progress":
            state["status"], state["pauseReason"] = "paused", reason
        events.append(event)

    try:
        ctx.store.update(change)
    except RalphstateError:
        ctx.note([event])
    return ended(ctx, "error", None, message)


def unfinished(ctx: Context, iteration: tuple[int, int] | None) -> None:
    """The iteration an error cut short (the run's count, the loop's), counted in and
    not yet recorded: recorded with the decision `error`."""
    if iteration is not None:
        run, number = iteration
        ctx.note([{"event": "run_iteration", "run": run, "decision": "error"}], number=number)


def broke(ctx: Context, exc: Exception) -> Outcome:
    """An error nobody foresaw ended the run: its traceback goes to the log, and the
    run ends as `failed` says, naming it."""
    from ralphstate.storage.peruser import logs

    where = logs.write("ralphstate run: unexpected error", exc)
    tail = f"; details in {where}" if where else ""
    return failed(ctx, f"unexpected error ({type(exc).__name__}: {clip(str(exc), 300)}){tail}.")


def ended(
    ctx: Context, outcome: RunOutcome, reason: str | None, error: str | None = None
) -> Outcome:
    """The run's `Outcome`, told to the notifier (unless the person pressed Ctrl-C)."""
    if outcome != "error" or ctx.state is None:
        with contextlib.suppress(RalphstateError):
            ctx.state = ctx.store.load()
    result = Outcome(
        outcome,
        reason,
        ctx.records,
        ctx.state,
        time.monotonic() - ctx.started,
        error,
        ctx.detail,
        ctx.over if reason == "budget" else None,
        ctx.box.how if ctx.box is not None else None,
    )
    if reason != "user":  # Ctrl-C: the person is there
        kind = {"complete": "complete", "error": "error"}.get(outcome, "pause")
        if reason in ("budget", "limit", "agent_errors"):
            kind = {"agent_errors": "error"}.get(reason, reason)
        notify(ctx, kind, result.summary()[0], outcome=outcome, reason=reason, error=error)
    return result


def notify(ctx: Context, kind: str, summary: str, **details: object) -> None:
    """Tell the person's notifier (`notify`), never stopping or delaying the run
    beyond its bound."""
    if not ctx.plan.notify:
        return
    state = ctx.state
    event: dict[str, object] = {
        "event": kind,
        **{k: v for k, v in details.items() if v is not None},
        "project": str(ctx.store.paths.root),
        "iterations": len(ctx.records),
    }
    if ctx.detail:
        event["detail"] = ctx.detail
    if state is not None:
        met, total, _, _ = counts(state)
        event.update(
            spec=clip(state["spec"], 200),
            iteration=state["iteration"],
            criteria={"met": met, "total": total},
            usage=budgets.spent(state),
        )
    notifier.send(ctx.plan.notify, event, summary, ctx.report.line, str(ctx.store.paths.root))
