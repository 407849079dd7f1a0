"""What `doctor` reads in Claude Code's settings files besides the hooks: the task
tools' switch and the task hooks, the plugin enabled, and the `permissions.allow` rules
that let the agent run its own ralphstate commands without a prompt."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ralphstate.agents import claude
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import count
from ralphstate.install.agents import find_installed, hooks_path, read_file
from ralphstate.install.findings import Finding, executable
from ralphstate.install.permissions import RULES, shown
from ralphstate.install.taskenv import json_value
from ralphstate.loop.enforcement import driven_by_run, from_plugin, plugin_enabled
from ralphstate.storage.system.paths import find


def _setting(
    root: Path, home: Path | None, environ: Mapping[str, str], name: str
) -> tuple[str, str] | None:
    """(value, where) of the variable `name` as Claude Code gets it here: a settings
    file's `env` (local, then project, then user: the first that sets it wins), else
    the environment; None when nothing sets it."""
    for scope in ("local", "project", "user"):
        path = hooks_path("claude", scope, root, home)
        try:
            data = read_file("claude", path)
        except RalphstateError:
            continue
        env = data.get("env") if data else None
        if isinstance(env, dict) and name in env:
            value = env[name]
            return (value if isinstance(value, str) else json_value(value)), f"{path}"
    if name in environ:
        return environ[name], "the environment"
    return None


def _is(value: str, words: tuple[str, ...]) -> bool:
    return value.strip().lower() in words


def check_tasks(
    root: Path, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[Finding]:
    """Whether Claude Code's task tools are on in this project's configuration, and
    whether the task hooks are installed: one line each."""
    env = os.environ if environ is None else environ
    found = [h for h in find_installed(root, home, "claude") if h.event in claude.TASK_EVENTS]
    events = [e for e in claude.TASK_EVENTS if any(h.event == e for h in found)]
    tools = _setting(root, home, env, claude.TASKS_ENV)
    off = _setting(root, home, env, claude.TASKS_OFF_ENV)
    unused = "warn" if events else "note"  # off only matters when the task hooks are there
    if tools is not None and _is(tools[0], claude.TRUTHY):
        said = f"{claude.TASKS_ENV}={tools[0]} in {tools[1]}"
        if off is not None and _is(off[0], claude.FALSY):
            line = (
                "ok",
                (
                    f"the todo tools are on ({said}), and {claude.TASKS_OFF_ENV}={off[0]} in"
                    f" {off[1]} gives TodoWrite instead of TaskCreate and TaskUpdate"
                ),
            )
        else:
            line = ("ok", f"the task tools are on ({said}): TaskCreate and TaskUpdate")
    elif tools is not None and _is(tools[0], claude.FALSY):
        line = (
            unused,
            f"the task tools are turned off ({claude.TASKS_ENV}={tools[0]} in {tools[1]})",
        )
    else:
        line = (
            unused,
            (
                "the task tools are not turned on in this project's configuration (no"
                f" {claude.TASKS_ENV} in the environment or a settings file's env; only older"
                " models have them without it); `ralphstate install --tasks` turns them on"
            ),
        )
    findings = [line]
    if not events:
        findings.append(
            (
                "note",
                (
                    "no task hooks installed (`ralphstate install --tasks` adds them; the"
                    " plugin brings its own)"
                ),
            )
        )
        return findings
    imports: dict[str, str | None] = {}
    for hook in found:
        problem, target = executable(hook.command, root, imports)
        if problem is not None:
            findings.append(
                (
                    "fail",
                    (
                        f"{hook.event} hook in {hook.path} runs {target}, {problem}; run"
                        " `ralphstate install --tasks` again"
                    ),
                )
            )
    if len(events) < len(claude.TASK_EVENTS):
        missing = [e for e in claude.TASK_EVENTS if e not in events]
        findings.append(
            (
                "warn",
                (
                    f"of the task hooks only {' and '.join(events)} is installed, not"
                    f" {' and '.join(missing)}; run `ralphstate install --tasks`"
                ),
            )
        )
    elif not any(level == "fail" for level, _ in findings):
        places = sorted({str(h.path) for h in found})
        findings.append(
            (
                "ok",
                f"the task hooks (PostToolUse, TaskCompleted) are installed in {', '.join(places)}",
            )
        )
    return findings


def without_hooks(
    start: Path, root: Path, home: Path | None, agents: list[Finding]
) -> list[Finding] | None:
    """What stands for Claude Code's hooks when no settings file has them: the plugin,
    enabled (its own hooks), another agent's hooks, or `ralphstate run` driving the
    loop found from `start`; None when there are hooks, or nothing stands for them."""
    if find_installed(root, home, "claude"):
        return None
    if from_plugin():
        return [("ok", "this command runs from the ralphstate plugin, whose hooks run here")]
    for path in settings_files(root, home):
        if plugin_enabled(str(path)):
            return [("ok", f"the ralphstate plugin is enabled in {path}; its hooks run here")]
    if agents:  # another agent keeps the loop; Claude Code's missing hooks are no fault
        return [("note", "no Claude Code hooks installed (`ralphstate install` adds them)")]
    loop = find(start)
    if loop is not None and driven_by_run(loop.dir):
        return [
            (
                "note",
                (
                    "no agent's hooks are installed: `ralphstate run` drives this loop and needs"
                    " none (`ralphstate install` adds them, for a session that runs it)"
                ),
            )
        ]
    return None


def settings_files(root: Path, home: Path | None) -> list[Path]:
    """Claude Code's settings files for the project at `root`: local, project, user."""
    return [hooks_path("claude", scope, root, home) for scope in ("local", "project", "user")]


def check_allow(root: Path, home: Path | None = None) -> list[Finding]:
    """Whether the agent's own ralphstate commands run without a permission prompt: the
    `permissions.allow` rules `install` adds, in any of Claude Code's settings files."""
    if (
        not find_installed(root, home, "claude")
        and not from_plugin()
        and not any(plugin_enabled(str(path)) for path in settings_files(root, home))
    ):
        return []
    found: set[str] = set()
    for path in settings_files(root, home):
        try:
            data = read_file("claude", path) or {}
        except RalphstateError:
            continue
        rules = data.get("permissions", {}) if isinstance(data.get("permissions"), dict) else {}
        allow = rules.get("allow")
        found |= {r for r in allow if isinstance(r, str)} if isinstance(allow, list) else set()
    lacking = [rule for rule in RULES if rule not in found]
    if not lacking:
        return [("ok", "the agent's own ralphstate commands run without a permission prompt")]
    return [
        (
            "note",
            (
                f"{count(len(lacking), 'ralphstate command')} the agent runs ({shown(lacking)})"
                " ask for permission first, which `claude -p` refuses and the terminal waits"
                " for; `ralphstate install --allow-only` allows them (with the plugin:"
                " /ralphstate:allow)"
            ),
        )
    ]
