"""The agent of each iteration: which command of the chain runs (`--agent` given more
than once: the next one takes over when the one in use keeps failing or hits a usage
limit), the prompt it gets, and its process, whose output goes to the iteration's log
(`runs/NNNN.log`) and to the terminal."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.ownership import ENV_RUNNER
from ralphstate.run import (
    agentoutput,
    agentpid,
    argprompt,
    progress,
    prompt,
    runconfig,
    runfiles,
    spawn,
    usage,
)
from ralphstate.run.context import Context
from ralphstate.sandbox.modes import Box
from ralphstate.storage.loopdir import lessons


class Chain:
    """The agent commands to try in turn, and the one in use."""

    def __init__(self, chain: list[list[str]], commands: list[str]) -> None:
        self.chain = chain
        self.commands = commands
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
    refused = argprompt.refusal(ctx.store, ctx.plan, text)
    if refused is not None:  # the loop changed since the run began: it ends here
        raise RalphstateError(f"iteration {state['iteration']}: {refused}")
    env = dict(os.environ)
    env[ENV_RUNNER] = "1"
    runs = paths.dir / runfiles.RUNS_DIR
    runfiles.refuse_a_link(runs, paths.display(runs))
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
                done = _spawn(ctx.plan.prompt_mode, argv, text, common, ctx.box)
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


def _spawn(
    mode: str, argv: list[str], text: str, common: dict[str, Any], box: Box | None
) -> spawn.AgentRun:
    """The agent gets its prompt in a file (`{prompt_file}` in its command), as its
    last argument, or on stdin; inside the run's sandbox, when it has one."""

    def boxed(final: list[str]) -> list[str]:
        return final if box is None else box.wrap(final, common["env"])

    if mode == "file":
        with spawn.prompt_file(text) as path:
            named = [a.replace(runconfig.PROMPT_FILE, str(path)) for a in argv]
            return spawn.run_agent(boxed(named), stdin_data=None, **common)
    if mode == "arg":
        return spawn.run_agent(boxed([*argv, text]), stdin_data=None, **common)
    return spawn.run_agent(boxed(argv), stdin_data=text.encode("utf-8"), **common)


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
