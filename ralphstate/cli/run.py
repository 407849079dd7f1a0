"""`ralphstate run`: the options from run's table (run/runoptions.py), the run, what it prints."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import IO, Any, cast

import click

from ralphstate.cli import output, runflags
from ralphstate.cli.options import SETTINGS
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import count, visible
from ralphstate.loop.project import locate
from ralphstate.run import runoptions
from ralphstate.storage.loopdir.store import Store


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


@click.command("run", context_settings=SETTINGS)
@runflags.options(runoptions.OPTIONS)
def run_command(**given: Any) -> None:
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

    dry_run, as_json = bool(given["dry_run"]), bool(given["as_json"])
    if given["worktree"] is not None:
        store = _in_worktree(given["worktree"], given["branch"], as_json, dry_run)
        given["branch"] = None  # the worktree is on its own branch
    else:
        store = locate()
    run_plan = plan.make_plan(store, store.load(), given)
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
