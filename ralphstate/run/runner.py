"""`ralphstate run`: a loop of fresh agent processes, with no knowledge of click.

Each iteration counts itself in the state, assembles the prompt from the files on
disk, runs the agent (`agentrun`), re-reads the state, verifies the criteria
(`bookkeeping.verify_criteria`, the one verification point) and decides
(`decide_iteration`): complete, paused (max iterations, stall, Ctrl-C, a budget, a
limit, ...), or go on. Every iteration and every decision is appended to
history.jsonl; the agent's output goes to `.loop/runs/NNNN.log`.

This module is the outline; each step it takes lives in a module of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
from dataclasses import dataclass

from ralphstate.core import clock, queries
from ralphstate.core import state as st
from ralphstate.core.errors import NoLoop, RalphstateError
from ralphstate.run import (
    agentpid,
    agentrun,
    argprompt,
    awake,
    bookkeeping,
    checkin,
    commondir,
    endings,
    graded,
    guards,
    hookwatch,
    limitwait,
    ownloop,
    progress,
    prompt,
    ratelimits,
    retries,
    runfiles,
    shellcmd,
    spawn,
    strict,
    usage,
)
from ralphstate.run.allowance import Allowance
from ralphstate.run.context import Context, Reporter
from ralphstate.run.decide_iteration import Checked, IterationFacts, Verdict, decide_iteration
from ralphstate.run.plan import Plan, check_trusted, resolve_argv, resolve_program, with_budget
from ralphstate.run.result import IterationDecision, Outcome
from ralphstate.sandbox import modes
from ralphstate.sandbox.modes import Box
from ralphstate.storage.loopdir.store import Store


def run(store: Store, plan: Plan, report: Reporter) -> Outcome:
    """Run the loop until it completes, pauses or fails; never raises RalphstateError
    once the first iteration has been recorded (it becomes the `error` outcome)."""
    state = store.load()
    if not state["criteria"]:
        raise RalphstateError(
            "the loop has no criteria, so a run could never tell that it is done;"
            ' add one with `ralphstate criteria add "NAME"`.'
        )
    if state["status"] == "cancelled":
        raise RalphstateError("the loop was cancelled; start a new one with `ralphstate init`.")
    if state["status"] == "complete":
        return Outcome("complete", None, [], state, 0.0)
    store = ownloop.LoopStore(store, state["loopId"])  # never another loop's
    bookkeeping.check_trusted(store, state)
    check_trusted(store, plan)
    argprompt.check(store, plan, state)
    argv = resolve_program(plan, store.paths.root)
    chain = [argv] + [
        resolve_argv(shellcmd.argv(other, plan.shell), store.paths.root) for other in plan.fallbacks
    ]
    box = _sandbox(store, plan, state, chain, report)
    runs = runfiles.prepare(store.paths)
    with runfiles.lock(store.paths):
        left = agentpid.still_running(runs)
        if left is not None:
            raise RalphstateError(
                f"the agent an earlier `ralphstate run` started (process {left}) is still"
                f" running; end it (kill -- -{left}) and run again."
            )
        with spawn.Interrupts() as interrupts:
            if plan.branch or plan.commit:
                from ralphstate.run import commits

                commits.prepare(store, plan, report)
            with awake.kept_awake(plan.keep_awake):
                context = Context(store, plan, report, interrupts, log=runs, box=box)
                outcome = _Run(context, chain).go()
            if plan.commit and outcome.state is not None and outcome.reason != "commit_failed":
                from ralphstate.run import commits

                ended = outcome.outcome + (f" ({outcome.reason})" if outcome.reason else "")
                commits.after_run(store, ended, outcome.summary()[0], report)
            return outcome


def _sandbox(
    store: Store, plan: Plan, state: st.State, chain: list[list[str]], report: Reporter
) -> Box | None:
    """The run's sandbox, started once on trial before anything else (docs/how-to/
    sandbox.md); RalphstateError, before the first iteration, when it cannot start."""
    mode = modes.chosen(plan.sandbox, plan.no_sandbox)
    if mode == modes.UNCONFINED or plan.network == "full":
        from ralphstate.loop.person import require_not_agent

        # Turning confinement off, or opening the host's network, is the person's alone.
        if mode == modes.UNCONFINED:
            require_not_agent("`ralphstate run --no-sandbox`")
        else:
            require_not_agent("`ralphstate run --network full`", modes.FULL_NETWORK)
    box = modes.prepare(mode, store.paths, list(state["guards"] or []), chain, plan.offline)
    box.chain, box.named = chain, list(plan.keep_env)
    modes.network(box, plan.network, list(plan.allow_host), chain, dict(os.environ))
    if box.mode == modes.UNCONFINED:
        report.line("sandbox: off; the agent runs unconfined, with all your user's rights.")
    else:
        report.line(f"sandbox: {box.how}; network: {box.network}")
    return box


@dataclass
class _Ended:
    """One iteration whose agent has ended, as the run learns about it."""

    run: int  # the run's count of it
    number: int  # the loop's
    agent: spawn.AgentRun
    figures: usage.Usage | None  # what the agent said it spent
    before: st.State  # the loop as the iteration started
    state: st.State  # the loop as last read
    facts: IterationFacts
    # The limit the agent stopped on, and when it was weighed.
    hit: ratelimits.Limit | None = None
    now: dt.datetime | None = None


class _Run:
    def __init__(self, ctx: Context, chain: list[list[str]]) -> None:
        self.ctx = ctx
        self.agents = agentrun.Chain(chain, ctx.plan.agents)
        self.breakers = guards.Breakers(ctx.plan.agent_errors, ctx.plan.step_retries)
        self.allowance = Allowance(ctx.plan)
        # Limits in a row, and what the previous iteration's failure was.
        self.attempts = 0
        self.previous: str | None = None
        self.notes = prompt.Notes(ctx.store)  # follows the history: each line read once
        # What the loop looked like after the last iteration, and how many in a row
        # left it as it was.
        self.seen: tuple[str, str | None] = ("", None)
        self.quiet = 0
        # The iteration counted in and not yet recorded: (the run's count, the loop's).
        self.open: tuple[int, int] | None = None

    def go(self) -> Outcome:
        """The run, to its ending: whatever ends it, ralphstate's error or one nobody
        foresaw, is recorded (`run_finished`) and pauses the loop with its reason."""
        try:
            return self._loop()
        except KeyboardInterrupt:
            return endings.finish(self.ctx, "paused", "user")
        except bookkeeping.Stopped as stop:
            return endings.stopped(self.ctx, stop.state)
        except NoLoop as exc:
            return endings.gone(self.ctx, exc)
        except RalphstateError as exc:
            endings.unfinished(self.ctx, self.open)
            return endings.failed(self.ctx, str(exc))
        except Exception as exc:  # noqa: BLE001 - a run never ends without saying why
            endings.unfinished(self.ctx, self.open)
            return endings.broke(self.ctx, exc)

    def _loop(self) -> Outcome:
        ctx = self.ctx
        if ctx.plan.limit <= 0:
            return endings.finish(ctx, "paused", "max_iterations")
        retries.start(ctx.store, ctx.store.load(), self.breakers)
        state = bookkeeping.begin(ctx, self.allowance)
        if not queries.unmet(state):
            state = bookkeeping.verify_criteria(ctx.store, state, ctx.report)
            state = graded.grade_if_done(ctx.store, state, ctx.report.line)
            if not queries.unmet(state):
                return endings.finish(ctx, "complete", None)
        self.seen = self._fingerprint(state)
        watch = hookwatch.HookWatch(ctx.store.paths)  # the agent's hooks as they are now
        run = 0
        while run < ctx.plan.limit:
            over = self.allowance.over(state)
            if over is not None:
                return endings.finish(ctx, "paused", "budget", over[1], over[0])
            gate_off = watch.broken()
            if gate_off is not None:
                return endings.failed(ctx, gate_off)
            run += 1
            after = self._iteration(run)
            if isinstance(after, Outcome):
                return after
            if after is None:  # a limit: the same iteration again, toward no cap
                run -= 1
                state = ctx.store.load()
            else:
                state = after
        raise AssertionError("unreachable: the last iteration decides")  # pragma: no cover

    def _iteration(self, run: int) -> Outcome | st.State | None:
        """One iteration: its ending, the loop after it when the run goes on, or None
        to run it again (a limit)."""
        ctx = self.ctx
        state = bookkeeping.start_iteration(ctx, run)
        self.open = (run, state["iteration"])
        text = agentrun.prompt_for(ctx, run, state, self.notes, self.previous)
        argv = with_budget(self.agents.argv, self.allowance.left(state, "cost"))
        common = commondir.where(ctx.store.paths.root)
        before = commondir.held(common)
        agent = self._run_agent(run, state, argv, text)
        said = commondir.put_back(common, before, state["iteration"])
        if said is not None:
            ctx.report.line(f"  {said}")
        figures = usage.read(ctx.log)
        for doubt in figures.doubted if figures else ():
            ctx.report.line(f"  {doubt}")
        for refused in ctx.box.refused() if ctx.box is not None else ():
            ctx.report.line(f"  {refused}")
        facts = IterationFacts(interrupted=bool(ctx.interrupts.count))
        ended = _Ended(run, state["iteration"], agent, figures, state, state, facts)
        verdict = decide_iteration(facts)
        if verdict is None:
            self._read_back(ended)
            verdict = decide_iteration(ended.facts)
        if verdict is None:
            self._check(ended)
            verdict = _decided(ended.facts)
        return self._act(ended, verdict)

    def _run_agent(self, run: int, state: st.State, argv: list[str], text: str) -> spawn.AgentRun:
        """The iteration's agent, stopped after --timeout or when what the duration
        budgets leave runs out, whichever comes first (docs/reference/run.md)."""
        ctx = self.ctx
        timeout, left = ctx.plan.timeout, self.allowance.left(state, "seconds")
        by_budget = left is not None and (timeout is None or left < timeout)
        if by_budget and left is not None:
            timeout = max(left, 0.001)
        agent = agentrun.run_agent(ctx, run, state, argv, text, timeout)
        if by_budget and agent.timed_out and not agent.idle:
            agent.timed_out, agent.out_of_budget = False, True
            ctx.report.line("  the duration budget ran out, so the agent was stopped")
        return agent

    def _read_back(self, ended: _Ended) -> None:
        """The loop as the agent left it: its task file and state re-read, and the
        limit the agent stopped on, if any."""
        ctx = self.ctx
        try:
            bookkeeping.tasks(ctx, ended.state)
            ended.state = ctx.store.load()
        except NoLoop:
            raise  # state.json deleted: the run ends `ended_outside`
        except RalphstateError as exc:
            ended.facts = dataclasses.replace(ended.facts, error=str(exc))
            return
        ctx.state = ended.state
        hit = ratelimits.recognise(
            usage.tail(ctx.log), ended.agent.exit_code, ended.figures, clock.now()
        )
        limit = None
        if hit is not None:
            ended.hit, ended.now = hit, clock.now()
            limit = dataclasses.replace(
                limitwait.weighed(hit, self.attempts + 1, ended.now),
                pause=ctx.plan.on_limit == "pause",
                fallback=self.agents.has_fallback(),
            )
        status = ended.state["status"]
        ended.facts = dataclasses.replace(ended.facts, status=status, limit=limit)

    def _check(self, ended: _Ended) -> None:
        """Verify the criteria, count the iteration's progress, failure and spending,
        and learn what the breakers and budgets say."""
        ctx, agent = self.ctx, ended.agent
        self.attempts = 0
        state = bookkeeping.verify_criteria(ctx.store, ended.state, ctx.report)
        state = graded.grade_if_done(ctx.store, state, ctx.report.line)
        now = self._fingerprint(state)
        progressed = now != self.seen
        self.quiet = 0 if progressed else self.quiet + 1
        self.seen = now
        failed = agent.exit_code != 0 or agent.timed_out
        failed = failed and not agent.interrupted and not agent.out_of_budget
        number = ended.number
        what = agentrun.failure(ctx, agent, ended.figures) if failed else agent.describe()
        timeout = ctx.plan.timeout
        self.previous = agentrun.failure_line(number, agent, timeout, what) if failed else None
        remaining = state["remainingSteps"]
        nxt = remaining[0] if remaining else None
        self.breakers.after(failed, progressed, what, nxt)
        retries.count(ctx.store, self.breakers)  # kept in the state, over runs
        failure = what if failed else None
        ended.state = ctx.state = bookkeeping.account(ctx, number, agent, ended.figures, failure)
        ended.facts = dataclasses.replace(ended.facts, checked=self._checked(ended))

    def _checked(self, ended: _Ended) -> Checked:
        state, breakers = ended.state, self.breakers
        return Checked(
            unmet=len(queries.unmet(state)),
            run=ended.run,
            run_max=self.ctx.plan.limit,
            iteration=state["iteration"],
            max_iterations=state["maxIterations"],
            quiet=self.quiet,
            stall_limit=state["stallLimit"],
            over=self.allowance.over(state),
            tripped=breakers.trip(),
            failures=breakers.failures,
            errors=tuple(breakers.errors),
            step=breakers.step,
            step_count=breakers.step_count,
            fallback=self.agents.has_fallback(),
            broken=strict.broken(self.ctx.plan.strict, ended.before, state),
            check_in=self.ctx.plan.check_in,
            finished=checkin.finished(ended.before, state),
        )

    def _act(self, ended: _Ended, verdict: Verdict) -> Outcome | st.State | None:
        """Do what the verdict says."""
        ctx = self.ctx
        if verdict.decision == "user":
            with contextlib.suppress(bookkeeping.Unrecorded):  # Ctrl-C: the person is there
                bookkeeping.account(ctx, ended.number, ended.agent, ended.figures, None)
            self._record(ended, "user", ended.before)
            return endings.finish(ctx, "paused", "user")
        if verdict.ending == "error":
            self._record(ended, "error", ended.before)
            raise RalphstateError(f"after iteration {ended.number}: {verdict.detail}")
        if verdict.ending == "stopped":
            self._record(ended, verdict.decision, ended.state)
            return endings.stopped(ctx, ended.state)
        if ended.hit is not None:
            return self._limited(ended, verdict)
        return self._conclude(ended, verdict)

    def _limited(self, ended: _Ended, verdict: Verdict) -> Outcome | None:
        """An iteration that stopped on a limit: it is recorded and uncounted; then the
        run moves to the next agent of the chain, pauses, or waits. Returns the run's
        ending, or None to try again."""
        ctx = self.ctx
        hit = ended.hit
        limit = ended.facts.limit
        assert hit is not None and limit is not None and ended.now is not None
        self.attempts = limit.attempts
        self._record(ended, verdict.decision, ended.state)
        self.previous = f"Iteration {ended.number} stopped on {limit.phrase}: {hit.message}"
        state = limitwait.uncount(ctx, ended.number, ended.agent, ended.figures, hit, verdict.wait)
        if verdict.switch:
            self.agents.fall_back(ctx, verdict.switch)
        elif verdict.wait is not None:  # the wait, against what the budgets leave now
            left = self.allowance.both_left(state, "seconds")
            limit = dataclasses.replace(limit, left=left)
            verdict = _decided(dataclasses.replace(ended.facts, limit=limit))
        if verdict.ending is not None:
            return endings.finish(ctx, "paused", verdict.reason, verdict.detail, verdict.over)
        if verdict.wait is not None:
            limitwait.wait_out(ctx, ended.number, hit, verdict.wait, ended.now)
        return None

    def _conclude(self, ended: _Ended, verdict: Verdict) -> Outcome | st.State:
        """After the checks: switch agents when told, commit the work (`--commit`),
        record the iteration, and end the run or go on."""
        ctx = self.ctx
        if verdict.switch:
            self.agents.fall_back(ctx, verdict.switch)
            self.breakers.reset_failures()
        if ctx.plan.commit and not self._committed(ended):
            checked = ended.facts.checked
            assert checked is not None
            failed = dataclasses.replace(checked, committed=False)
            verdict = _decided(dataclasses.replace(ended.facts, checked=failed))
        self._record(ended, verdict.decision, ended.state)
        if verdict.ending == "complete":
            return endings.finish(ctx, "complete", None)
        if verdict.ending == "paused":
            detail = verdict.detail
            if verdict.reason == "budget" and ended.agent.out_of_budget:
                detail = f"{detail}; iteration {ended.number} was stopped when it ran out"
            return endings.finish(ctx, "paused", verdict.reason, detail, verdict.over)
        return ended.state

    def _committed(self, ended: _Ended) -> bool:
        """`--commit`: the iteration's work committed; False (and an error kept) when
        the commit failed."""
        from ralphstate.run import commits

        ctx = self.ctx
        if commits.after_iteration(ctx.store, ended.number, ended.before, ended.state, ctx.report):
            return True
        bookkeeping.remember_error(ctx, ended.number, "commit failed")
        return False

    def _record(self, ended: _Ended, decision: IterationDecision, state: st.State) -> None:
        self.open = None
        progress.record(
            self.ctx,
            ended.run,
            ended.number,
            ended.agent,
            decision,
            state,
            self.quiet,
            ended.figures,
        )

    def _fingerprint(self, state: st.State) -> tuple[str, str | None]:
        return progress.fingerprint(self.ctx.store.paths, state)


def _decided(facts: IterationFacts) -> Verdict:
    """The verdict on facts that always decide (the loop read back, and a limit or the
    checks)."""
    verdict = decide_iteration(facts)
    assert verdict is not None, "the facts known so far decide"
    return verdict
