"""How a loop's checks are run, as its state says: the Stop hook's time for them
(`verifyBudget`), how many run at once (`verifyJobs`), the checks that run alone
(`runAlone`), and the record of a verification that was stopped before its checks
finished (`verifyInterrupted`). Each field is checked here (core/schema.py names the
check of each), and read here with its default; nothing here knows the whole state, so
`state` builds on it (docs/explanation/hooks.md, "Long test suites").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ralphstate.core.fields import Invalid
from ralphstate.core.limits import (
    MAX_CHECK_JOBS,
    MAX_STOP_VERIFY_BUDGET,
    MIN_CHECK_JOBS,
    STOP_VERIFY_BUDGET,
)

# How a verification was stopped: a SIGTERM (a client that gave up on its hook), a
# Ctrl-C, or a kill nothing can catch (its watchdog recorded it: verify/watchdog.py).
HOW = ("terminated", "interrupted", "killed")
# The most criteria a `verifyInterrupted` names.
MAX_NAMED = 100


def default_jobs() -> int:
    """How many checks run at once unless the loop says: the processors this process
    may use, and at least MIN_CHECK_JOBS (most checks wait on processes, disks or the
    network more than they compute)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS and Windows have no affinity to ask
        cpus = os.cpu_count() or 1
    return max(MIN_CHECK_JOBS, min(cpus, MAX_CHECK_JOBS))


def budget(state: Mapping[str, Any]) -> float:
    """Seconds the Stop hook (and the task gate) may spend running checks."""
    value = state.get("verifyBudget")
    return STOP_VERIFY_BUDGET if value is None else float(value)


def jobs(state: Mapping[str, Any]) -> int:
    """How many checks run at once."""
    value = state.get("verifyJobs")
    return default_jobs() if value is None else int(value)


def alone(state: Mapping[str, Any]) -> list[str]:
    """The criteria whose check runs with no other check beside it."""
    return list(state.get("runAlone") or [])


def budget_seconds(raw: dict[str, Any], key: str) -> float | None:
    """`verifyBudget`: null, or seconds from 0 to MAX_STOP_VERIFY_BUDGET."""
    seconds = raw.get(key)
    if seconds is not None and (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not 0 <= seconds <= MAX_STOP_VERIFY_BUDGET
    ):
        raise Invalid(
            f"'{key}' must be null or seconds from 0 to {MAX_STOP_VERIFY_BUDGET:g}, not {seconds!r}"
        )
    return seconds


def job_count(raw: dict[str, Any], key: str) -> int | None:
    """`verifyJobs`: null, or a whole number from 1 to MAX_CHECK_JOBS."""
    count = raw.get(key)
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    if count is not None and (
        isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_CHECK_JOBS
    ):
        raise Invalid(
            f"'{key}' must be null or a whole number from 1 to {MAX_CHECK_JOBS}, not {count!r}"
        )
    return count


def interruption(raw: dict[str, Any], key: str) -> dict[str, Any] | None:
    """`verifyInterrupted`: null, or the record `interrupted` makes."""
    value = raw.get(key)
    if value is None:
        return None
    if not _interrupted(value):
        raise Invalid(
            f"'{key}' must be null or an object of at, by (strings), how"
            f" ({', '.join(HOW)}) and criteria (a list of names)"
        )
    return dict(value)


def _interrupted(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("at"), str)
        and isinstance(value.get("by"), str)
        and value.get("how") in HOW
        and isinstance(value.get("criteria"), list)
        and all(isinstance(c, str) for c in value["criteria"])
    )


def interrupted(at: str, by: str, how: str, names: Iterable[str]) -> dict[str, Any]:
    """The record of a verification stopped before the checks of `names` finished."""
    return {"at": at, "by": by, "how": how, "criteria": list(dict.fromkeys(names))[:MAX_NAMED]}


def ran(state: dict[str, Any], names: Iterable[str]) -> None:
    """The checks of `names` ran to a result since: a stopped verification that named
    them names them no more, and is forgotten once it names none."""
    mark = state.get("verifyInterrupted")
    if not mark:
        return
    done = set(names)
    left = [c for c in mark["criteria"] if c not in done]
    state["verifyInterrupted"] = {**mark, "criteria": left} if left else None


# -- the order checks start in, and what fits a budget ---------------------------------

# One check to plan: its criterion, the seconds its last run took (None: not known), and
# whether it runs alone.
Planned = tuple[str, float | None, bool]


def order(planned: list[Planned]) -> list[int]:
    """The order the checks start in (indexes into `planned`): those that share the
    machine first, the longest last run first and those never timed before them (the
    time they take is found soonest), then each that runs alone, in the loop's order."""

    def longest_first(i: int) -> float:
        last = planned[i][1]
        return -(float("inf") if last is None else last)

    shared = sorted((i for i, (_, _, solo) in enumerate(planned) if not solo), key=longest_first)
    return shared + [i for i, (_, _, solo) in enumerate(planned) if solo]


def fit(planned: list[Planned], slots: int, seconds: float) -> list[int]:
    """The checks (indexes into `planned`) that cannot finish within `seconds` when
    `slots` run at once in `order`'s order, as their last runs say: each is left out
    and the plan goes on without it. A check never timed is taken to fit (the budget
    cuts it short if it does not); with no time at all, none fits."""
    if seconds <= 0:
        return list(range(len(planned)))
    return sorted(_plan(planned, slots, seconds)[1])


def _plan(planned: list[Planned], slots: int, seconds: float) -> tuple[float, list[int]]:
    """When the checks that fit `seconds` are all done, and those that do not."""
    free = [0.0] * max(1, slots)
    left: list[int] = []
    for i in order(planned):
        _, last, solo = planned[i]
        start = max(free) if solo else min(free)
        end = start + (last or 0.0)
        if end > seconds:
            left.append(i)
        elif solo:
            free = [end] * len(free)
        else:
            free[free.index(start)] = end
    return max(free), left
