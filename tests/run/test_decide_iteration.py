"""The runner's iteration decision as a table: the facts of one iteration, and what
the run does after it (`decide_iteration`). The runs in tests/run/ drive the same
rules through real agent processes."""

from __future__ import annotations

import dataclasses
from typing import Any, get_args

import pytest

from ralphstate.core import budgets
from ralphstate.run.decide_iteration import (
    Checked,
    IterationFacts,
    LimitHit,
    Verdict,
    decide_iteration,
)
from ralphstate.run.guards import LIMIT_ATTEMPTS
from ralphstate.run.result import IterationDecision

ERRORS = ("exit 1", "exit 1", "signal SIGKILL")
SWITCHED = "it failed 3 iterations in a row"
LOOP_TOKENS = "tokens 1,000 of the loop's 1,000"
RUN_COST = "cost $0.0032 of this run's $0.0030"


def checked(**overrides: Any) -> Checked:
    """After the checks: one criterion unmet, the run's first iteration of ten."""
    given: dict[str, Any] = {
        "unmet": 1,
        "run": 1,
        "run_max": 10,
        "iteration": 1,
        "max_iterations": 20,
        "quiet": 0,
        "stall_limit": 5,
    }
    return Checked(**{**given, **overrides})


def after_checks(**overrides: Any) -> IterationFacts:
    return IterationFacts(status="in_progress", checked=checked(**overrides))


def limit(**overrides: Any) -> LimitHit:
    """A rate limit, the first in a row, with a minute to wait."""
    given: dict[str, Any] = {
        "kind": "rate_limit",
        "phrase": "a rate limit",
        "message": "429 Too Many Requests",
        "wait": 60.0,
        "attempts": 1,
    }
    return LimitHit(**{**given, **overrides})


def limited(**overrides: Any) -> IterationFacts:
    return IterationFacts(status="in_progress", limit=limit(**overrides))


def paused(reason: IterationDecision, detail: str | None = None, **more: Any) -> Verdict:
    return Verdict(reason, "paused", reason, detail, **more)


def budget_wait(whose: str) -> Verdict:
    """The wait for a rate limit would pass `whose` duration budget: paused."""
    why = f"waiting out a rate limit would pass {whose} duration budget"
    return Verdict("retry", "paused", "budget", why, over=whose)


RATE_PAUSE = paused("limit", "rate limit: 429 Too Many Requests")
WAIT = Verdict("retry", wait=60.0)

# name, facts, what the run does (None: the facts known so far decide nothing)
TABLE: list[tuple[str, IterationFacts, Verdict | None]] = [
    # -- before the loop is read back --
    ("the agent ended, no Ctrl-C: read the loop back", IterationFacts(), None),
    ("Ctrl-C while the agent ran: paused", IterationFacts(interrupted=True), paused("user")),
    (
        "Ctrl-C beats everything learned after it",
        IterationFacts(
            interrupted=True,
            error="state.json is not valid JSON",
            status="paused",
            limit=limit(),
            checked=checked(unmet=0),
        ),
        paused("user"),
    ),
    # -- the loop read back --
    (
        "the loop could not be read back: the run ends as an error",
        IterationFacts(error="state.json is not valid JSON"),
        Verdict("error", "error", detail="state.json is not valid JSON"),
    ),
    (
        "an unreadable loop beats a limit",
        IterationFacts(error="locked", limit=limit()),
        Verdict("error", "error", detail="locked"),
    ),
    ("paused from outside", IterationFacts(status="paused"), Verdict("paused", "stopped")),
    ("cancelled from outside", IterationFacts(status="cancelled"), Verdict("cancelled", "stopped")),
    ("completed from outside", IterationFacts(status="complete"), Verdict("complete", "stopped")),
    (
        "stopped from outside beats a limit",
        IterationFacts(status="paused", limit=limit()),
        Verdict("paused", "stopped"),
    ),
    ("in progress, no limit: the checks decide", IterationFacts(status="in_progress"), None),
    # -- a limit --
    ("a limit with a wait known: wait, then the iteration again", limited(), WAIT),
    (
        "a limit beats what the checks found",
        dataclasses.replace(limited(), checked=checked(unmet=0)),
        WAIT,
    ),
    ("--on-limit pause", limited(pause=True), RATE_PAUSE),
    ("no wait can help (billing, a reset too far): paused", limited(wait=None), RATE_PAUSE),
    (
        "a billing problem reads as one",
        limited(
            kind="billing",
            phrase="a billing problem",
            message="Credit balance is too low",
            wait=None,
        ),
        paused("limit", "billing: Credit balance is too low"),
    ),
    ("too many limits in a row: paused", limited(attempts=LIMIT_ATTEMPTS + 1), RATE_PAUSE),
    ("the last limit in a row allowed still waits", limited(attempts=LIMIT_ATTEMPTS), WAIT),
    (
        "a usage limit with another agent in the chain: switch, then the iteration again",
        limited(kind="usage_limit", phrase="a usage limit", fallback=True),
        Verdict("retry", switch="it hit a usage limit"),
    ),
    (
        "the switch beats --on-limit pause, no wait and too many in a row",
        limited(
            kind="usage_limit",
            phrase="a usage limit",
            fallback=True,
            pause=True,
            wait=None,
            attempts=LIMIT_ATTEMPTS + 1,
        ),
        Verdict("retry", switch="it hit a usage limit"),
    ),
    ("a usage limit with no other agent waits", limited(kind="usage_limit"), WAIT),
    ("a rate limit never switches agents", limited(fallback=True), WAIT),
    (
        "the wait would pass the loop's duration budget",
        limited(left=(30.0, None)),
        budget_wait(budgets.LOOPS),
    ),
    (
        "a wait as long as what this run's budget leaves passes it",
        limited(left=(None, 60.0)),
        budget_wait(budgets.RUNS),
    ),
    (
        "both would be passed: the loop's is named",
        limited(left=(10.0, 10.0)),
        budget_wait(budgets.LOOPS),
    ),
    ("the wait fits both budgets", limited(left=(60.5, 3600.0)), WAIT),
    ("no duration budget", limited(left=(None, None)), WAIT),
    # -- after the checks --
    ("every criterion verified: complete", after_checks(unmet=0), Verdict("complete", "complete")),
    (
        "complete beats --max, a budget, the breakers and a stall",
        after_checks(
            unmet=0,
            run=10,
            over=(budgets.LOOPS, LOOP_TOKENS),
            tripped="step_retries",
            step="parser",
            step_count=10,
            quiet=5,
        ),
        Verdict("complete", "complete"),
    ),
    (
        "this run's --max spent at the loop's cap",
        after_checks(run=10, iteration=20),
        paused("max_iterations"),
    ),
    ("this run's --max spent before the cap", after_checks(run=10, iteration=7), paused("run_max")),
    (
        "--max beats a budget, the breakers and a stall",
        after_checks(
            run=10, over=(budgets.RUNS, RUN_COST), tripped="agent_errors", errors=ERRORS, quiet=5
        ),
        paused("run_max"),
    ),
    (
        "the loop's budget reached",
        after_checks(over=(budgets.LOOPS, LOOP_TOKENS)),
        paused("budget", LOOP_TOKENS, over=budgets.LOOPS),
    ),
    (
        "this run's budget reached",
        after_checks(over=(budgets.RUNS, RUN_COST)),
        paused("budget", RUN_COST, over=budgets.RUNS),
    ),
    (
        "a budget beats the breakers and a stall",
        after_checks(over=(budgets.RUNS, RUN_COST), tripped="agent_errors", errors=ERRORS, quiet=5),
        paused("budget", RUN_COST, over=budgets.RUNS),
    ),
    (
        "the agent failed too often in a row",
        after_checks(tripped="agent_errors", failures=3, errors=ERRORS),
        paused("agent_errors", "exit 1; signal SIGKILL"),
    ),
    (
        "agent errors with another agent in the chain: switch and go on",
        after_checks(tripped="agent_errors", failures=3, errors=ERRORS, fallback=True),
        Verdict("continue", switch=SWITCHED),
    ),
    (
        "the switch, and every criterion verified",
        after_checks(unmet=0, tripped="agent_errors", failures=3, errors=ERRORS, fallback=True),
        Verdict("complete", "complete", switch=SWITCHED),
    ),
    (
        "the switch does not keep a stall from pausing",
        after_checks(tripped="agent_errors", failures=3, fallback=True, quiet=5),
        paused("stall", switch=SWITCHED),
    ),
    (
        "the switch does not keep a budget from pausing",
        after_checks(
            tripped="agent_errors", failures=3, fallback=True, over=(budgets.RUNS, RUN_COST)
        ),
        paused("budget", RUN_COST, over=budgets.RUNS, switch=SWITCHED),
    ),
    (
        "a step stays next too long",
        after_checks(tripped="step_retries", step="Write the parser", step_count=10),
        paused("step_retries", '"Write the parser" stayed next for 10 iterations'),
    ),
    (
        "the step breaker never switches agents",
        after_checks(tripped="step_retries", step="parser", step_count=10, fallback=True),
        paused("step_retries", '"parser" stayed next for 10 iterations'),
    ),
    (
        "a breaker beats a stall",
        after_checks(tripped="agent_errors", errors=ERRORS, quiet=5),
        paused("agent_errors", "exit 1; signal SIGKILL"),
    ),
    (
        "no progress for stallLimit iterations",
        after_checks(quiet=5, stall_limit=5),
        paused("stall"),
    ),
    ("one short of the stall limit goes on", after_checks(quiet=4), Verdict("continue")),
    # -- --strict, and a loop that checks in with the person --
    (
        "a check that broke pauses under --strict, before the run's --max",
        after_checks(broken=("build passes",), iteration=4, run=10),
        paused(
            "check_failed",
            'the check of "build passes" passed before iteration 4 and fails after it',
        ),
    ),
    (
        "a loop that checks in pauses before it completes",
        after_checks(unmet=0, check_in=True, finished=("parser",)),
        paused(
            "check_in",
            "every criterion is verified; look at the work, then `ralphstate run` completes it",
        ),
    ),
    (
        "a loop that checks in pauses after a finished step",
        after_checks(check_in=True, finished=("parser",)),
        paused("check_in", 'finished "parser"; look at the work, then `ralphstate run`'),
    ),
    (
        "a stall beats a check-in",
        after_checks(check_in=True, finished=("parser",), quiet=5),
        paused("stall"),
    ),
    (
        "no step finished: no check-in",
        after_checks(check_in=True),
        Verdict("continue"),
    ),
    ("nothing to stop for: go on", after_checks(), Verdict("continue")),
    # -- a failed commit (--commit) --
    (
        "a failed commit beats complete",
        after_checks(unmet=0, committed=False),
        paused("commit_failed"),
    ),
    (
        "a failed commit beats a budget",
        after_checks(over=(budgets.LOOPS, LOOP_TOKENS), committed=False),
        paused("commit_failed"),
    ),
    (
        "a failed commit after a switch keeps the switch",
        after_checks(tripped="agent_errors", failures=3, fallback=True, committed=False),
        paused("commit_failed", switch=SWITCHED),
    ),
]
IDS = [row[0] for row in TABLE]


@pytest.mark.parametrize("name,facts,expected", TABLE, ids=IDS)
def test_decide_iteration(name: str, facts: IterationFacts, expected: Verdict | None) -> None:
    assert decide_iteration(facts) == expected


def test_every_decision_the_runner_records_has_a_row() -> None:
    decided = {verdict.decision for _, _, verdict in TABLE if verdict is not None}
    assert decided == set(get_args(IterationDecision))


def test_the_facts_learned_later_never_undo_a_verdict_already_given() -> None:
    """The run acts on a verdict before it learns the late facts (what the budgets leave
    once a limit is uncounted, a failed commit); those only ever turn it into a pause."""
    for _, facts, verdict in TABLE:
        if verdict is None or verdict.ending is not None:
            continue
        if facts.limit is not None and facts.limit.left is None:
            later = dataclasses.replace(facts.limit, left=(0.0, 0.0))
            again = decide_iteration(dataclasses.replace(facts, limit=later))
            assert again is not None and again.decision == verdict.decision
            assert again.ending in (None, "paused") and again.switch == verdict.switch
        if facts.checked is not None and facts.limit is None:
            failed = dataclasses.replace(facts.checked, committed=False)
            again = decide_iteration(dataclasses.replace(facts, checked=failed))
            assert again == paused("commit_failed", switch=verdict.switch)
