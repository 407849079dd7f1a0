"""`ralphstate install`, `doctor` and `demo`: setting up the hooks and seeing them work."""

from __future__ import annotations

from pathlib import Path

import click

from ralphstate.agents.table import NAMES
from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS


@click.command("install", context_settings=SETTINGS)
@click.option(
    "--scope",
    type=click.Choice(["project", "local", "user"]),
    default=None,
    help="local: .claude/settings.local.json, yours alone (kept out of git);"
    " project: .claude/settings.json, shared with the repository; user:"
    " ~/.claude/settings.json. Other agents: project or user (see"
    " docs/how-to/other-agents.md)."
    "  [default: local; user with --statusline; project for other agents]",
)
@click.option(
    "--agent",
    type=click.Choice(NAMES),
    default="claude",
    show_default=True,
    help="Whose hook configuration to write.",
)
@click.option(
    "--statusline",
    is_flag=True,
    help="Put the loop into Claude Code's status line instead (after yours, if you have"
    " one); no hooks.",
)
@click.option(
    "--tasks",
    is_flag=True,
    help="Claude Code: also the task hooks (PostToolUse, TaskCompleted), and turn the task"
    " tools on (env.CLAUDE_CODE_ENABLE_TODO_TOOLS) unless the file sets it.",
)
@click.option(
    "--uninstall",
    is_flag=True,
    help="Remove ralphstate's hooks, and what --tasks added, and nothing else.",
)
def install_(scope: str | None, agent: str, statusline: bool, tasks: bool, uninstall: bool) -> None:
    """Add the Stop, SessionStart, PreCompact and StopFailure hooks to your Claude Code
    settings for this project, or with --agent to Codex CLI, Gemini CLI, Cursor or
    GitHub Copilot CLI, or opencode's plugin (.opencode/plugin/ralphstate.ts);
    with --tasks, Claude Code's task hooks too, and its task tools turned on.

    Other settings and hooks are kept; running it twice changes nothing. The hooks
    run this installation of ralphstate by its absolute path, so by default they go
    in .claude/settings.local.json, which is yours and kept out of git (in a git
    repository, through .git/info/exclude when nothing ignores it yet).

    \b
    Example:
      ralphstate install
      ralphstate install --scope project
      ralphstate install --scope user
      ralphstate install --agent codex
      ralphstate install --tasks
      ralphstate install --uninstall
      ralphstate install --statusline
    """
    from ralphstate.agents.table import get
    from ralphstate.install.agents import hooks_path, install_agent
    from ralphstate.loop.project import project_root

    hook_file = get(agent).hook_file
    if tasks and (not hook_file.task_events or statusline):
        raise click.UsageError(
            "--tasks is Claude Code's hooks'; leave --agent and --statusline out."
        )
    if statusline:
        from ralphstate.install import statusline_setup

        if agent != "claude":
            raise click.UsageError("--statusline is Claude Code's; leave --agent out.")
        scope = scope or "user"
        path = hooks_path(agent, scope, project_root(Path.cwd()))
        result = statusline_setup.install(path, uninstall=uninstall)
    else:
        scope = scope or hook_file.default_scope
        result = install_agent(
            agent, scope, project_root(Path.cwd()), uninstall=uninstall, tasks=tasks
        )
    for action in result.actions:
        output.text(action)
    if hook_file.local:
        from ralphstate.install.scope import notes

        root = project_root(Path.cwd())
        for line in notes(scope, root, result.path, uninstall=uninstall, hooks=not statusline):
            output.text(line)
    output.text(f"{'updated' if result.changed else 'unchanged'}: {result.path}")


@click.command("doctor", context_settings=SETTINGS)
def doctor_command() -> None:
    """Check the hooks, the loop and the limits; one line each. Exits 1 on a failure.

    \b
    Example:
      ralphstate doctor
    """
    from ralphstate.core.text import visible
    from ralphstate.install import doctor

    findings = doctor.run(Path.cwd())
    colours = {"ok": "green", "warn": "yellow", "fail": "red"}
    for level, text in findings:
        output.text(f"{output.style(f'{level:<4}', fg=colours[level])} {visible(text)}")
    if any(level == "fail" for level, _ in findings):
        raise SystemExit(1)


@click.command("demo", context_settings=SETTINGS)
def demo_command() -> None:
    """Play a short scripted session through the real hooks, in a scratch directory.

    Shows each stop decision and the reason exactly as the model reads it; needs no
    Claude Code and leaves nothing behind.

    \b
    Example:
      ralphstate demo
    """
    from ralphstate.cli import demo

    demo.run(output.text)
