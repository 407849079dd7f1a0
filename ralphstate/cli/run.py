"""`ralphstate run`: parse the options, call the core, print."""

from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path
from typing import IO, cast

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import budgets, limits
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import count, visible
from ralphstate.loop.project import locate
from ralphstate.run import runconfig
from ralphstate.sandbox.modes import MODES
from ralphstate.storage.store import Store


class _Terminal:
    """Progress lines and the agent's output, to stdout (stderr with --json)."""

    def __init__(self, to_stderr: bool) -> None:
        self.stream: IO[str] = sys.stderr if to_stderr else sys.stdout

    def line(self, text: str) -> None:
        with contextlib.suppress(OSError):  # the terminal is gone (closed): go on
            output.text(text, file=self.stream)

    def output(self, data: bytes) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()
            buffer = getattr(self.stream, "buffer", None)
            if buffer is not None:
                buffer.write(data)
                buffer.flush()
            else:
                self.stream.write(data.decode("utf-8", "replace"))
                self.stream.flush()


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds.")
    return value


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    seconds = budgets.parse_duration(value)
    if seconds is None:
        raise click.BadParameter(f"{value!r} is not a duration such as 8h, 90m or 1h30m.")
    return seconds


@click.command("run", context_settings=SETTINGS)
@click.option(
    "--agent",
    "agents",
    metavar="CMD",
    multiple=True,
    help='The agent\'s command line, e.g. "claude -p". Default: `agent` in the config.'
    " Repeat it for a fallback chain: the next one takes over after a usage limit or"
    " repeated failures.",
)
@click.option(
    "--prompt-mode",
    type=click.Choice(runconfig.PROMPT_MODES),
    default=None,
    help="How the prompt reaches the agent: on stdin, as the last argument, or in a file"
    " whose path replaces {prompt_file} in CMD.  [default: file when CMD holds"
    " {prompt_file}, else stdin]",
)
@click.option(
    "--max",
    "max_iterations",
    type=click.IntRange(1, limits.RUN_MAX_ITERATIONS),
    default=None,
    help="Run at most N iterations; the loop's maxIterations grows to fit them, never shrinks."
    "  [default: what the loop's maxIterations leaves]",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0, min_open=True),
    default=None,
    callback=_finite,
    metavar="SECONDS",
    help="Stop an iteration's agent after this long.  [default: no limit]",
)
@click.option(
    "--context",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="A file to put into every prompt (repeat); bounded in size.",
)
@click.option(
    "--commit",
    is_flag=True,
    help="Commit after each iteration that left the work tree changed (never the run logs).",
)
@click.option(
    "--branch", metavar="NAME", default=None, help="Run on branch NAME (created from HEAD)."
)
@click.option(
    "--worktree",
    "worktree_name",
    metavar="NAME",
    default=None,
    help="Run in git worktree NAME (created with a fresh copy of this loop when missing).",
)
@click.option(
    "--allow-dirty", is_flag=True, help="Let --branch and --commit take uncommitted changes along."
)
@click.option(
    "--notify",
    metavar="CMD",
    default=None,
    help="Run CMD on complete, pause, budget, limit and error: the event as JSON on its"
    " stdin, a summary in $RALPHSTATE_SUMMARY.  [default: `notify` in the config]",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(0, min_open=True),
    default=None,
    callback=_finite,
    metavar="SECONDS",
    help="Stop an iteration's agent that printed nothing for this long.  [default: no limit]",
)
@click.option(
    "--max-cost",
    type=click.FloatRange(0, min_open=True),
    default=None,
    callback=_finite,
    metavar="USD",
    help="This run's budget: pause once its agents reported spending this much (US"
    " dollars). The loop's own budget is `ralphstate config max-cost`.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(1, limits.MAX_USAGE_TOKENS),
    default=None,
    metavar="N",
    help="This run's budget: pause once its agents reported using this many tokens.",
)
@click.option(
    "--max-duration",
    default=None,
    callback=_duration,
    metavar="TIME",
    help="This run's budget: pause once it has taken this long (8h, 90m, 1h30m, or seconds);"
    " the iteration running then is stopped.",
)
@click.option(
    "--on-limit",
    type=click.Choice(runconfig.ON_LIMIT),
    default=None,
    help="On a usage or rate limit: wait until it resets and retry, or pause.  [default: wait]",
)
@click.option(
    "--sandbox",
    type=click.Choice(MODES),
    default=None,
    help="Confine each iteration's agent (docs/how-to/sandbox.md); a sandbox that cannot"
    " start stops the run.  [default: `sandbox` in the config, else none]",
)
@click.option(
    "--no-network",
    "offline",
    is_flag=True,
    default=None,
    help="With --sandbox bwrap or sandbox-exec: no network inside (for agents that need no API).",
)
@click.option(
    "--shell/--no-shell",
    default=None,
    help="Run the agent command through /bin/sh, for `VAR=x cmd`, `a && b` or a pipe."
    "  [default: `shell` in the config, else no shell]",
)
@click.option(
    "--strict/--no-strict",
    default=None,
    help="Pause the loop when a criterion's check that passed fails after an iteration."
    "  [default: `strict` in the config, else off]",
)
@click.option(
    "--check-in/--no-check-in",
    default=None,
    help="Pause for you after each finished step and before completing, as a"
    " colleague-shaped spec needs.  [default: `check-in` in the config, else off]",
)
@click.option("--dry-run", is_flag=True, help="Print the prompt and the command; run nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object at the end.")
def run_command(
    agents: tuple[str, ...],
    prompt_mode: str | None,
    max_iterations: int | None,
    timeout: float | None,
    context: tuple[Path, ...],
    commit: bool,
    branch: str | None,
    worktree_name: str | None,
    allow_dirty: bool,
    notify: str | None,
    idle_timeout: float | None,
    max_cost: float | None,
    max_tokens: int | None,
    max_duration: float | None,
    on_limit: str | None,
    sandbox: str | None,
    offline: bool | None,
    shell: bool | None,
    strict: bool | None,
    check_in: bool | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Run the loop with a fresh agent process per iteration until it is done.

    Each iteration gives the agent a prompt built from .loop/state.json (spec,
    criteria, steps, protocol), streams its output here and to .loop/runs/NNNN.log,
    then re-reads the state, runs the criteria's checks and decides: complete, paused
    (max iterations, stall, Ctrl-C) or go on. Defaults come from [tool.ralphstate.run]
    in pyproject.toml or [run] in .loop/config.toml.

    With --commit, every iteration that left changes is committed with a message
    naming it and the criteria and steps it changed; a commit that fails pauses the
    loop. --branch and --worktree put the loop on its own branch.

    Exit codes: 0 complete, 3 paused (max iterations, stall, budget, limit, agent
    errors, Ctrl-C, a failed commit), 4 blocked on a person, 1 error.

    \b
    Example:
      ralphstate run --agent "claude -p --dangerously-skip-permissions" --max 10
      ralphstate run --agent "codex exec --sandbox workspace-write" --prompt-mode arg
      ralphstate run --agent "my-agent --instructions {prompt_file}"
      ralphstate run --commit --branch loop/csv-export
      ralphstate run --worktree csv-export --commit
      ralphstate run --sandbox bwrap --agent "claude -p --dangerously-skip-permissions"
      ralphstate run --dry-run
    """
    from ralphstate.run import plan, result, runner

    files = [path.resolve() for path in context]
    if worktree_name is not None:
        store = _in_worktree(worktree_name, branch, as_json, dry_run)
        branch = None  # the worktree is on its own branch
    else:
        store = locate()
    state = store.load()
    run_plan = plan.make_plan(
        store,
        state,
        agent=agents[0] if agents else None,
        fallbacks=list(agents[1:]) if agents else None,
        prompt_mode=prompt_mode,
        max_iterations=max_iterations,
        timeout=timeout,
        context=files or None,
        max_cost=max_cost,
        max_tokens=max_tokens,
        max_duration=max_duration,
        on_limit=on_limit,
        idle_timeout=idle_timeout,
        notify=notify,
        sandbox=sandbox,
        offline=offline or None,
        shell=shell,
        strict=strict,
        check_in=check_in,
    )
    run_plan.commit, run_plan.branch, run_plan.allow_dirty = commit, branch, allow_dirty
    if dry_run:
        _show_preview(plan.preview(store, run_plan), as_json)
        return
    terminal = _Terminal(to_stderr=as_json)
    try:
        outcome = runner.run(store, run_plan, terminal)
    except KeyboardInterrupt:  # a second Ctrl-C while the run was ending
        output.error("interrupted.")
        raise SystemExit(result.EXIT_CODES["paused"]) from None
    if outcome.error:
        output.error(str(outcome.error))
    for line in outcome.summary():
        terminal.line(line)
    if as_json:
        output.json(outcome.as_json())
    if outcome.exit_code:
        raise SystemExit(outcome.exit_code)


def _in_worktree(name: str, branch: str | None, as_json: bool, dry_run: bool) -> Store:
    """The loop in worktree `name`, which is created (with this loop, afresh) when
    missing, but for a dry run, which changes nothing."""
    from ralphstate.run import worktrees

    here = Path.cwd()
    found = worktrees.find(here, name)
    if found is not None:
        return worktrees.store_in(found, here)
    if dry_run:
        raise RalphstateError(
            f"there is no worktree {name!r} yet, and --dry-run creates nothing; create it"
            f" with `ralphstate worktree add {name}`."
        )
    added = worktrees.add(here, name, branch=branch)
    output.text(
        f"worktree {added.path} on branch {added.branch}, with a fresh copy of this loop",
        err=as_json,
    )
    return added.store


def _show_preview(shown: dict[str, object], as_json: bool) -> None:
    if as_json:
        output.json(shown)
        return
    timeout = shown["timeout"]
    output.text(f"would run, in {visible(shown['cwd'])} with RALPHSTATE_RUNNER=1:")
    output.text(f"  {visible(shown['commandLine'])}")
    output.text(
        f"{shown['delivery']}; at most {count(int(str(shown['limit'])), 'iteration')};"
        f" {'no time limit' if timeout is None else f'{timeout:g}s per iteration'}."
    )
    if not shown["configTrusted"]:
        sources = cast(list[str], shown["config"])
        output.text(
            f"note: this agent command or these context files come from"
            f" {visible(', '.join(sources))} and are not trusted on this machine;"
            " after reviewing them, run `ralphstate trust`."
        )
    if not shown["found"]:
        output.text(f"note: the agent program {shown['program']!r} was not found.")
    text = str(shown["prompt"])
    output.text(f"----- prompt ({len(text)} characters) -----")
    output.text("\n".join(visible(line) for line in text.split("\n")), nl=False)
    output.text("----- end of prompt -----")
