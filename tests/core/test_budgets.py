"""What a loop has spent and the budgets it is held to: the first budget reached, what
a run spent, durations as people write them, and the status view's `spent:` line."""

from __future__ import annotations

import pytest

from ralphstate.core import state as st
from ralphstate.core import views
from ralphstate.core.budgets import RUNS, Budget, parse_duration, reached, span, used_since
from ralphstate.core.fields import Usage


@pytest.mark.parametrize(
    ("used", "budget", "said"),
    [
        # The figure and the budget on one scale, whichever side passes a dollar.
        ((0, 1.44, 0.0), (0.8, None, None), "cost $1.44 of this run's $0.80"),
        ((0, 0.6, 0.0), (0.54, None, None), "cost $0.6000 of this run's $0.5400"),
        ((15200, 0.0, 0.0), (None, 15000, None), "tokens 15,200 of this run's 15,000"),
        ((0, 0.0, 28812.4), (None, None, 28800.0), "duration 8h12s of this run's 8h"),
        ((0, 0.0, 1.04), (None, None, 0.1), "duration 1s of this run's 0.1s"),
        ((0, 0.79, 5.0), (0.8, 100, 60.0), None),
    ],
)
def test_a_budget_reached_names_whose_and_both_figures(
    used: tuple[int, float, float],
    budget: tuple[float | None, int | None, float | None],
    said: str | None,
) -> None:
    spent: Usage = {"tokens": used[0], "cost": used[1], "seconds": used[2]}
    limits: Budget = {"cost": budget[0], "tokens": budget[1], "seconds": budget[2]}
    assert reached(spent, limits, RUNS) == said


def test_what_a_run_spent_is_the_difference_never_below_zero() -> None:
    start: Usage = {"tokens": 100, "cost": 0.5, "seconds": 10.0}
    now: Usage = {"tokens": 340, "cost": 0.5016, "seconds": 8.0}
    assert used_since(now, start) == {"tokens": 240, "cost": 0.0016, "seconds": 0.0}


@pytest.mark.parametrize(
    ("text", "seconds", "shown"),
    [("8h", 28800, "8h"), ("1h30m", 5400, "1h30m"), ("90", 90, "1m30s"), ("2d4h", 187200, "2d4h")],
)
def test_durations_read_and_shown_as_people_write_them(
    text: str, seconds: float, shown: str
) -> None:
    assert parse_duration(text) == seconds
    assert span(seconds) == shown


@pytest.mark.parametrize(
    ("usage", "budgets", "line"),
    [
        # A session's tokens alone: no cost and no run time to show.
        ({"tokens": 480, "cost": 0.0, "seconds": 0.0}, {}, "spent: 480 tokens"),
        (
            {"tokens": 480, "cost": 0.0032, "seconds": 61.0},
            {},
            "spent: 480 tokens · $0.0032 · 61s of runs",
        ),
        # A budget of a kind shows that kind's figure, even at nothing spent yet.
        (
            {"tokens": 480, "cost": 0.0, "seconds": 0.0},
            {"maxCost": 2.0, "maxDuration": 3600.0},
            "spent: 480 tokens · $0.0000 · 0s of runs (the loop's budget: $2.00, 1h)",
        ),
    ],
)
def test_the_spent_line_shows_what_was_spent(
    usage: dict[str, float], budgets: dict[str, float], line: str
) -> None:
    state = st.normalise({"spec": "s", "criteria": ["c"], "usage": usage, **budgets})
    assert views.status(state, views.StatusFacts("here")).splitlines()[2] == line
