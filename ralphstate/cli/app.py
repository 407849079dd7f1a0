"""The root command group and `run_cli`, which maps every error to one line and an exit
code. Each command lives in a module named after it (a group's commands in the group's)
and is imported when it is asked for (see lazy.py); this module imports click and
nothing of the commands."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click

from ralphstate import __version__
from ralphstate.cli import output
from ralphstate.cli.lazy import LazyGroup
from ralphstate.cli.options import SETTINGS
from ralphstate.core.errors import RalphstateError

# Command name -> "module:attribute" of its click command, in the order `--help` lists
# them: the order a person meets them, from setting up to the morning after.
COMMANDS = {
    "install": "ralphstate.cli.install:install_",
    "init": "ralphstate.cli.init:init",
    "demo": "ralphstate.cli.demo:demo_command",
    "status": "ralphstate.cli.status:status",
    "watch": "ralphstate.cli.watch:watch_command",
    "run": "ralphstate.cli.run:run_command",
    "verify": "ralphstate.cli.verify:verify_command",
    "criteria": "ralphstate.cli.criteria:criteria",
    "step": "ralphstate.cli.step:step",
    "review": "ralphstate.cli.review:review_command",
    "trust": "ralphstate.cli.trust:trust_command",
    "heldout": "ralphstate.cli.heldout:heldout",
    "pause": "ralphstate.cli.pause:pause",
    "resume": "ralphstate.cli.resume:resume",
    "adopt": "ralphstate.cli.adopt:adopt",
    "cancel": "ralphstate.cli.cancel:cancel",
    "report": "ralphstate.cli.report:report",
    "log": "ralphstate.cli.log:log",
    "list": "ralphstate.cli.list:list_",
    "show": "ralphstate.cli.show:show",
    "config": "ralphstate.cli.config:config",
    "doctor": "ralphstate.cli.doctor:doctor_command",
    "worktree": "ralphstate.cli.worktree:worktree",
    "ci": "ralphstate.cli.ci:ci_command",
    "prove": "ralphstate.cli.prove:prove_command",
    "ci-summary": "ralphstate.cli.ci_summary:ci_summary_command",
    "uninstall": "ralphstate.cli.uninstall:uninstall_",
}


# Words a person tries for a command, and what they want instead: click would guess by
# spelling (`start` -> `status`).
MEANT = {
    word: 'a loop starts with `ralphstate init "what to build" -c "tests pass"`'
    " (`/ralphstate:start` in Claude Code with the plugin)."
    for word in ("start", "new", "begin", "create")
} | {
    "stop": "`ralphstate pause` pauses the loop; `ralphstate cancel` ends it.",
    "continue": "`ralphstate resume` resumes a paused loop.",
    "unpause": "`ralphstate resume` resumes a paused loop.",
    "history": "`ralphstate log` shows the loop's history.",
    "check": "`ralphstate verify` runs the criteria's checks.",
    "setup": "`ralphstate install` adds the hooks to this project.",
}


@click.group(cls=LazyGroup, lazy=COMMANDS, meant=MEANT, context_settings=SETTINGS)
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
    from ralphstate.core import actor
    from ralphstate.loop.project import current_actor

    actor.find_with(current_actor)


def _escape_unencodable_output() -> None:
    """Text the output's encoding cannot show (a criterion with a ✓ printed to a Windows
    pipe in cp1252) is written as `\\u2713`, never an error after the change was made."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            with contextlib.suppress(ValueError, OSError):
                stream.reconfigure(errors="backslashreplace")


# click 8.2 and later raise this for a group named without a subcommand; 8.1 printed help.
_NO_ARGS_IS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


def _command_path(args: list[str]) -> str:
    """`ralphstate pause`: the command `args` name, for an error click raised without
    its context (an option given no value)."""
    path: list[str] = ["ralphstate"]
    command: click.Command = cli
    ctx = click.Context(cli, info_name="ralphstate")
    for arg in args:
        sub = command.get_command(ctx, arg) if isinstance(command, click.Group) else None
        if sub is None:
            break
        path.append(arg)
        command = sub
    return " ".join(path)


def _usage_mistake(exc: click.ClickException, args: list[str]) -> int:
    """A usage mistake is a user mistake like any other: one line, exit 1."""
    message = " ".join(exc.format_message().split())
    where = ""
    if isinstance(exc, click.UsageError):
        where = exc.ctx.command_path if exc.ctx is not None else _command_path(args)
    if message.startswith("Got unexpected extra argument"):
        # `init Fix the bug -c tests pass`: words meant as one text, given as several.
        example = (
            'ralphstate init "Fix the bug" -c "tests pass"'
            if where == "ralphstate init"
            else '"like this"'
        )
        message += f"; put a text of several words in quotes: {example}"
    hint = f" (see `{where} --help`)" if where else ""
    output.error(f"{message}{hint}")
    return 1


def _cannot_start(args: list[str]) -> str | None:
    """Why no command can run (an argument that is not UTF-8, a current directory that
    is gone), in the one line said; None when one can."""
    for arg in args:  # bytes that are not UTF-8 arrive as lone surrogates (POSIX)
        if not arg.isascii() and any("\ud800" <= c <= "\udfff" for c in arg):
            shown = repr(arg) if len(arg) <= 60 else repr(arg[:60]) + "…"
            return f"{shown} is not valid UTF-8 text; nothing was done."
    try:
        Path.cwd()
    except FileNotFoundError:  # every command finds its loop from here
        if not {"-h", "--help", "--version"} & set(args):
            return (
                "the current directory no longer exists (it was deleted or moved);"
                " cd to the project and run the command again."
            )
    return None


# Commands that do not tell a loop whose hooks were switched off before they run:
# `status` says it in its place, `install` and `doctor` are how it is mended.
_GATE_SAID_BY_ITSELF = frozenset({"status", "install", "doctor", "uninstall", "hook"})


def _say_gate_off(args: list[str]) -> None:
    """Before a command of a loop that hooks enforced once and nothing enforces now,
    one line on stderr saying so (loop/gateoff.py); nothing when it cannot tell."""
    words = [a for a in args if not a.startswith("-")]
    if not words or words[0] in _GATE_SAID_BY_ITSELF or "--help" in args:
        return
    with contextlib.suppress(Exception):  # a command is never stopped by this line
        from ralphstate.loop import gateoff
        from ralphstate.storage.loopdir.store import Store
        from ralphstate.storage.system.paths import find

        loop = find(Path.cwd())
        if loop is None:
            return
        said = gateoff.no_longer(loop, Store(loop).load())
        if said is not None:
            output.text(said, err=True)


def run_cli(args: list[str]) -> int:
    """Run the command line; map errors to one line and an exit code."""
    _escape_unencodable_output()
    problem = _cannot_start(args)
    if problem is not None:
        output.error(problem)
        return 1
    _say_gate_off(args)
    try:
        cli.main(args=args, prog_name="ralphstate", standalone_mode=False)
    except click.exceptions.Abort:
        output.text("Aborted.", err=True)
        return 1
    except click.ClickException as exc:
        if isinstance(exc, click.UsageError) and isinstance(exc, _NO_ARGS_IS_HELP):
            # A group named without a subcommand (`ralphstate`, `ralphstate criteria`) asks
            # for its help: shown whole, as click before 8.2 did, not as an error line.
            output.text(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
            return 0
        return _usage_mistake(exc, args)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 1
    except RalphstateError as exc:
        output.error(str(exc))
        return 1
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the one place the unexpected is caught
        from ralphstate.storage.peruser import logs

        where = logs.write(f"ralphstate {' '.join(args[:2])}: unexpected error", exc)
        tail = f"; details in {where}" if where else ""
        output.error(f"unexpected error ({type(exc).__name__}: {exc}){tail}.")
        return 1
    return 0


def main() -> None:
    sys.exit(run_cli(sys.argv[1:]))
