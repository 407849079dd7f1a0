"""What `ralphstate run` does after an iteration: a pure function of its facts.

The rules in order; the first that applies wins, and no other module repeats them:

1. Ctrl-C (or SIGTERM, SIGHUP) came while the agent ran: pause (`user`).
2. The loop could not be read back: the run ends as an error.
3. The loop was paused, cancelled or completed from outside: the run ends with it (a
   completion only once its own check verified it, `endings.stopped`).
4. The agent stopped on a usage or rate limit: the iteration is uncounted, and the run
   moves to the next agent of the chain (a usage limit), pauses (`--on-limit pause`, no
   wait known, too many in a row), pauses for a duration budget the wait would pass, or
   waits and runs the iteration again.
5. Then, once the checks ran: the agent-errors breaker moves to the next agent of the
   chain when there is one (and does not pause); every criterion verified completes;
   this run's `--max` spent pauses (`max_iterations` at the loop's cap, else
   `run_max`); a budget reached pauses; then the breakers (`agent_errors`,
   `step_retries`), then `stall`; else the run goes on. A failed `--commit` replaces
   whatever was decided (`commit_failed`). With `--strict`, a check that passed as the
   iteration began and fails after it pauses (`check_failed`) before `--max` and the
   rest; a loop that checks in with the person (a colleague-shaped one) pauses
   (`check_in`) instead of completing, and after an iteration that finished a step
   when nothing else paused it.

The run learns the facts in that order and asks after each (`decide_iteration` says
None while what is known does not decide): Ctrl-C before it reads the loop back, the
loop as the agent left it before it runs the checks. Two facts come only after it has
acted on a verdict, and it asks again with them: what the duration budgets leave once a
limited iteration is uncounted (`LimitHit.left`), and a commit that failed after any
switch of agents (`Checked.committed`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from ralphstate.core import budgets, schema
from ralphstate.core.render import clip, quote
from ralphstate.run.guards import LIMIT_ATTEMPTS, Breaker
from ralphstate.run.result import IterationDecision

# How the run ends after the iteration; None: it goes on.
Ending = Literal["complete", "paused", "stopped", "error"]


@dataclass(frozen=True)
class LimitHit:
    """A usage or rate limit the agent stopped on, as the run weighs it."""

    kind: str  # "usage_limit", "rate_limit", "overloaded", "billing"
    phrase: str  # as a person reads it: "a usage limit"
    message: str  # what the agent said
    wait: float | None  # seconds to wait it out; None when waiting cannot help
    attempts: int  # limits in a row, this one included
    pause: bool = False  # `--on-limit pause`
    fallback: bool = False  # the chain has another agent after this one
    # What the loop's and this run's duration budgets leave, in seconds (None: no
    # budget), once the iteration is uncounted; None until then.
    left: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class Checked:
    """What the run knows once the checks ran and the iteration's spending is counted."""

    unmet: int  # criteria not verified
    run: int  # this run's count of iterations, and its `--max`
    run_max: int
    iteration: int  # the loop's, and its cap
    max_iterations: int
    quiet: int  # iterations in a row without progress, and how many pause
    stall_limit: int
    # The budget reached, the loop's or this run's: whose (budgets.LOOPS, budgets.RUNS) and how
    # a person reads it.
    over: tuple[str, str] | None = None
    tripped: Breaker | None = None  # the breaker that opened
    failures: int = 0  # failed iterations in a row, and their errors
    errors: tuple[str, ...] = ()
    step: str | None = None  # the step that stays next, and for how many iterations
    step_count: int = 0
    fallback: bool = False  # the chain has another agent after this one
    committed: bool = True  # False: `--commit` could not commit the iteration's work
    # `--strict`: the criteria whose check passed as the iteration began and fails now.
    broken: tuple[str, ...] = ()
    # A loop that checks in with the person (run/checkin.py), and the steps the
    # iteration finished.
    check_in: bool = False
    finished: tuple[str, ...] = ()


@dataclass(frozen=True)
class IterationFacts:
    interrupted: bool = False
    # Why the loop could not be read back after the agent, or its status then (None:
    # not read yet).
    error: str | None = None
    status: schema.Status | None = None
    limit: LimitHit | None = None
    checked: Checked | None = None  # None: the checks have not run


@dataclass(frozen=True)
class Verdict:
    decision: IterationDecision  # what the iteration's record in history says
    ending: Ending | None = None
    reason: str | None = None  # why the loop pauses (its pauseReason)
    detail: str | None = None  # what the reason is about; for an error, its message
    switch: str | None = None  # move to the next agent of the chain first, and why
    wait: float | None = None  # wait this long (seconds), then run the iteration again
    over: str | None = None  # whose budget was reached: budgets.LOOPS or budgets.RUNS


def decide_iteration(facts: IterationFacts) -> Verdict | None:
    """The verdict on one iteration, or None while the facts known so far decide
    nothing (the run reads the loop back, then runs the checks, and asks again)."""
    if facts.interrupted:
        return Verdict("user", "paused", "user")
    if facts.error is not None:
        return Verdict("error", "error", detail=facts.error)
    if facts.status is None:
        return None
    if facts.status != "in_progress":
        return Verdict(facts.status, "stopped")
    if facts.limit is not None:
        return _limited(facts.limit)
    if facts.checked is None:
        return None
    return _checked(facts.checked)


def _limited(hit: LimitHit) -> Verdict:
    """A limit: the iteration runs again (with the next agent, or after a wait) or the
    run pauses."""
    switch = hit.kind == "usage_limit" and hit.fallback
    pause = hit.pause or hit.wait is None
    if not switch and not pause and hit.attempts > LIMIT_ATTEMPTS:
        pause = True
    if switch:
        return Verdict("retry", switch=f"it hit {hit.phrase}")
    if pause or hit.wait is None:
        shown = f"{hit.kind.replace('_', ' ')}: {clip(hit.message, 200)}"
        return Verdict("limit", "paused", "limit", shown)
    loop_left, run_left = hit.left or (None, None)
    for whose, left in ((budgets.LOOPS, loop_left), (budgets.RUNS, run_left)):
        if left is not None and hit.wait >= left:
            why = f"waiting out {hit.phrase} would pass {whose} duration budget"
            return Verdict("retry", "paused", "budget", why, over=whose)
    return Verdict("retry", wait=hit.wait)


def _checked(facts: Checked) -> Verdict:
    """After the checks: the breakers, the caps and the budgets; a failed commit last."""
    tripped, switch = facts.tripped, None
    if tripped == "agent_errors" and facts.fallback:
        switch = f"it failed {facts.failures} iterations in a row"
        tripped = None
    verdict = _ruled(facts, tripped)
    if not facts.committed:
        verdict = Verdict("commit_failed", "paused", "commit_failed")
    return dataclasses.replace(verdict, switch=switch)


def _ruled(facts: Checked, tripped: Breaker | None) -> Verdict:
    if not facts.unmet:
        if facts.check_in:
            return _paused(
                "check_in",
                "every criterion is verified; look at the work, then `ralphstate run` completes it",
            )
        return Verdict("complete", "complete")
    if facts.broken:
        shown = ", ".join(quote(clip(name, 80)) for name in facts.broken)
        return _paused(
            "check_failed",
            f"the check of {shown} passed before iteration {facts.iteration} and fails after it",
        )
    if facts.run >= facts.run_max:  # the run's own --max, or the loop's cap
        capped = facts.iteration >= facts.max_iterations
        return _paused("max_iterations" if capped else "run_max")
    if facts.over is not None:
        whose, what = facts.over
        return Verdict("budget", "paused", "budget", what, over=whose)
    if tripped == "agent_errors":
        return _paused("agent_errors", "; ".join(dict.fromkeys(facts.errors)))
    if tripped == "step_retries":
        step = quote(clip(facts.step or "", 80))
        return _paused("step_retries", f"{step} stayed next for {facts.step_count} iterations")
    if facts.quiet >= facts.stall_limit:
        return _paused("stall")
    if facts.check_in and facts.finished:
        shown = ", ".join(quote(clip(step, 80)) for step in facts.finished)
        return _paused("check_in", f"finished {shown}; look at the work, then `ralphstate run`")
    return Verdict("continue")


def _paused(reason: IterationDecision, detail: str | None = None) -> Verdict:
    return Verdict(reason, "paused", reason, detail)
