"""What a `ralphstate run` says as it goes (the line before each iteration, one for
each check, and each iteration's record: a `run_iteration` line in history, and a line
for the person), and what counts as an iteration's progress (`fingerprint`)."""

from __future__ import annotations

from typing import Any

from ralphstate.core import queries
from ralphstate.core import state as st
from ralphstate.core.render import clip, quote
from ralphstate.core.text import noun, visible
from ralphstate.run import spawn, usage
from ralphstate.run.context import Context
from ralphstate.run.result import (
    IterationDecision,
    IterationRecord,
    counts,
    format_duration,
    format_spent,
)
from ralphstate.storage.loopdir.store import Event
from ralphstate.storage.repo import filestamp, git
from ralphstate.storage.system.paths import LoopPaths, git_top


def fingerprint(paths: LoopPaths, state: st.State) -> tuple[str, str | None]:
    """What the run compares from one iteration to the next: an iteration that changed
    it made progress. The loop's bookkeeping (criteria, steps: `st.progress`) and the
    content of the project's files: in a git repository the id of the tree the work
    tree holds (`git.snapshot`: ignored files and the loop's directory left out, None
    when git fails), which no commit changes, so the run's own `--commit` of what was
    there is no progress while an agent's new work is, committed or not; outside git
    the stamp of the files (`filestamp.walk`)."""
    if git_top(paths.root) is None:
        return st.progress(state), filestamp.walk(paths)
    code = git.snapshot(paths)
    return st.progress(state), code.tree if code is not None else None


def place(state: st.State, number: int | None = None) -> str:
    """`[5/20]`: the loop's iteration (`number`, or the state's) and its cap, as
    `ralphstate status` shows them; the run's own count is said beside it."""
    return f"[{state['iteration'] if number is None else number}/{state['maxIterations']}]"


def heading(state: st.State, run: int, limit: int) -> str:
    """The line before an iteration: where the loop is, and what is next."""
    remaining, unmet = state["remainingSteps"], queries.unmet(state)
    if remaining:
        nxt = f"next step: {visible(clip(remaining[0], 80))}"
    else:
        nxt = f"next criterion: {visible(clip(unmet[0], 80))}" if unmet else "checking the work"
    return f"{place(state)} this run: {run} of {limit} · {nxt}"


def check_line(result: Any) -> str:
    """One check the run ran (a `verify` result), as a person reads it."""
    seconds = format_duration(result.duration_ms / 1000)
    return (
        f"  check {visible(quote(result.criterion))}: {result.result}"
        f" ({visible(result.summary)}, {seconds})"
    )


def record(
    ctx: Context,
    run: int,
    number: int,
    agent: spawn.AgentRun,
    decision: IterationDecision,
    state: st.State,
    quiet: int,
    figures: usage.Usage | None,
) -> None:
    """Iteration `number` (the run's `run`th) and what the run decided after it: kept
    in `ctx.records`, written to history, and said."""
    paths = ctx.store.paths
    entry = IterationRecord(
        run=run,
        iteration=number,
        exit_code=agent.exit_code,
        result=agent.describe(),
        duration=agent.duration,
        log=paths.display(ctx.log),
        timed_out=agent.timed_out,
        interrupted=agent.interrupted,
        decision=decision,
        tokens=figures.tokens if figures else None,
        cost=figures.cost if figures else None,
        sandbox=ctx.box.how if ctx.box is not None else None,
    )
    ctx.records.append(entry)
    met, total, done, steps = counts(state)
    event: Event = {
        "event": "run_iteration",
        **{k: v for k, v in entry.as_json().items() if k != "iteration"},
        "criteriaMet": met,
        "criteriaTotal": total,
        "stepsDone": done,
        "stepsTotal": steps,
        "noProgress": quiet,
    }
    if agent.stops:
        event["stops"] = agent.stops
    if agent.idle:
        event["idle"] = True
    ctx.note([event], state, number)
    parts = [
        f"{place(state, number)} {met}/{total} {noun(total, 'criterion')}",
        f"{done}/{steps} {noun(steps, 'step')}",
        format_duration(agent.duration),
        agent.describe(),
    ]
    if figures is not None:
        parts.insert(3, format_spent(figures.tokens, figures.cost))
    if agent.idle:
        parts.append(f"printed nothing for {ctx.plan.idle_timeout or 0:g}s")
    elif agent.timed_out:
        parts.append(f"timed out after {ctx.plan.timeout:g}s")
    if agent.interrupted:
        parts.append("interrupted")
    if decision == "continue" and quiet:
        parts.append(f"no progress ({quiet} of {state['stallLimit']})")
    ctx.report.line(" · ".join(parts))
