"""The command line: parses arguments and calls the core. Nothing else lives here."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

from ralphstate import __version__
from ralphstate.cli import views
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.loop import ops

F = TypeVar("F", bound=Callable[..., Any])
SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _echo_json(data: Any) -> None:
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())


def _positive(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise click.BadParameter("must be at least 1 (there is no unlimited).")
    return value


@click.group(context_settings=SETTINGS)
@click.version_option(__version__, prog_name="ralphstate")
def cli() -> None:
    """Keep an autonomous coding-agent loop honest and resumable.

    The loop lives in .loop/state.json (found in this directory or above). Claude
    Code's Stop hook refuses to let the agent stop while a criterion is unmet or it
    has not said <loop-complete>; SessionStart restores the loop after compaction.

    \b
    Start:   ralphstate init "Add a CSV export" -c "tests pass" -s "write exporter"
    Install: ralphstate install
    Record:  ralphstate criteria set "tests pass" true
    """


# -- init ------------------------------------------------------------------------


@cli.command(context_settings=SETTINGS)
@click.argument("spec", required=False, default="")
@click.option("-c", "--criterion", "criteria", multiple=True, help="A success criterion (repeat).")
@click.option("-s", "--step", "steps", multiple=True, help="A step of the plan (repeat).")
@click.option(
    "--max-iterations",
    type=int,
    default=None,
    callback=_positive,
    help=f"Pause after this many blocked stops.  [default: {st.DEFAULT_MAX_ITERATIONS},"
    " or the template's]",
)
@click.option(
    "--stall-limit",
    type=int,
    default=None,
    callback=_positive,
    help=f"Pause after this many blocks with no progress.  [default: {st.DEFAULT_STALL_LIMIT},"
    " or the template's]",
)
@click.option(
    "--marker",
    default=None,
    help=f"What the agent says when the work is done.  [default: {st.DEFAULT_MARKER},"
    " or the template's]",
)
@click.option("--continue-message", default=None, help="Text that opens every block reason.")
@click.option(
    "--from",
    "template",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Start from a template: a JSON state or a markdown checklist.",
)
@click.option("--force", is_flag=True, help="Replace an unfinished loop (a copy is kept).")
@click.option(
    "--verify-on-stop/--no-verify-on-stop",
    default=None,
    help="Run the criteria's checks before the Stop hook allows a claimed completion"
    " (default: off, or the template's).",
)
def init(
    spec: str,
    criteria: tuple[str, ...],
    steps: tuple[str, ...],
    max_iterations: int | None,
    stall_limit: int | None,
    marker: str | None,
    continue_message: str | None,
    template: Path | None,
    force: bool,
    verify_on_stop: bool | None,
) -> None:
    """Start a loop in this directory (.loop/state.json).

    Inside a Claude Code session the loop is owned by that session.

    \b
    Example:
      ralphstate init "Add CSV export to the report page" \\
        -c "tests pass" -c "export button works" \\
        -s "write the exporter" -s "wire the button" --max-iterations 30
      ralphstate init --from loop-template.md
    """
    from ralphstate.loop import template as tpl

    loaded = tpl.load(template) if template else None
    if marker is not None and not marker.strip():
        raise RalphstateError("the marker cannot be empty.")
    store, new, backup = ops.init(
        spec,
        list(criteria),
        list(steps),
        max_iterations=max_iterations,
        stall_limit=stall_limit,
        marker=marker,
        continue_message=continue_message,
        force=force,
        template=loaded,
        verify_on_stop=verify_on_stop,
    )
    if backup:
        click.echo(f"kept the old state as {store.paths.display(backup)}")
    owner = f", owned by session {new['sessionId'][:8]}" if new["sessionId"] else ""
    click.echo(
        f"started a loop in {store.paths.display(store.paths.state)}: "
        f"{len(new['criteria'])} criteria, {len(new['steps'])} steps,"
        f" max {new['maxIterations']} iterations{owner}"
    )
    for name, command in new["checks"].items():  # trusted here: show what will run
        click.echo(f"check (trusted on this machine) {name}: {command}")


# -- views -----------------------------------------------------------------------


@cli.command(context_settings=SETTINGS)
@click.option("--json", "as_json", is_flag=True, help="Print the normalised state as JSON.")
def status(as_json: bool) -> None:
    """Show the loop: spec, criteria, steps, iteration, owner.

    \b
    Example:
      ralphstate status
      ralphstate status --json | jq .criteriaStatus
    """
    store = ops.locate()
    state = store.load()
    if as_json:
        _echo_json(state)
        return
    from ralphstate.storage import trust

    trusted = trust.is_trusted(store.paths, state)
    click.echo(views.status(state, str(store.paths.root), click.style, trusted))


@cli.command(context_settings=SETTINGS)
def show() -> None:
    """Print .loop/state.json exactly as it is stored.

    \b
    Example:
      ralphstate show
    """
    store = ops.locate()
    data = store.read_bytes()
    click.echo(data.decode("utf-8", "replace"), nl=not data.endswith(b"\n"))


@cli.command(context_settings=SETTINGS)
@click.option(
    "-n",
    "lines",
    type=int,
    default=20,
    show_default=True,
    callback=_positive,
    help="How many of the newest entries.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line.")
def log(lines: int, as_json: bool) -> None:
    """Show the loop's history (.loop/history.jsonl), newest last.

    \b
    Example:
      ralphstate log -n 50
    """
    from ralphstate.core import limits

    store = ops.locate()
    for entry in store.history(min(lines, limits.MAX_LOG_LINES)):
        click.echo(orjson.dumps(entry).decode() if as_json else views.history_line(entry))


@cli.command("list", context_settings=SETTINGS)
@click.option("--json", "as_json", is_flag=True, help="Print the loops as JSON.")
@click.option("--prune", is_flag=True, help="Forget loops whose directory is gone.")
def list_(as_json: bool, prune: bool) -> None:
    """List every loop created or adopted on this machine.

    \b
    Example:
      ralphstate list
      ralphstate list --prune
    """
    rows = ops.list_loops(prune)
    if as_json:
        _echo_json(rows)
        return
    if not rows:
        click.echo("no loops recorded on this machine")
    for row in rows:
        click.echo(views.loop_row(row))


# -- criteria --------------------------------------------------------------------


@cli.group(context_settings=SETTINGS)
def criteria() -> None:
    """List, add, set or remove success criteria.

    \b
    Example:
      ralphstate criteria set "tests pass" true --note "pytest -q: 84 passed"
    """


@criteria.command("list", context_settings=SETTINGS)
def criteria_list() -> None:
    """List the criteria with their status.

    \b
    Example:
      ralphstate criteria list
    """
    state = ops.locate().load()
    for i, name in enumerate(state["criteria"], 1):
        click.echo(f"{i}. [{'x' if st.met(state, name) else ' '}] {views.visible(name)}")


@criteria.command("add", context_settings=SETTINGS)
@click.argument("name")
@click.option("--check", default=None, help="A shell command that verifies the criterion.")
def criteria_add(name: str, check: str | None) -> None:
    """Add a criterion (unmet).

    \b
    Example:
      ralphstate criteria add "docs updated"
    """
    ops.criteria_add(ops.locate(), name, check)
    click.echo(f"added criterion {name!r}")


@criteria.command("set", context_settings=SETTINGS)
@click.argument("name")
@click.argument("value")
@click.option("--note", default=None, help="Why; recorded in the history.")
def criteria_set(name: str, value: str, note: str | None) -> None:
    """Record a criterion as verified (true) or not (false). NAME may be its number.

    VALUE is true/false, yes/no or 1/0.

    \b
    Example:
      ralphstate criteria set "tests pass" true
      ralphstate criteria set 2 no --note "lint fails on utils.py"
    """
    found, flag = ops.criteria_set(ops.locate(), name, ops.parse_bool(value), note)
    click.echo(f"{found}: {'met' if flag else 'not met'}")


@criteria.command("remove", context_settings=SETTINGS)
@click.argument("name")
def criteria_remove(name: str) -> None:
    """Remove a criterion. NAME may be its number.

    \b
    Example:
      ralphstate criteria remove "docs updated"
    """
    found = ops.criteria_remove(ops.locate(), name)
    click.echo(f"removed criterion {found!r}")


# -- steps -----------------------------------------------------------------------


@cli.group(context_settings=SETTINGS)
def step() -> None:
    """Add steps to the plan and mark them done or not done.

    \b
    Example:
      ralphstate step done "write the exporter"
      ralphstate step done 2
    """


@step.command("add", context_settings=SETTINGS)
@click.argument("text")
def step_add(text: str) -> None:
    """Add a step at the end of the plan.

    \b
    Example:
      ralphstate step add "update the changelog"
    """
    ops.step_add(ops.locate(), text)
    click.echo(f"added step {text!r}")


@step.command("done", context_settings=SETTINGS)
@click.argument("step")
def step_done(step: str) -> None:
    """Mark a step done. STEP is its text or its 1-based number.

    \b
    Example:
      ralphstate step done "write the exporter"
    """
    found = ops.step_mark(ops.locate(), step, True)
    click.echo(f"done: {found}")


@step.command("undo", context_settings=SETTINGS)
@click.argument("step")
def step_undo(step: str) -> None:
    """Mark a done step as not done again. STEP is its text or its 1-based number.

    \b
    Example:
      ralphstate step undo 1
    """
    found = ops.step_mark(ops.locate(), step, False)
    click.echo(f"not done: {found}")


# -- lifecycle -------------------------------------------------------------------


@cli.command(context_settings=SETTINGS)
@click.option("--reason", default="user", show_default=True, help="Recorded as pauseReason.")
def pause(reason: str) -> None:
    """Pause the loop: the Stop hook lets the agent stop until you resume.

    \b
    Example:
      ralphstate pause --reason "waiting for API keys"
    """
    ops.pause(ops.locate(), reason)
    click.echo("paused; continue with `ralphstate resume`")


@cli.command(context_settings=SETTINGS)
@click.option(
    "--more",
    type=int,
    default=None,
    callback=_positive,
    help="Allow N more iterations (10 when the cap was reached and N is not given).",
)
def resume(more: int | None) -> None:
    """Resume a paused loop.

    \b
    Example:
      ralphstate resume --more 10
    """
    new = ops.resume(ops.locate(), more)
    click.echo(f"in progress: iteration {new['iteration']}/{new['maxIterations']}")


@cli.command(context_settings=SETTINGS)
def adopt() -> None:
    """Own the loop from this Claude Code session ($CLAUDE_CODE_SESSION_ID).

    Run outside a session, it marks the loop as trusted on this machine and lets the
    next session that starts here take it.

    \b
    Example:
      ralphstate adopt
    """
    new = ops.adopt(ops.locate())
    owner = new["sessionId"]
    click.echo(f"adopted by session {owner}" if owner else "adopted; the next session here owns it")


@cli.command(context_settings=SETTINGS)
def cancel() -> None:
    """Cancel the loop; the state stays on disk for reference.

    \b
    Example:
      ralphstate cancel
    """
    ops.cancel(ops.locate())
    click.echo("cancelled")


@cli.command("install", context_settings=SETTINGS)
@click.option(
    "--scope",
    type=click.Choice(["project", "local", "user"]),
    default="project",
    show_default=True,
    help="project: .claude/settings.json; local: .claude/settings.local.json;"
    " user: ~/.claude/settings.json. Other agents: project or user (docs/agents.md).",
)
@click.option(
    "--agent",
    type=click.Choice(["claude", "codex", "gemini", "cursor", "copilot"]),
    default="claude",
    show_default=True,
    help="Whose hook configuration to write.",
)
@click.option("--uninstall", is_flag=True, help="Remove ralphstate's hooks, and nothing else.")
def install_(scope: str, agent: str, uninstall: bool) -> None:
    """Add the Stop, SessionStart and PreCompact hooks to Claude Code's settings,
    or with --agent to Codex CLI, Gemini CLI, Cursor or GitHub Copilot CLI.

    Other settings and hooks are kept; running it twice changes nothing. The hooks
    run this installation of ralphstate by its absolute path.

    \b
    Example:
      ralphstate install
      ralphstate install --scope user
      ralphstate install --agent codex
      ralphstate install --uninstall
    """
    from ralphstate.install.agents import install_agent
    from ralphstate.install.doctor import project_root

    result = install_agent(agent, scope, project_root(Path.cwd()), uninstall=uninstall)
    for action in result.actions:
        click.echo(action)
    click.echo(f"{'updated' if result.changed else 'unchanged'}: {result.path}")


@cli.command(context_settings=SETTINGS)
def doctor() -> None:
    """Check the hooks, the loop and the limits; one line each. Exits 1 on a failure.

    \b
    Example:
      ralphstate doctor
    """
    from ralphstate.install import doctor as doctor_

    findings = doctor_.run(Path.cwd())
    colours = {"ok": "green", "warn": "yellow", "fail": "red"}
    for level, text in findings:
        click.echo(f"{click.style(f'{level:<4}', fg=colours[level])} {text}")
    if any(level == "fail" for level, _ in findings):
        raise SystemExit(1)


@cli.command(context_settings=SETTINGS)
def demo() -> None:
    """Play a short scripted session through the real hooks, in a scratch directory.

    Shows each stop decision and the reason exactly as the model reads it; needs no
    Claude Code and leaves nothing behind.

    \b
    Example:
      ralphstate demo
    """
    from ralphstate.cli import demo as demo_

    demo_.run(click.echo)


# -- entry -----------------------------------------------------------------------


def _escape_unencodable_output() -> None:
    """Text the output's encoding cannot show (a criterion with a ✓ printed to a Windows
    pipe in cp1252) is written as `\\u2713`, never an error after the change was made."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


# click 8.2 and later raise this for a group named without a subcommand; 8.1 printed help.
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


def _usage_mistake(exc: click.ClickException) -> int:
    """A usage mistake is a user mistake like any other: one line, exit 1."""
    message = " ".join(exc.format_message().split())
    hint = ""
    if isinstance(exc, click.UsageError) and exc.ctx is not None:
        hint = f" (see `{exc.ctx.command_path} --help`)"
    click.echo(f"ralphstate: {message}{hint}", err=True)
    return 1


def run_cli(args: list[str]) -> int:
    """Run the command line; map errors to one line and an exit code."""
    _escape_unencodable_output()
    for arg in args:  # bytes that are not UTF-8 arrive as lone surrogates (POSIX)
        if not arg.isascii() and any("\ud800" <= c <= "\udfff" for c in arg):
            shown = repr(arg) if len(arg) <= 60 else repr(arg[:60]) + "…"
            click.echo(f"ralphstate: {shown} is not valid UTF-8 text; nothing was done.", err=True)
            return 1
    try:
        cli.main(args=args, prog_name="ralphstate", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except click.ClickException as exc:
        if isinstance(exc, click.UsageError) and isinstance(exc, _NO_ARGS_IS_HELP):
            # A group named without a subcommand (`ralphstate`, `ralphstate criteria`) asks
            # for its help: shown whole, as click before 8.2 did, not as an error line.
            click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
            return 0
        return _usage_mistake(exc)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 1
    except RalphstateError as exc:
        click.echo(f"ralphstate: {exc}", err=True)
        return 1
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the one place the unexpected is caught
        from ralphstate.storage import logs

        where = logs.write(f"ralphstate {' '.join(args[:2])}: unexpected error", exc)
        tail = f"; details in {where}" if where else ""
        click.echo(f"ralphstate: unexpected error ({type(exc).__name__}: {exc}){tail}.", err=True)
        return 1
    return 0


def main() -> None:
    sys.exit(run_cli(sys.argv[1:]))


# -- checks, verification, trust (ralphstate/cli_verify.py) -----------------------------

from ralphstate.cli import verify as cli_verify  # noqa: E402

cli_verify.register(cli, criteria)

# -- fresh-context loops and the live view (ralphstate/cli_run.py) ----------------------

from ralphstate.cli.run import run_command, watch_command  # noqa: E402

cli.add_command(run_command)
cli.add_command(watch_command)
