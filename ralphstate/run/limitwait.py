"""An iteration that stopped on a usage or rate limit: it is uncounted (its spending
and the error stay), and when the run waits the limit out (`--on-limit wait`), the
person's notifier hears of it, the wait is shown as a countdown, and the time waited
counts toward the duration budgets (docs/how-to/overnight.md, "Usage and rate limits")."""

from __future__ import annotations

import contextlib
import datetime as dt

from ralphstate.core import budgets, clock
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.render import clip
from ralphstate.run import bookkeeping, endings, guards, ratelimits, spawn, usage
from ralphstate.run.context import Context
from ralphstate.run.decide_iteration import LimitHit
from ralphstate.storage.loopdir.store import Event


def weighed(hit: ratelimits.Limit, attempts: int, now: dt.datetime) -> LimitHit:
    """The limit as the iteration's decision weighs it (`attempts` in a row, this one
    included); `pause` and `fallback` are the run's to fill in."""
    return LimitHit(
        kind=hit.kind,
        phrase=ratelimits.PHRASES[hit.kind],
        message=hit.message,
        wait=ratelimits.wait_for(hit, attempts, now),
        attempts=attempts,
    )


def uncount(
    ctx: Context,
    number: int,
    agent: spawn.AgentRun,
    figures: usage.Usage | None,
    hit: ratelimits.Limit,
    wait: float | None,
) -> st.State:
    """Iteration `number` counts toward no cap: it is taken back, what it spent and
    the limit as an error stay, and a `limit` event says how long the run waits
    (`wait`; None: it does not). Returns the state afterwards."""
    what = ratelimits.PHRASES[hit.kind]

    def change(current: st.State, events: list[Event]) -> st.State:
        if current["iteration"] == number:
            current["iteration"] -= 1
        bookkeeping.spend(current, agent, figures)
        message = f"agent hit {what}: {hit.message}"
        st.add_error(current, message, at=clock.now_iso(), run=True)
        current["errors"][-1]["iteration"] = number
        events.append({**event(hit), "wait": None if wait is None else round(wait, 1)})
        return current

    state = ctx.store.update(change)
    ctx.state = state
    ctx.report.line(f"  {hit.kind.replace('_', ' ')}: {clip(hit.message, 200)}")
    return state


def event(hit: ratelimits.Limit) -> Event:
    """The `limit` history event."""
    found: Event = {"event": "limit", "kind": hit.kind, "message": hit.message}
    if hit.resets_at is not None:
        found["resetsAt"] = hit.resets_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return found


def wait_out(
    ctx: Context, number: int, hit: ratelimits.Limit, wait: float, now: dt.datetime
) -> None:
    """Wait `wait` seconds from `now` for the limit to lift, saying so; Ctrl-C during
    the wait raises KeyboardInterrupt as usual."""
    what = ratelimits.PHRASES[hit.kind]
    endings.notify(
        ctx,
        "limit",
        f"ralphstate: the agent hit {what}; waiting, then iteration {number} again",
        limit=hit.kind,
        message=hit.message,
        resetsAt=event(hit).get("resetsAt"),
    )
    target = now + dt.timedelta(seconds=wait)
    started = clock.now()
    guards.until(target, ctx.report.line, hit.kind.replace("_", " "))
    waited = (clock.now() - started).total_seconds()

    def spend(current: st.State, events: list[Event]) -> None:
        budgets.add_usage(current, seconds=waited)

    with contextlib.suppress(RalphstateError):
        ctx.store.update(spend)
