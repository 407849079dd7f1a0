"""The bounds on the figures a run parses and sums (core/limits.py), each at its
boundary: the value at the limit is used whole, one more is not believed, stops the
sum, or is refused. The same cases through real processes are in
test_run_never_crashes.py and tests/report/test_report_figures.py."""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any, cast

import pytest

from ralphstate.core import budgets, limits
from ralphstate.core import state as st
from ralphstate.report import story
from ralphstate.run import argprompt, ratelimits, usage

NOW = dt.datetime(2026, 12, 31, 22, 0, tzinfo=dt.timezone.utc)


def test_max_iteration_tokens() -> None:
    most = limits.MAX_ITERATION_TOKENS
    assert usage.believed(usage.Usage("claude", most)) == usage.Usage("claude", most)
    found = usage.believed(usage.Usage("claude", most + 1, 0.5))
    assert (found.tokens, found.cost) == (0, 0.5)
    said = (
        "the agent reported more than 1,000,000,000,000 tokens for one iteration, which is"
        " not believed: it is not counted"
    )
    assert found.doubted == (said,)


@pytest.mark.parametrize("cost", [limits.MAX_ITERATION_COST * 1.0001, float("inf"), float("nan")])
def test_max_iteration_cost(cost: float) -> None:
    most = limits.MAX_ITERATION_COST
    assert usage.believed(usage.Usage("claude", 5, most)).cost == most
    found = usage.believed(usage.Usage("claude", 5, cost))
    assert (found.tokens, found.cost) == (5, None)
    said = (
        "the agent reported a cost of more than $1,000,000 for one iteration, which is not"
        " believed: it is not counted"
    )
    assert found.doubted == (said,)


def spent_after(start: dict[str, Any], **more: Any) -> dict[str, Any]:
    state = cast(st.State, {"usage": start})
    budgets.add_usage(state, **more)
    return dict(state["usage"] or {})


def test_max_usage_sums() -> None:
    tokens, cost, seconds = limits.MAX_USAGE_TOKENS, limits.MAX_USAGE_COST, limits.MAX_USAGE_SECONDS
    below = {"tokens": tokens - 1, "cost": cost - 1, "seconds": seconds - 1}
    assert spent_after(below, tokens=1, cost=1.0, seconds=1.0) == {
        "tokens": tokens,
        "cost": cost,
        "seconds": seconds,
    }
    at = {"tokens": tokens, "cost": cost, "seconds": seconds}
    assert spent_after(at, tokens=1, cost=1.0, seconds=1.0) == at
    # A hand-edited file above them keeps what it holds, and never becomes infinite.
    above = {"tokens": 2**64 - 1, "cost": 1e308, "seconds": 1e308}
    assert spent_after(above, tokens=10, cost=1e308, seconds=float("inf")) == above
    assert spent_after(at, cost=float("nan"), seconds=-5.0) == at


def test_max_reset_seconds() -> None:
    days = limits.MAX_RESET_SECONDS / 86400
    said = ratelimits.reset_time(f"try again in {days:g} days", NOW)
    assert said == NOW + dt.timedelta(seconds=limits.MAX_RESET_SECONDS)
    assert ratelimits.reset_time(f"try again in {days + 1:g} days", NOW) == said


def test_run_arg_prompt_bytes() -> None:
    if sys.platform == "win32":
        most, unit = limits.RUN_ARG_PROMPT_CHARS_WINDOWS, "characters"
    else:
        most, unit = limits.RUN_ARG_PROMPT_BYTES, "bytes"
    assert argprompt.unpassable("x" * most) is None
    assert argprompt.unpassable("x" * (most + 1)) == (
        f"it is {most + 1:,} {unit}, more than the {most:,} one argument may hold"
    )
    assert argprompt.unpassable("a\x00b") == "nul"


def test_max_iteration_seconds_in_the_report() -> None:
    loop = st.new("Build it", ["tests pass"], [], now="2026-01-01T00:00:00Z")

    def read(duration: object, cost: object, tokens: object) -> story.Iteration:
        event = {"event": "run_iteration", "duration": duration, "cost": cost, "tokens": tokens}
        [iteration] = story.gather(loop, [event], "/project").iterations
        return iteration

    most = (limits.MAX_ITERATION_SECONDS, limits.MAX_ITERATION_COST, limits.MAX_ITERATION_TOKENS)
    at = read(*most)
    assert (at.duration, at.cost, at.tokens) == most
    past = read(most[0] * 1.0001, most[1] * 1.0001, most[2] + 1)
    assert (past.duration, past.cost, past.tokens) == (None, None, None)
    assert story.seconds(float("inf")) == "?"
