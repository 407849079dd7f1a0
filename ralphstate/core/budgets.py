"""What a loop has spent, and the budgets it is held to (docs/how-to/overnight.md, "Budgets"): the
sums, what is left, the first budget reached as a person reads it, and the durations
they are written in (`8h`, `1h30m`)."""

from __future__ import annotations

import math
import re
from typing import Literal, TypedDict, TypeVar, cast

from ralphstate.core import limits, schema
from ralphstate.core.fields import Usage
from ralphstate.core.state import State

_N = TypeVar("_N", int, float)


def spent(state: State) -> Usage:
    """What the loop has spent so far (zeros when nothing was recorded)."""
    return state["usage"] or {"tokens": 0, "cost": 0.0, "seconds": 0.0}


def add_usage(state: State, tokens: int = 0, cost: float = 0.0, seconds: float = 0.0) -> None:
    """Add one iteration's figures to the loop's `usage`; each sum stops growing at its
    bound (`limits.MAX_USAGE_*`), so it stays a figure state.json can hold."""
    now = spent(state)
    state["usage"] = {
        "tokens": _sum(now["tokens"], tokens, limits.MAX_USAGE_TOKENS),
        "cost": round(_sum(now["cost"], cost, limits.MAX_USAGE_COST), 6),
        "seconds": round(_sum(now["seconds"], seconds, limits.MAX_USAGE_SECONDS), 3),
    }


def _sum(total: _N, more: _N, most: _N) -> _N:
    """`total + more` (`more` below zero or not a number counts as 0), at most `most`,
    never below `total`: a hand-edited file may already hold more."""
    if not more > 0:  # NaN too
        return total
    return max(total, min(total + more, most))


def dollars(amount: float) -> str:
    """`$12.40`, or `$0.0032` for less than a dollar."""
    return f"${amount:.2f}" if amount >= 1 else f"${amount:.4f}"


# Budgets (docs/how-to/overnight.md, "Budgets"). The loop's are `maxCost`, `maxTokens` and
# `maxDuration` in the state, measured from its `usage`; a run's are its options (or its
# configuration file's), measured from what that run spent, and never written here.
LOOPS = "the loop's"
RUNS = "this run's"


class Budget(TypedDict):
    """Limits on what may be spent: dollars, tokens, seconds; None is no limit."""

    cost: float | None
    tokens: int | None
    seconds: float | None


def loop_budget(state: State) -> Budget:
    """The loop's budgets: each budget field of the table (core/schema.py, `BUDGETS`),
    by the figure of `usage` it bounds."""
    raw = cast(dict[str, object], state)
    return cast(Budget, {row.budget: raw[row.name] for row in schema.BUDGETS})


def used_since(now: Usage, start: Usage) -> Usage:
    """What was spent between two readings of `usage` (never below zero: a hand edit
    may have lowered it)."""
    return {
        "tokens": max(0, now["tokens"] - start["tokens"]),
        "cost": round(max(0.0, now["cost"] - start["cost"]), 6),
        "seconds": round(max(0.0, now["seconds"] - start["seconds"]), 3),
    }


def span(seconds: float) -> str:
    """`0.1s`, `45s`, `1m30s`, `1h30m`, `8h`, `2d4h`: a duration as a person writes one."""
    if round(seconds, 1) < 60:
        return f"{round(seconds, 1):g}s"
    whole = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    return "".join(parts)


_SPAN = re.compile(r"(\d+(?:\.\d+)?)([dhms])")


def parse_duration(text: str) -> float | None:
    """`8h`, `90m`, `1h30m`, `45s`, `2d` or a plain number of seconds; None if not one."""
    text = text.strip().lower().replace(" ", "")
    try:
        seconds = float(text)
    except ValueError:
        parts = _SPAN.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        seconds = sum(float(n) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def reached(used: Usage, budget: Budget, whose: str) -> str | None:
    """The budget `used` has reached, as a person reads it (`cost $0.0032 of this
    run's $0.0030`: the figure and the budget on one scale), or None."""
    cost, tokens, seconds = budget["cost"], budget["tokens"], budget["seconds"]
    if cost is not None and used["cost"] >= cost:
        digits = 2 if max(used["cost"], cost) >= 1 else 4
        return f"cost ${used['cost']:.{digits}f} of {whose} ${cost:.{digits}f}"
    if tokens is not None and used["tokens"] >= tokens:
        return f"tokens {used['tokens']:,} of {whose} {tokens:,}"
    if seconds is not None and used["seconds"] >= seconds:
        return f"duration {span(used['seconds'])} of {whose} {span(seconds)}"
    return None


def over_budget(state: State) -> str | None:
    """The loop's budget it has reached, as a person reads it, or None."""
    return reached(spent(state), loop_budget(state), LOOPS)


def left(used: Usage, budget: Budget, key: Literal["cost", "tokens", "seconds"]) -> float | None:
    """What `budget` leaves of one figure after `used`, or None without a limit."""
    limit = budget[key]
    return None if limit is None else limit - used[key]
