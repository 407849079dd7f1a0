"""`ralphstate run`: a loop of fresh agent processes, with no knowledge of click.

Each iteration counts itself in the state, assembles the prompt from the files on
disk, runs the agent (`spawn.run_agent`), re-reads the state, verifies the criteria
(`verify_criteria`, the one verification point) and decides: complete, paused
(max iterations, stall, Ctrl-C), or go on. Every iteration and every decision is
appended to history.jsonl; the agent's output goes to `.loop/runs/NNNN.log`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, Protocol

from ralphstate.core import budgets, clock, fields, queries
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.ownership import ENV_RUNNER
from ralphstate.core.render import clip, quote
from ralphstate.core.text import noun, visible
from ralphstate.run import agentpid, awake, guards, notifier, prompt, ratelimits, spawn, usage
from ralphstate.run import config as runconfig
from ralphstate.run.plan import Plan, check_trusted, resolve_argv, resolve_program, with_budget
from ralphstate.run.result import (
    IterationDecision,
    IterationRecord,
    Outcome,
    RunOutcome,
    counts,
    format_duration,
    format_spent,
)
from ralphstate.storage import fsio, lessons, locking, registry
from ralphstate.storage.paths import LoopPaths, check_safe
from ralphstate.storage.store import Event, Store, append_history

RUNS_DIR = "runs"
RUN_LOCK = "run.lock"


class Reporter(Protocol):
    """Where the run speaks: progress lines, and the agent's output as it comes."""

    def line(self, text: str) -> None: ...

    def output(self, data: bytes) -> None: ...


# -- the verification point ----------------------------------------------------------


def verify_criteria(store: Store, state: st.State, report: Reporter) -> st.State:
    """The run's one verification point, after every iteration (and before the
    first, when every criterion already reads as met).

    A criterion with a check (`checks`) is verified by running it: `verify.run_checks`
    records pass or fail in `criteriaStatus` and `evidence`. A criterion without one
    counts as verified when `criteriaStatus` says so. Returns the state afterwards.
    """
    if not state["checks"]:
        return state
    from ralphstate.verify import execute as verify

    def said(result: Any) -> None:
        seconds = format_duration(result.duration_ms / 1000)
        report.line(
            f"  check {visible(quote(result.criterion))}: {result.result}"
            f" ({visible(result.summary)}, {seconds})"
        )

    verify.run_checks(store, by="run", progress=said)
    return store.load()


def _check_trusted(store: Store, state: st.State) -> None:
    if not state["checks"]:
        return
    from ralphstate.storage import trust
    from ralphstate.verify import execute as verify

    if not trust.is_trusted(store.paths, state):
        raise RalphstateError(verify.untrusted_message(store))


# -- the loop ----------------------------------------------------------------------


class _Stopped(Exception):
    """The loop left `in_progress` from outside the run (paused, cancelled, complete)."""

    def __init__(self, state: st.State) -> None:
        super().__init__(state["status"])
        self.state = state


def git_head(root: Path) -> str | None:
    """The commit HEAD names, or None outside a git repository (or without git)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    head = done.stdout.decode("ascii", "replace").strip()
    return head if done.returncode == 0 and head else None


@contextlib.contextmanager
def _run_lock(paths: LoopPaths) -> Iterator[None]:
    held = locking.hold(paths.dir / RUN_LOCK, 0)
    try:
        held.__enter__()
    except locking.Held:
        raise RalphstateError(
            "another `ralphstate run` is already driving this loop"
            f" ({paths.display(paths.dir / RUN_LOCK)} is held)."
        ) from None
    except OSError as exc:
        raise RalphstateError(
            f"could not lock {paths.display(paths.dir / RUN_LOCK)}: {exc}."
        ) from None
    try:
        yield
    finally:
        held.__exit__(None, None, None)


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
    _check_trusted(store, state)
    check_trusted(store, plan)
    argv = resolve_program(plan, store.paths.root)
    chain = [argv] + [
        resolve_argv(spawn.split_command(other), store.paths.root) for other in plan.fallbacks
    ]
    runs = store.paths.dir / RUNS_DIR
    check_safe(store.paths, runs)
    try:
        fsio.makedirs(runs)  # never world-writable, whatever the umask
        ignore = runs / ".gitignore"
        if not ignore.exists():  # the agent commits its work; its logs stay out of git
            fsio.atomic_write(
                ignore, b"# Written by ralphstate run: agent logs stay out of git.\n*\n"
            )
    except OSError as exc:
        raise RalphstateError(f"could not create {store.paths.display(runs)}: {exc}.") from None
    from ralphstate.loop.gitignore import ignore_local_files

    ignore_local_files(store.paths)  # a .gitignore from before run.lock was listed
    with _run_lock(store.paths):
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
                return _Run(store, plan, chain, report, interrupts).go()


class _Run:
    def __init__(
        self,
        store: Store,
        plan: Plan,
        chain: list[list[str]],
        report: Reporter,
        interrupts: spawn.Interrupts,
    ) -> None:
        self.store, self.plan, self.report = store, plan, report
        # The agents to try in turn, and the one in use.
        self.chain, self.agent_index = chain, 0
        self.argv = chain[0]
        self.breakers = guards.Breakers(plan.agent_errors, plan.step_retries)
        # Limit retries in a row, and what the previous iteration's failure was.
        self.attempts = 0
        self.previous: str | None = None
        self.detail: str | None = None
        self.interrupts = interrupts
        self.records: list[IterationRecord] = []
        self.notes = prompt.Notes(store)  # follows the history: each line read once
        self.started = time.monotonic()
        self.state: st.State | None = None
        self.log = store.paths.dir / RUNS_DIR
        # This run's own budget, measured from what the loop's `usage` was when it began.
        self.budget: budgets.Budget = {
            "cost": plan.max_cost,
            "tokens": plan.max_tokens,
            "seconds": plan.max_duration,
        }
        self.baseline: fields.Usage = {"tokens": 0, "cost": 0.0, "seconds": 0.0}
        self.over: str | None = None  # whose budget was reached: budgets.LOOPS or budgets.RUNS

    # -- the outline --

    def go(self) -> Outcome:
        try:
            return self._loop()
        except KeyboardInterrupt:
            return self._finish("paused", "user")
        except _Stopped as stop:
            return self._stopped(stop.state)
        except RalphstateError as exc:
            return self._failed(str(exc))

    def _loop(self) -> Outcome:
        if self.plan.limit <= 0:
            return self._finish("paused", "max_iterations")
        state = self._begin()
        if not queries.unmet(state):
            state = verify_criteria(self.store, state, self.report)
            if not queries.unmet(state):
                return self._finish("complete", None)
        seen = self._fingerprint(state)
        quiet = 0
        run = 0
        while run < self.plan.limit:
            over = self._over_budget(state)
            if over is not None:
                return self._finish("paused", "budget", over)
            run += 1
            state = before = self._start_iteration(run)
            agent = self._agent(run, state)
            number = state["iteration"]
            figures = usage.read(self.log)
            if self.interrupts.count:
                self._account(number, agent, figures, None)
                self._record(run, number, agent, "user", state, quiet, figures)
                return self._finish("paused", "user")
            try:
                self._tasks(state)
                state = self.store.load()
            except RalphstateError as exc:
                self._record(run, number, agent, "error", state, quiet, figures)
                raise RalphstateError(f"after iteration {number}: {exc}") from None
            self.state = state
            if state["status"] != "in_progress":
                self._record(run, number, agent, state["status"], state, quiet, figures)
                raise _Stopped(state)
            hit = ratelimits.recognise(usage.tail(self.log), agent.exit_code, figures, clock.now())
            if hit is not None:
                ending = self._limited(run, number, agent, state, quiet, figures, hit)
                if ending is not None:
                    return ending
                run -= 1  # the same iteration again: it counts toward no cap
                state = self.store.load()
                continue
            self.attempts = 0
            state = verify_criteria(self.store, state, self.report)
            now = self._fingerprint(state)
            progressed = now != seen
            quiet = 0 if progressed else quiet + 1
            seen = now
            failed = (agent.exit_code != 0 or agent.timed_out) and not agent.interrupted
            self.previous = _failure_line(number, agent, self.plan.timeout) if failed else None
            remaining = state["remainingSteps"]
            nxt = remaining[0] if remaining else None
            self.breakers.after(failed, progressed, agent.describe(), nxt)
            state = self._account(number, agent, figures, agent.describe() if failed else None)
            self.state = state
            decision, detail = self._decide(run, state, quiet)
            if self.plan.commit:
                from ralphstate.run import commits

                if not commits.after_iteration(self.store, number, before, state, self.report):
                    self._remember_error(number, "commit failed", "")
                    decision, detail = "commit_failed", None
            self._record(run, number, agent, decision, state, quiet, figures)
            if decision == "complete":
                return self._finish("complete", None)
            if decision != "continue":
                return self._finish("paused", decision, detail)
        raise AssertionError("unreachable: the last iteration decides")  # pragma: no cover

    def _decide(
        self, run: int, state: st.State, quiet: int
    ) -> tuple[IterationDecision, str | None]:
        """What the run does after an iteration, and what the reason is about."""
        tripped = self.breakers.trip()
        if tripped == "agent_errors":
            why = f"it failed {self.breakers.failures} iterations in a row"
            if self._fall_back(why):
                self.breakers.reset_failures()
                tripped = None
        if not queries.unmet(state):
            return "complete", None
        if run >= self.plan.limit:  # the run's own --max, or the loop's cap
            capped = state["iteration"] >= state["maxIterations"]
            return ("max_iterations" if capped else "run_max"), None
        over = self._over_budget(state)
        if over is not None:
            return "budget", over
        if tripped == "agent_errors":
            return "agent_errors", "; ".join(self.breakers.errors)
        if tripped == "step_retries":
            step = quote(clip(self.breakers.step or "", 80))
            return "step_retries", f"{step} stayed next for {self.breakers.step_count} iterations"
        if quiet >= state["stallLimit"]:
            return "stall", None
        return "continue", None

    def _over_budget(self, state: st.State) -> str | None:
        """The budget reached, the loop's or this run's, as a person reads it; None
        when neither is. The loop's is named first: another run would meet it too."""
        over = budgets.over_budget(state)
        self.over = budgets.LOOPS
        if over is None:
            over = budgets.reached(self._used(state), self.budget, budgets.RUNS)
            self.over = budgets.RUNS
        if over is None:
            self.over = None
        return over

    def _used(self, state: st.State) -> fields.Usage:
        """What this run has spent so far."""
        return budgets.used_since(budgets.spent(state), self.baseline)

    def _left(self, state: st.State, key: Literal["cost", "tokens", "seconds"]) -> float | None:
        """The smaller of what the loop's budget and this run's leave of one figure."""
        both = (
            budgets.left(budgets.spent(state), budgets.loop_budget(state), key),
            budgets.left(self._used(state), self.budget, key),
        )
        given = [value for value in both if value is not None]
        return min(given) if given else None

    def _limited(
        self,
        run: int,
        number: int,
        agent: spawn.AgentRun,
        state: st.State,
        quiet: int,
        figures: usage.Usage | None,
        hit: ratelimits.Limit,
    ) -> Outcome | None:
        """An iteration that stopped on a limit: it is recorded and uncounted; then the
        run moves to the next agent of the chain (a usage limit), waits (`--on-limit
        wait`) or pauses. Returns the run's ending, or None to try again."""
        self.attempts += 1
        now = clock.now()
        wait = ratelimits.wait_for(hit, self.attempts, now)
        kind = hit.kind.replace("_", " ")
        what = ratelimits.PHRASES[hit.kind]
        event: Event = {"event": "limit", "kind": hit.kind, "message": hit.message}
        if hit.resets_at is not None:
            event["resetsAt"] = hit.resets_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        switch = hit.kind == "usage_limit" and self._has_fallback()
        pause = self.plan.on_limit == "pause" or wait is None
        if not switch and not pause and self.attempts > guards.LIMIT_ATTEMPTS:
            pause = True
        decision: IterationDecision = "limit" if pause and not switch else "retry"
        self._record(run, number, agent, decision, state, quiet, figures)
        self.previous = f"Iteration {number} stopped on {what}: {hit.message}"

        def uncount(current: st.State, events: list[Event]) -> st.State:
            if current["iteration"] == number:
                current["iteration"] -= 1
            budgets.add_usage(
                current,
                tokens=figures.tokens if figures else 0,
                cost=(figures.cost or 0.0) if figures else 0.0,
                seconds=agent.duration,
            )
            message = f"agent hit {what}: {hit.message}"
            st.add_error(current, message, at=clock.now_iso(), run=True)
            current["errors"][-1]["iteration"] = number
            events.append({**event, "wait": None if pause or switch else round(wait or 0, 1)})
            return current

        state = self.store.update(uncount)
        self.state = state
        self.report.line(f"  {kind}: {clip(hit.message, 200)}")
        if switch:
            self._fall_back(f"it hit {what}")
            return None
        if pause:
            return self._finish("paused", "limit", f"{kind}: {clip(hit.message, 200)}")
        assert wait is not None
        for whose, left in (
            (
                budgets.LOOPS,
                budgets.left(budgets.spent(state), budgets.loop_budget(state), "seconds"),
            ),
            (budgets.RUNS, budgets.left(self._used(state), self.budget, "seconds")),
        ):
            if left is not None and wait >= left:
                self.over = whose
                why = f"waiting out {what} would pass {whose} duration budget"
                return self._finish("paused", "budget", why)
        self._notify(
            "limit",
            f"ralphstate: the agent hit {what}; waiting, then iteration {number} again",
            limit=hit.kind,
            message=hit.message,
            resetsAt=event.get("resetsAt"),
        )
        target = now + dt.timedelta(seconds=wait)
        started = clock.now()
        guards.until(target, self.report.line, kind)
        waited = (clock.now() - started).total_seconds()

        def spend(current: st.State, events: list[Event]) -> None:
            budgets.add_usage(current, seconds=waited)

        with contextlib.suppress(RalphstateError):
            self.store.update(spend)
        return None

    def _has_fallback(self) -> bool:
        return self.agent_index + 1 < len(self.chain)

    def _fall_back(self, why: str) -> bool:
        """Move to the next agent of the chain; False when there is none."""
        if not self._has_fallback():
            return False
        self.agent_index += 1
        self.argv = self.chain[self.agent_index]
        command = self.plan.agents[self.agent_index]
        self.report.line(f"  switching to the next agent, {command!r}: {why}")
        with contextlib.suppress(RalphstateError):
            append_history(
                self.store.paths.history,
                [{"event": "agent_switched", "agent": command, "why": why}],
                self._iteration(),
                loop_id=self._loop_id(),
            )
        return True

    # -- the steps --

    def _begin(self) -> st.State:
        plan = self.plan

        def change(state: st.State, events: list[Event]) -> st.State:
            if state["status"] == "paused":
                events.append({"event": "resumed", "by": "run", "from": state["pauseReason"]})
                state["status"], state["pauseReason"] = "in_progress", None
            elif state["status"] != "in_progress":
                raise _Stopped(state)
            if plan.set_max:  # this run's --max: the loop's cap grows to fit it, never shrinks
                state["maxIterations"] = max(
                    state["maxIterations"], state["iteration"] + plan.limit
                )
            if not state["startedAt"]:  # running it here adopts it: the registry needs it
                state["startedAt"] = clock.now_iso()
            started: Event = {
                "event": "run_started",
                "agent": plan.agent,
                "promptMode": plan.prompt_mode,
                "limit": plan.limit,
                "timeout": plan.timeout,
                "maxIterations": state["maxIterations"],
                "pid": os.getpid(),
            }
            # This run's budget, and the loop's (docs/run.md, "Budgets").
            for key, budget in (
                ("budget", self.budget),
                ("loopBudget", budgets.loop_budget(state)),
            ):
                given = {k: v for k, v in budget.items() if v is not None}
                if given:
                    started[key] = given
            if plan.fallbacks:
                started["fallbacks"] = plan.fallbacks
            events.append(started)
            return state

        state = self.store.update(change)
        with contextlib.suppress(OSError, RalphstateError):
            registry.record(self.store.paths, state)  # running it here is adopting it
        self.state = state
        self.baseline = budgets.spent(state)
        return state

    def _tasks(self, state: st.State | None) -> None:
        """Re-read the loop's task file, if it has one, into its steps, before and after
        each iteration; one that cannot be read leaves the steps as last read, and says so."""
        if state is None or not state["tasksFile"]:
            return
        from ralphstate.loop import checklist, taskfile

        try:
            checklist.tasks_refresh(self.store)
        except taskfile.TaskFileError as exc:
            self.report.line(f"{exc} The steps are those last read from it.")

    def _start_iteration(self, run: int) -> st.State:
        self._tasks(self.state)

        def change(state: st.State, events: list[Event]) -> st.State:
            if state["status"] != "in_progress":
                raise _Stopped(state)
            state["iteration"] += 1
            events.append({"event": "iteration_started", "run": run, "of": self.plan.limit})
            return state

        state = self.store.update(change)
        self.state = state
        return state

    def _agent(self, run: int, state: st.State) -> spawn.AgentRun:
        paths = self.store.paths
        text = prompt.assemble(
            state,
            iteration=run,
            limit=self.plan.limit,
            notes=self.notes.read(state),
            context=prompt.read_context(self.plan.context, paths.root),
            previous=self.previous,
            lessons=lessons.read(paths.dir),
            commits=self.plan.commit,
        )
        argv_now = with_budget(self.argv, self._left(state, "cost"))
        remaining, unmet = state["remainingSteps"], queries.unmet(state)
        if remaining:
            nxt = f"next step: {visible(clip(remaining[0], 80))}"
        else:
            nxt = f"next criterion: {visible(clip(unmet[0], 80))}" if unmet else "checking the work"
        self.report.line(f"{_place(state)} this run: {run} of {self.plan.limit} · {nxt}")
        env = dict(os.environ)
        env[ENV_RUNNER] = "1"
        runs = paths.dir / RUNS_DIR
        self.log = _log_path(runs, state["iteration"])
        try:
            with open(self.log, "xb", opener=_private_opener) as log:
                common: dict[str, Any] = {
                    "cwd": paths.root,
                    "env": env,
                    "log": log,
                    "echo": self.report.output,
                    "interrupts": self.interrupts,
                    "timeout": self.plan.timeout,
                    "grace": self.plan.grace,
                    "idle_timeout": self.plan.idle_timeout,
                    "started_as": lambda pid: agentpid.record(runs, pid),
                }
                mode = self.plan.prompt_mode
                if mode == "file":
                    with spawn.prompt_file(text) as path:
                        argv = [a.replace(runconfig.PROMPT_FILE, str(path)) for a in argv_now]
                        done = spawn.run_agent(argv, stdin_data=None, **common)
                elif mode == "arg":
                    done = spawn.run_agent([*argv_now, text], stdin_data=None, **common)
                else:
                    done = spawn.run_agent(argv_now, stdin_data=text.encode("utf-8"), **common)
            agentpid.still_running(runs)  # forgets the agent, which has ended
            return done
        except OSError as exc:  # the log or the prompt file: the run ends as an error
            reason = exc.strerror or type(exc).__name__
            shown = paths.display(Path(exc.filename)) if exc.filename else "a file"
            message = f"iteration {state['iteration']}: could not write {shown}: {reason}."
            event: Event = {"event": "run_iteration", "run": run, "decision": "error"}
            with contextlib.suppress(RalphstateError):  # the iteration it had started
                append_history(paths.history, [event], state["iteration"], loop_id=state["loopId"])
            raise RalphstateError(message) from None

    def _fingerprint(self, state: st.State) -> tuple[str, str | None]:
        return st.progress(state), git_head(self.store.paths.root)

    def _record(
        self,
        run: int,
        number: int,
        agent: spawn.AgentRun,
        decision: IterationDecision,
        state: st.State,
        quiet: int,
        figures: usage.Usage | None,
    ) -> None:
        paths = self.store.paths
        record = IterationRecord(
            run=run,
            iteration=number,
            exit_code=agent.exit_code,
            result=agent.describe(),
            duration=agent.duration,
            log=paths.display(self.log),
            timed_out=agent.timed_out,
            interrupted=agent.interrupted,
            decision=decision,
            tokens=figures.tokens if figures else None,
            cost=figures.cost if figures else None,
        )
        self.records.append(record)
        met, total, done, steps = counts(state)
        event: Event = {
            "event": "run_iteration",
            **{k: v for k, v in record.as_json().items() if k != "iteration"},
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
        with contextlib.suppress(RalphstateError):
            append_history(paths.history, [event], number, loop_id=state["loopId"])
        parts = [
            f"{_place(state, number)} {met}/{total} {noun(total, 'criterion')}",
            f"{done}/{steps} {noun(steps, 'step')}",
            format_duration(agent.duration),
            agent.describe(),
        ]
        if figures is not None:
            parts.insert(3, format_spent(figures.tokens, figures.cost))
        if agent.idle:
            parts.append(f"printed nothing for {self.plan.idle_timeout or 0:g}s")
        elif agent.timed_out:
            parts.append(f"timed out after {self.plan.timeout:g}s")
        if agent.interrupted:
            parts.append("interrupted")
        if decision == "continue" and quiet:
            parts.append(f"no progress ({quiet} of {state['stallLimit']})")
        self.report.line(" · ".join(parts))

    def _remember_error(self, number: int, what: str, prefix: str = "agent ") -> None:
        """A failed iteration goes into the state's bounded `errors` list."""

        def change(current: st.State, events: list[Event]) -> None:
            st.add_error(current, f"{prefix}{what}", at=clock.now_iso(), run=True)
            current["errors"][-1]["iteration"] = number

        with contextlib.suppress(RalphstateError):
            self.store.update(change)

    def _account(
        self,
        number: int,
        agent: spawn.AgentRun,
        figures: usage.Usage | None,
        failure: str | None,
    ) -> st.State:
        """What the iteration spent goes into the loop's `usage`; a failed iteration
        into the state's bounded `errors` list. Returns the state afterwards."""

        def change(current: st.State, events: list[Event]) -> st.State:
            budgets.add_usage(
                current,
                tokens=figures.tokens if figures else 0,
                cost=(figures.cost or 0.0) if figures else 0.0,
                seconds=agent.duration,
            )
            if failure is not None:
                st.add_error(current, f"agent {failure}", at=clock.now_iso(), run=True)
                current["errors"][-1]["iteration"] = number
            return current

        try:
            return self.store.update(change)
        except RalphstateError:
            return self.state if self.state is not None else self.store.load()

    # -- the endings --

    def _finished(self, outcome: RunOutcome, **details: object) -> Event:
        """The `run_finished` history event, however the run ended."""
        return {
            "event": "run_finished",
            "outcome": outcome,
            **details,
            "iterations": len(self.records),
            "duration": round(time.monotonic() - self.started, 3),
        }

    def _finish(
        self, outcome: RunOutcome, reason: str | None, detail: str | None = None
    ) -> Outcome:
        """Write the ending into the state and history; a second Ctrl-C cuts it short."""
        details = self._finished(outcome, reason=reason)
        if detail:
            details["detail"] = detail
        self.detail = detail
        if self.interrupts.first is not None:
            details["signal"] = self.interrupts.first

        def change(state: st.State, events: list[Event]) -> st.State:
            if outcome == "complete":
                state["status"], state["pauseReason"] = "complete", None
            elif state["status"] == "in_progress":
                state["status"], state["pauseReason"] = "paused", reason
            events.append(details)
            return state

        try:
            self.state = self.store.update(change)
        except RalphstateError:
            with contextlib.suppress(RalphstateError):
                append_history(
                    self.store.paths.history, [details], self._iteration(), loop_id=self._loop_id()
                )
        return self._outcome(outcome, reason)

    def _stopped(self, state: st.State) -> Outcome:
        """The loop was paused, cancelled or completed from outside the run."""
        self.state = state
        status = state["status"]
        outcomes: dict[str, RunOutcome] = {
            "paused": "paused",
            "cancelled": "cancelled",
            "complete": "complete",
        }
        outcome = outcomes[status]
        reason = state["pauseReason"] if status == "paused" else None
        if queries.is_blocked(reason):
            self.detail = (reason or "")[len(queries.BLOCKED) + 1 :].strip() or None
            reason = queries.BLOCKED
        event = self._finished(outcome, reason=reason, by="outside")
        with contextlib.suppress(RalphstateError):
            append_history(
                self.store.paths.history, [event], state["iteration"], loop_id=state["loopId"]
            )
        return self._outcome(outcome, reason)

    def _failed(self, message: str) -> Outcome:
        """The run broke: say so in history and pause the loop (when its file can still
        be written), so no hook keeps a session on a loop whose run stopped."""
        event = self._finished("error", error=message)
        reason = clip(f"ralphstate run stopped: {message}", 200)

        def change(state: st.State, events: list[Event]) -> None:
            if state["status"] == "in_progress":
                state["status"], state["pauseReason"] = "paused", reason
            events.append(event)

        try:
            self.store.update(change)
        except RalphstateError:
            with contextlib.suppress(RalphstateError):
                append_history(
                    self.store.paths.history, [event], self._iteration(), loop_id=self._loop_id()
                )
        return self._outcome("error", None, message)

    def _iteration(self) -> int:
        return self.state["iteration"] if self.state is not None else 0

    def _loop_id(self) -> str | None:
        return self.state["loopId"] if self.state is not None else None

    def _outcome(
        self, outcome: RunOutcome, reason: str | None, error: str | None = None
    ) -> Outcome:
        if outcome != "error" or self.state is None:
            with contextlib.suppress(RalphstateError):
                self.state = self.store.load()
        ended = Outcome(
            outcome,
            reason,
            self.records,
            self.state,
            time.monotonic() - self.started,
            error,
            self.detail,
            self.over if reason == "budget" else None,
        )
        if reason != "user":  # Ctrl-C: the person is there
            kind = {"complete": "complete", "error": "error"}.get(outcome, "pause")
            if reason in ("budget", "limit", "agent_errors"):
                kind = {"agent_errors": "error"}.get(reason, reason)
            self._notify(kind, ended.summary()[0], outcome=outcome, reason=reason, error=error)
        return ended

    def _notify(self, kind: str, summary: str, **details: object) -> None:
        """Tell the person's notifier (`notify`), never stopping or delaying the run
        beyond its bound."""
        if not self.plan.notify:
            return
        state = self.state
        event: dict[str, object] = {
            "event": kind,
            **{k: v for k, v in details.items() if v is not None},
            "project": str(self.store.paths.root),
            "iterations": len(self.records),
        }
        if self.detail:
            event["detail"] = self.detail
        if state is not None:
            met, total, _, _ = counts(state)
            event.update(
                spec=clip(state["spec"], 200),
                iteration=state["iteration"],
                criteria={"met": met, "total": total},
                usage=budgets.spent(state),
            )
        notifier.send(
            self.plan.notify, event, summary, self.report.line, str(self.store.paths.root)
        )


def _place(state: st.State, number: int | None = None) -> str:
    """`[5/20]`: the loop's iteration (`number`, or the state's) and its cap, as
    `ralphstate status` shows them; the run's own count is said beside it."""
    return f"[{state['iteration'] if number is None else number}/{state['maxIterations']}]"


def _private_opener(path: str, flags: int) -> int:
    """Create a log with at most `fsio.FILE_MODE` (open's default, 0666, would leave it
    world-writable under a umask of 0)."""
    return os.open(path, flags, fsio.FILE_MODE)


def _log_path(runs: Path, number: int) -> Path:
    """`NNNN.log`, or `NNNN.2.log` when an earlier loop left one by that name."""
    path = runs / f"{number:04d}.log"
    n = 1
    while path.exists():
        n += 1
        path = runs / f"{number:04d}.{n}.log"
    return path


def _failure_line(number: int, agent: spawn.AgentRun, timeout: float | None) -> str:
    """How the previous iteration failed, in one line for the next prompt."""
    if agent.idle:
        return f"Iteration {number} printed nothing for too long and was stopped (idle)."
    if agent.timed_out:
        return f"Iteration {number} timed out after {timeout or 0:g}s and was stopped."
    return f"Iteration {number} ended with {agent.describe()} (a crash or an error)."
