"""The agent of each iteration: which command of the chain runs (`--agent` given more
than once: the next one takes over when the one in use keeps failing or hits a usage
limit), the prompt it gets, and its process, whose output goes to the iteration's log
(`runs/NNNN.log`) and to the terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.ownership import ENV_RUNNER
from ralphstate.run import (
    agentoutput,
    agentpid,
    progress,
    prompt,
    runconfig,
    runfiles,
    spawn,
    usage,
)
from ralphstate.run.context import Context
from ralphstate.run.plan import Plan
from ralphstate.storage import lessons
from ralphstate.storage.store import Store


class Chain:
    """The agent commands to try in turn, and the one in use."""

    def __init__(self, chain: list[list[str]], commands: list[str]) -> None:
        self.chain, self.commands = chain, commands
        self.index = 0
        self.argv = chain[0]

    def has_fallback(self) -> bool:
        return self.index + 1 < len(self.chain)

    def fall_back(self, ctx: Context, why: str) -> bool:
        """Move to the next agent of the chain; False when there is none."""
        if not self.has_fallback():
            return False
        self.index += 1
        self.argv = self.chain[self.index]
        command = self.commands[self.index]
        ctx.report.line(f"  switching to the next agent, {command!r}: {why}")
        ctx.note([{"event": "agent_switched", "agent": command, "why": why}])
        return True


def run_agent(
    ctx: Context,
    run: int,
    state: st.State,
    argv: list[str],
    text: str,
    timeout: float | None = None,
) -> spawn.AgentRun:
    """Run the agent for the loop's iteration in `state` (the run's `run`th) with the
    prompt `text`, its output in a new log (`ctx.log`), stopped after `timeout` seconds
    (None: never). An error writing the log or the prompt file ends the run
    (RalphstateError; the run records the iteration's decision `error`)."""
    paths = ctx.store.paths
    ctx.report.line(progress.heading(state, run, ctx.plan.limit))
    problem = unpassable(text) if ctx.plan.prompt_mode == "arg" else None
    if problem is not None:  # the loop changed since the run began: it ends here
        raise RalphstateError(f"iteration {state['iteration']}: {_refusal(problem, [])}")
    env = dict(os.environ)
    env[ENV_RUNNER] = "1"
    runs = paths.dir / runfiles.RUNS_DIR
    ctx.log = runfiles.log_path(runs, state["iteration"])
    terminal = agentoutput.Quiet(ctx.report.output, paths.display(ctx.log))
    try:
        with open(ctx.log, "xb", opener=runfiles.private_opener) as log:
            common: dict[str, Any] = {
                "cwd": paths.root,
                "env": env,
                "log": log,
                "echo": terminal,
                "interrupts": ctx.interrupts,
                "timeout": timeout,
                "grace": ctx.plan.grace,
                "idle_timeout": ctx.plan.idle_timeout,
                "started_as": lambda pid: agentpid.record(runs, pid),
            }
            try:
                done = _spawn(ctx.plan.prompt_mode, argv, text, common)
            finally:
                terminal.close()
        if done.exit_code != 0 or done.timed_out:
            runfiles.mark_failed(ctx.log)
        runfiles.prune(runs, ctx.plan.keep_logs)
        agentpid.still_running(runs)  # forgets the agent, which has ended
        return done
    except OSError as exc:  # the log or the prompt file: the run ends as an error
        reason = exc.strerror or type(exc).__name__
        shown = paths.display(Path(exc.filename)) if exc.filename else "a file"
        message = f"iteration {state['iteration']}: could not write {shown}: {reason}."
        raise RalphstateError(message) from None


def _spawn(mode: str, argv: list[str], text: str, common: dict[str, Any]) -> spawn.AgentRun:
    """The agent gets its prompt in a file (`{prompt_file}` in its command), as its
    last argument, or on stdin."""
    if mode == "file":
        with spawn.prompt_file(text) as path:
            named = [a.replace(runconfig.PROMPT_FILE, str(path)) for a in argv]
            return spawn.run_agent(named, stdin_data=None, **common)
    if mode == "arg":
        return spawn.run_agent([*argv, text], stdin_data=None, **common)
    return spawn.run_agent(argv, stdin_data=text.encode("utf-8"), **common)


def prompt_for(
    ctx: Context,
    run: int,
    state: st.State,
    notes: prompt.Notes,
    previous: str | None,
) -> str:
    """The iteration's prompt, assembled from the files on disk."""
    paths = ctx.store.paths
    return prompt.assemble(
        state,
        iteration=run,
        limit=ctx.plan.limit,
        notes=notes.read(state),
        context=prompt.read_context(ctx.plan.context, paths.root),
        previous=previous,
        lessons=lessons.read(paths.dir),
        commits=ctx.plan.commit,
    )


def check_passable(store: Store, plan: Plan, state: st.State) -> None:
    """`--prompt-mode arg`: RalphstateError, before the first iteration, when the prompt
    could not be passed as an argument (a NUL in it, or too long for one)."""
    if plan.prompt_mode != "arg":
        return
    context = prompt.read_context(plan.context, store.paths.root)
    found = lessons.read(store.paths.dir)
    text = prompt.assemble(
        state,
        iteration=1,
        limit=plan.limit,
        notes=prompt.recent_notes(store, state),
        context=context,
        lessons=found,
        commits=plan.commit,
    )
    problem = unpassable(text)
    if problem is not None:
        sources = [(f"the context file {f.name}", f.text) for f in context]
        sources.append((f".loop/{lessons.LESSONS}", found or ""))
        raise RalphstateError(_refusal(problem, sources))


def unpassable(text: str) -> str | None:
    """Why `text` cannot be one argument of a process (None: it can): a NUL ends an
    argument, and one argument holds at most `limits.RUN_ARG_PROMPT_BYTES` (Windows:
    its whole command line, `limits.RUN_ARG_PROMPT_CHARS_WINDOWS` characters)."""
    if "\0" in text:
        return "nul"
    if sys.platform == "win32":
        size, most, unit = len(text), limits.RUN_ARG_PROMPT_CHARS_WINDOWS, "characters"
    else:
        size, most = len(text.encode("utf-8", "surrogateescape")), limits.RUN_ARG_PROMPT_BYTES
        unit = "bytes"
    if size > most:
        return f"it is {size:,} {unit}, more than the {most:,} one argument may hold"
    return None


def _refusal(problem: str, sources: list[tuple[str, str]]) -> str:
    """The sentence that refuses a prompt `unpassable` found `problem` with, naming the
    first of `sources` (name, text) that holds the NUL."""
    if problem != "nul":
        fix = "use --prompt-mode stdin or file, or give fewer --context files"
        return f"--prompt-mode arg cannot pass the prompt as an argument: {problem}; {fix}."
    where = next((name for name, text in sources if "\0" in text), None)
    if where is None:
        held = "it holds a NUL character (the loop's spec, criteria, steps or notes); remove it"
    else:
        held = f"{where} holds a NUL character (is it UTF-16?); save it as UTF-8"
    return (
        f"--prompt-mode arg cannot pass the prompt as an argument: {held},"
        " or use --prompt-mode stdin or file."
    )


def failure_line(number: int, agent: spawn.AgentRun, timeout: float | None, what: str) -> str:
    """How the previous iteration failed, in one line for the next prompt; `what` is
    the failure as `failure` names it."""
    if agent.idle:
        return f"Iteration {number} printed nothing for too long and was stopped (idle)."
    if agent.timed_out:
        return f"Iteration {number} timed out after {timeout or 0:g}s and was stopped."
    return f"Iteration {number} ended with {what} (a crash or an error)."


def failure(ctx: Context, agent: spawn.AgentRun, figures: usage.Usage | None) -> str:
    """A failed iteration as the run names it: `exit 1`, with the agent's own last
    words quoted when it ended by itself (`exit 1: "cannot be used as root"`)."""
    what = agent.describe()
    if agent.timed_out or agent.interrupted or agent.exit_code < 0:
        return what
    words = agentoutput.failure(ctx.log, figures)
    return f"{what}: {words}" if words else what
