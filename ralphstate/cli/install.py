"""`ralphstate install`: the hooks in an agent's files; the options and the work
`uninstall` shares."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ralphstate.agents.table import NAMES, get
from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.install import sandboxing, statusline_setup
from ralphstate.install.agents import hooks_path, install_agent
from ralphstate.install.command import development_checkout
from ralphstate.install.scope import notes
from ralphstate.loop.enforcement import settings_root


def setup_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options `install` and `uninstall` share."""
    options = [
        click.option(
            "--scope",
            type=click.Choice(["project", "local", "user"]),
            default=None,
            help="local: .claude/settings.local.json, yours alone (kept out of git);"
            " project: .claude/settings.json, shared with the repository; user:"
            " ~/.claude/settings.json. Other agents: project or user (see"
            " docs/how-to/other-agents.md)."
            "  [default: local; user with --statusline; project for other agents]",
        ),
        click.option(
            "--agent",
            type=click.Choice(NAMES),
            default="claude",
            show_default=True,
            help="Whose hook configuration to write.",
        ),
        click.option(
            "--statusline",
            is_flag=True,
            help="Put the loop into Claude Code's status line instead (after yours, if you"
            " have one); no hooks.",
        ),
        click.option(
            "--tasks",
            is_flag=True,
            help="Claude Code: also the task hooks (PostToolUse, TaskCompleted), and turn the"
            " task tools on (env.CLAUDE_CODE_ENABLE_TODO_TOOLS) unless the file sets it.",
        ),
        click.option(
            "--allow/--no-allow",
            default=True,
            help="Claude Code: also the permissions.allow rules that let the agent run its own"
            " ralphstate commands (status, verify, criteria set, step done, pause, ...)"
            " without a prompt; never trust, review, cancel or install.  [default: allow]",
        ),
        click.option(
            "--sandbox",
            is_flag=True,
            help="Claude Code: its own sandbox for sessions, with ralphstate's write denials"
            " (the per-user store, the guarded files, git's configuration and hooks), in the"
            " settings file; no hooks (docs/how-to/sandbox.md).",
        ),
        click.option(
            "--allow-only",
            is_flag=True,
            help="Claude Code: those rules alone, no hooks (for the plugin, which brings its"
            " own hooks).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.command(
    "install",
    context_settings=SETTINGS,
    short_help="Add ralphstate's hooks to the settings of Claude Code or another agent.",
)
@setup_options
@click.option(
    "--uninstall",
    is_flag=True,
    help="Remove ralphstate's hooks, and the rules and what --tasks added, and nothing"
    " else (the same as `ralphstate uninstall`).",
)
def install_(**options: Any) -> None:
    """Add the Stop, SessionStart, PreCompact and StopFailure hooks to your Claude Code
    settings for this project, with the permission rules the agent's own ralphstate
    commands need, or with --agent to Codex CLI, Gemini CLI, Cursor or GitHub Copilot
    CLI, or opencode's plugin (.opencode/plugin/ralphstate.ts); with --tasks, Claude
    Code's task hooks too, and its task tools turned on.

    Other settings and hooks are kept; running it twice changes nothing. The hooks
    run this installation of ralphstate by its absolute path, so by default they go
    in .claude/settings.local.json, which is yours and kept out of git (in a git
    repository, through .git/info/exclude when nothing ignores it yet). In a
    subdirectory, the project is that of the loop found from here.

    \b
    Example:
      ralphstate install
      ralphstate install --scope project
      ralphstate install --scope user
      ralphstate install --agent codex
      ralphstate install --tasks
      ralphstate install --allow-only
      ralphstate install --uninstall
      ralphstate install --statusline
      ralphstate install --sandbox
    """
    setup(**options)


def setup(
    scope: str | None,
    agent: str,
    statusline: bool,
    tasks: bool,
    allow: bool,
    allow_only: bool,
    uninstall: bool,
    sandbox: bool = False,
) -> None:
    hook_file = get(agent).hook_file
    if tasks and (not hook_file.task_events or statusline):
        raise click.UsageError(
            "--tasks is Claude Code's hooks'; leave --agent and --statusline out."
        )
    if allow_only and (not hook_file.task_events or statusline or tasks):
        raise click.UsageError(
            "--allow-only is Claude Code's rules alone; leave --agent, --statusline and"
            " --tasks out."
        )
    root = settings_root(Path.cwd())
    if sandbox:
        _sandbox(agent, scope, root, uninstall, statusline or tasks or allow_only)
        return
    if statusline:
        if agent != "claude":
            raise click.UsageError("--statusline is Claude Code's; leave --agent out.")
        scope = scope or "user"
        result = statusline_setup.install(hooks_path(agent, scope, root), uninstall=uninstall)
    else:
        scope = scope or hook_file.default_scope
        result = install_agent(
            agent,
            scope,
            root,
            uninstall=uninstall,
            tasks=tasks,
            allow=(allow or allow_only) and bool(hook_file.task_events),
            hooks=not allow_only,
        )
    for action in result.actions:
        output.text(action)
    hooks = not statusline and not allow_only
    for line in notes(agent, scope, root, result, uninstall=uninstall, hooks=hooks):
        output.text(line)
    if agent == "claude" and hooks and not uninstall and not sandboxing.enabled(root):
        output.text(SESSION_SANDBOX)
    checkout = None if uninstall or allow_only else development_checkout()
    if checkout is not None:
        output.error(
            f"these hooks run the development checkout {checkout} (an editable"
            " install), and break when it moves or its venv goes; for your projects,"
            f" `pipx install {checkout}` (or `uv tool install {checkout}`) and run"
            " `ralphstate install` again from a shell without that venv active"
        )
    output.text(f"{'updated' if result.changed else 'unchanged'}: {result.path}")


# What install says where a session's own sandbox is off (docs/how-to/sandbox.md).
SESSION_SANDBOX = (
    "sessions here run their commands unconfined: `ralphstate install --sandbox` turns on"
    " Claude Code's own sandbox for them (Bash in bubblewrap on Linux, Seatbelt on macOS;"
    " writes only in the project, the network only to hosts you allow); it costs a"
    " sandbox start per command, and a command that needs more asks you first"
)


def _sandbox(agent: str, scope: str | None, root: Path, uninstall: bool, more: bool) -> None:
    if agent != "claude" or more:
        raise click.UsageError(
            "--sandbox is Claude Code's settings alone; leave --agent, --statusline, --tasks"
            " and --allow-only out."
        )
    result = sandboxing.update(hooks_path(agent, scope or "local", root), root, uninstall)
    for action in result.actions:
        output.text(action)
    output.text(f"{'updated' if result.changed else 'unchanged'}: {result.path}")
