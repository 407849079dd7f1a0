"""What a `ralphstate run` did: each iteration, the outcome, its exit code, its
summary for a person and its JSON object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ralphstate.core import budgets, provenance, queries
from ralphstate.core import state as st
from ralphstate.core.redgreen import already_true
from ralphstate.core.render import proofs
from ralphstate.core.text import count, noun, visible

# How a `ralphstate run` ended, and what it exits with for each.
RunOutcome = Literal["complete", "paused", "cancelled", "error", "ended_outside"]
EXIT_CODES: dict[RunOutcome, int] = {
    "complete": 0,
    "paused": 3,
    "cancelled": 1,
    "error": 1,
    # state.json said complete (or was deleted) without ralphstate: nothing verified it.
    "ended_outside": 5,
}
# A loop paused as blocked on a person (`ralphstate pause --blocked`).
EXIT_BLOCKED = 4
# What the runner decided after one iteration: go on, end, or what ended it from outside
# (Ctrl-C is "user"; a state it could not read is "error"; a loop paused, cancelled or
# completed by someone else is that status).
# Overnight guards add: a usage or rate limit that ends the run (`limit`; one that is
# waited out is `retry`), a budget reached, the agent failing too often in a row, a step
# that stays next too long.
# "run_max": this run's --max (or the configured max) was reached before the loop's cap.
IterationDecision = Literal[
    "complete",
    "max_iterations",
    "run_max",
    "stall",
    "continue",
    "user",
    "error",
    "paused",
    "cancelled",
    "commit_failed",  # `--commit` could not commit the iteration's work: paused
    "retry",
    "limit",
    "budget",
    "agent_errors",
    "step_retries",
    "check_failed",  # `--strict`: a check that passed failed after the iteration
    "check_in",  # a colleague-shaped loop checks in with the person (run/checkin.py)
]


# What a person does after each kind of budget pause (docs/how-to/overnight.md, "Budgets").
RUN_BUDGET_SPENT = (
    "This run's budget is spent (`ralphstate status` shows what the loop has spent); run"
    " `ralphstate run` again to continue, with a budget of its own if you give it one."
)
LOOP_BUDGET_SPENT = (
    "The loop's budget is spent (`ralphstate status` shows what it has spent): raise or"
    " clear it with `ralphstate config max-cost USD|none` (or max-tokens, max-duration),"
    " then run `ralphstate run` again."
)

# Claude Code's refusal of --dangerously-skip-permissions as root, and what to do.
ROOT_REFUSAL = "cannot be used with root/sudo privileges"
AS_ROOT = (
    "Claude Code refuses --dangerously-skip-permissions as root outside a sandbox: in a"
    ' container, run `IS_SANDBOX=1 ralphstate run ...` (docs/how-to/overnight.md, "As root,'
    ' in a container").'
)


@dataclass
class IterationRecord:
    run: int
    iteration: int
    exit_code: int
    result: str
    duration: float
    log: str
    timed_out: bool
    interrupted: bool
    decision: IterationDecision
    # What the agent reported about itself (None: it reported nothing).
    tokens: int | None = None
    cost: float | None = None
    # How the agent was confined (`--sandbox`; None: the run was given no sandbox mode).
    sandbox: str | None = None

    def as_json(self) -> dict[str, Any]:
        shown = {} if self.sandbox is None else {"sandbox": self.sandbox}
        return {
            "run": self.run,
            "iteration": self.iteration,
            "exit": self.exit_code,
            "result": self.result,
            "duration": round(self.duration, 3),
            "timedOut": self.timed_out,
            "interrupted": self.interrupted,
            "decision": self.decision,
            "log": self.log,
            "tokens": self.tokens,
            "cost": self.cost,
            **shown,
        }


@dataclass
class Outcome:
    outcome: RunOutcome
    reason: str | None
    iterations: list[IterationRecord]
    state: st.State | None
    duration: float
    error: str | None = None
    # What the reason is about: which budget, which step, the agent's last error.
    detail: str | None = None
    # Whose budget was reached: `budgets.LOOPS` or `budgets.RUNS` (reason "budget").
    budget: str | None = None
    # How the run confined its agent (`unconfined` for --no-sandbox); None: no agent ran.
    sandbox: str | None = None

    @property
    def exit_code(self) -> int:
        if self.outcome == "paused" and self.reason == queries.BLOCKED:
            return EXIT_BLOCKED
        return EXIT_CODES[self.outcome]

    def counts(self) -> tuple[int, int, int, int]:
        """(criteria met, criteria, steps done, steps)."""
        return counts(self.state) if self.state is not None else (0, 0, 0, 0)

    def summary(self) -> list[str]:
        """The final lines a person reads."""
        met, total, done, steps = self.counts()
        n = len(self.iterations)
        head: str = self.outcome
        if self.reason:
            reason = visible(self.reason)
            head += f" ({reason}: {visible(self.detail)})" if self.detail else f" ({reason})"
        elif self.detail:
            head += f" ({visible(self.detail)})"
        proved = proofs(self.state) if self.state is not None and met else ""
        early = already_true(self.state) if self.state is not None and met else []
        if early:
            proved += f", {len(early)} already true at the start"
        shown = f" ({proved})" if proved else ""
        line = (
            f"{head} · {met}/{total} {noun(total, 'criterion')}{shown} · {done}/{steps}"
            f" {noun(steps, 'step')} · {count(n, 'iteration')} · {format_duration(self.duration)}"
        )
        tokens, cost = self.spent()
        if tokens is not None:
            line += f" · {format_spent(tokens, cost)}"
        confined = {r.sandbox for r in self.iterations if r.sandbox is not None}
        confined |= {self.sandbox} if self.sandbox is not None else set()
        if confined:
            line += f" · sandbox: {', '.join(sorted(confined))}"
        hint = {
            "max_iterations": "Give it more with `ralphstate run --max N`.",
            "run_max": "This run's --max is spent; run `ralphstate run` again to continue.",
            "stall": "No progress in the last iterations: look at `ralphstate status` and"
            " .loop/runs/, then `ralphstate run` again.",
            "user": "Stopped by Ctrl-C; run `ralphstate run` again to continue.",
            "commit_failed": "The iteration's work could not be committed (see above; it is"
            " staged): fix what stopped the commit, commit it, then `ralphstate run` again.",
            "budget": LOOP_BUDGET_SPENT if self.budget == budgets.LOOPS else RUN_BUDGET_SPENT,
            "limit": "The agent hit a usage limit, a rate limit or a billing problem that"
            " waiting does not fix here; `ralphstate run` again once it is lifted.",
            "agent_errors": "The agent failed several iterations in a row (see `errors` in"
            " `ralphstate status --json` and .loop/runs/); fix the cause, then"
            " `ralphstate run` again.",
            "step_retries": "The same step stayed next for too many iterations; split it or"
            " look at .loop/runs/, then `ralphstate run` again.",
            "check_failed": "A check that passed fails after the last iteration (--strict):"
            " see `ralphstate status` and .loop/runs/, fix it, then `ralphstate run` again.",
            "blocked": "Blocked on a person: read the reason with `ralphstate status`,"
            " act on it, then `ralphstate run` again.",
            "review": "What proves the loop done changed since you approved it: see"
            " `ralphstate review`, approve or revert, then `ralphstate run` again.",
            "agent": "The agent paused the loop itself; no check proved it done. See"
            " `ralphstate status`, then `ralphstate run` again.",
            "replaced": "See which loop .loop/state.json holds now with `ralphstate status`;"
            " `ralphstate log --all` keeps the history of both.",
        }.get(self.reason or "")
        if self.reason == "agent_errors" and ROOT_REFUSAL in (self.detail or ""):
            hint = AS_ROOT
        if self.outcome == "paused" and hint is None:
            hint = (
                "The loop was paused from outside the run; run `ralphstate run` again to continue."
            )
        if self.outcome == "cancelled":
            hint = "The loop was cancelled while the run was going."
        if self.outcome == "ended_outside" and self.reason != "replaced":
            hint = (
                "The loop ended outside ralphstate (state.json was edited or deleted by hand,"
                " not by a ralphstate command): it is not verified. See `ralphstate status`."
            )
        return [line, hint] if hint else [line]

    def standing(self) -> dict[str, Any]:
        """The met criteria by what backs them: `verified` by a check, `graded` by a
        reviewer, `claimed`, and
        the level of each verified one (`levels`)."""
        state = self.state
        if state is None:
            return {"verified": [], "graded": [], "claimed": [], "alreadyTrue": [], "levels": {}}
        met = [c for c in state["criteria"] if queries.met(state, c)]
        verified = [c for c in met if queries.standing(state, c) == "verified"]
        # passed by a reviewer against a rubric (core/grading.py): graded, never verified
        graded = [c for c in met if queries.standing(state, c) == "graded"]
        return {
            "verified": verified,
            "graded": graded,
            "claimed": [c for c in met if c not in verified and c not in graded],
            # verified, but their check passed before the loop did any work
            "alreadyTrue": already_true(state),
            # how each verified one was: sealed-confined, sealed, agent-env (core/provenance.py)
            "levels": {c: provenance.of_evidence(state["evidence"][c]) for c in verified},
        }

    def spent(self) -> tuple[int | None, float | None]:
        """This run's tokens and cost over the iterations that reported them."""
        tokens = [r.tokens for r in self.iterations if r.tokens is not None]
        costs = [r.cost for r in self.iterations if r.cost is not None]
        return (sum(tokens) if tokens else None, round(sum(costs), 6) if costs else None)

    def as_json(self) -> dict[str, Any]:
        met, total, done, steps = self.counts()
        unmet = queries.unmet(self.state) if self.state is not None else []
        out: dict[str, Any] = {
            "outcome": self.outcome,
            "reason": self.reason,
            "exitCode": self.exit_code,
            "iterations": len(self.iterations),
            "criteria": {"met": met, "total": total, "unmet": unmet, **self.standing()},
            "steps": {"done": done, "total": steps},
            "durations": {
                "total": round(self.duration, 3),
                "iterations": [round(r.duration, 3) for r in self.iterations],
            },
            "runs": [r.as_json() for r in self.iterations],
        }
        if self.sandbox is not None:
            out["sandbox"] = self.sandbox
        tokens, cost = self.spent()
        out["usage"] = {"tokens": tokens, "cost": cost}
        if self.error:
            out["error"] = self.error
        if self.detail:
            out["detail"] = self.detail
        if self.budget:
            out["budget"] = self.budget
        return out


def counts(state: st.State) -> tuple[int, int, int, int]:
    total = len(state["criteria"])
    return (
        total - len(queries.unmet(state)),
        total,
        len(state["completedSteps"]),
        len(state["steps"]),
    )


def format_duration(seconds: float) -> str:
    """`0.4s`, `12s`, `1m12s`, `2h05m`."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def format_spent(tokens: int, cost: float | None) -> str:
    """`12,400 tokens · $0.42`, or the tokens alone when the agent gave no cost."""
    text = f"{tokens:,} tokens"
    if cost is None:
        return text
    return text + (f" · ${cost:.4f}" if cost < 1 else f" · ${cost:.2f}")
