"""`ralphstate install`: merge ralphstate's hooks into Claude Code's settings file.

Claude Code reads hooks from `.claude/settings.json` (project),
`.claude/settings.local.json` (local) and `~/.claude/settings.json` (user), in this
shape (https://code.claude.com/docs/en/hooks):

    {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": ..., "timeout": 30}]}],
               "SessionStart": [{"matcher": "", "hooks": [...]}],
               "PreCompact": [{"matcher": "", "hooks": [...]}]}}

Stop takes no matcher; for SessionStart and PreCompact an empty matcher matches every
source and trigger. Everything else in the file is kept as it is, in its order. Our own
entries are recognised by their command (`install.command`: this version's
`python -I -c "from ralphstate.hooks.entry import main; main()" stop`, or an older
version's `ralphstate hook stop` or hook script, any path in front), so an upgrade
replaces them in place and an uninstall removes only them. A file that is not what Claude Code
expects is reported, never rewritten (`install.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.install import settings
from ralphstate.install.command import command_target as command_target
from ralphstate.install.command import own_subcommand as own_subcommand
from ralphstate.install.command import shell_command
from ralphstate.install.settings import InstallResult as InstallResult
from ralphstate.storage import installed
from ralphstate.storage.installed import Added

SCOPES = ("project", "local", "user")
# Claude Code event name -> `ralphstate hook` subcommand, in the order they are written.
# StopFailure runs instead of Stop when a turn ends on an API error (a rate limit, an
# overloaded API, a billing error): the hook records it for the next SessionStart.
EVENTS = {
    "Stop": "stop",
    "SessionStart": "session-start",
    "PreCompact": "pre-compact",
    "StopFailure": "stop-failure",
}
# With `install --tasks`: the hooks on Claude Code's task list (docs/design.md, "The task
# gate"): PostToolUse mirrors the task tools' calls into the loop's steps, TaskCompleted
# keeps a task open while its criterion's check fails.
TASK_EVENTS = {"PostToolUse": "post-tool-use", "TaskCompleted": "task-completed"}
# A matcher other than "" for an event: the tools whose calls run the hook.
MATCHERS = {"PostToolUse": "TaskCreate|TaskUpdate|TodoWrite"}
# The variable that turns Claude Code's task tools on (`install --tasks` sets it in the
# settings file's `env`), and the one whose false value gives TodoWrite instead.
TASKS_ENV = "CLAUDE_CODE_ENABLE_TODO_TOOLS"
TASKS_OFF_ENV = "CLAUDE_CODE_ENABLE_TASKS"
ON = "1"
# How Claude Code reads a variable as true or as false (anything else: not set).
TRUTHY = ("1", "true", "yes", "on")
FALSY = ("0", "false", "no", "off")
# Events whose matcher group carries `"matcher": ""` (match every source / trigger).
MATCHER_EVENTS = frozenset({"SessionStart", "PreCompact"})
TIMEOUT = 30
# The Stop hook may run the loop's checks (verify-on-stop) for up to
# limits.STOP_VERIFY_BUDGET seconds; its timeout leaves room for that.
TIMEOUTS = {"Stop": limits.STOP_HOOK_TIMEOUT, "TaskCompleted": limits.STOP_HOOK_TIMEOUT}


@dataclass(frozen=True)
class InstalledHook:
    """One ralphstate hook found in one of Claude Code's settings files."""

    scope: str
    path: Path
    event: str
    command: str
    # As written in the settings file; not part of what makes two hooks the same.
    timeout: object = field(default=None, compare=False)


def settings_path(scope: str, root: Path, home: Path | None = None) -> Path:
    """The settings file Claude Code reads for `scope`."""
    if scope == "project":
        return root / ".claude" / "settings.json"
    if scope == "local":
        return root / ".claude" / "settings.local.json"
    if scope == "user":
        return (Path.home() if home is None else home) / ".claude" / "settings.json"
    raise RalphstateError(f"Unknown scope {scope!r}; expected project, local or user.")


def hook_command(event: str, agent: str | None = None) -> str:
    """The command Claude Code runs for `event`: this interpreter, by absolute,
    double-quoted path, importing the hook in isolated mode, so it works from any
    directory and imports nothing from it (`install.command`)."""
    try:
        sub = {**EVENTS, **TASK_EVENTS}[event]
    except KeyError:
        raise ValueError(f"unknown hook event {event!r}") from None
    return shell_command(sub, agent)


def read_settings(path: Path) -> dict[str, Any] | None:
    """The settings object in `path`, None when there is no file; RalphstateError when it
    is not something Claude Code (or ralphstate) can use."""
    raw = settings.read_bytes(path)
    return None if raw is None else parse(raw, path)


def parse(raw: bytes, path: Path) -> dict[str, Any]:
    """A Claude Code settings file's object (`settings.parse`, our events as lists)."""
    return settings.parse(raw, path, [*EVENTS, *TASK_EVENTS])


def install(
    scope: str,
    root: Path,
    *,
    uninstall: bool = False,
    home: Path | None = None,
    tasks: bool = False,
) -> InstallResult:
    """Add (or with `uninstall`, remove) ralphstate's hooks in the `scope` settings file;
    with `tasks`, the task hooks too, and `env.CLAUDE_CODE_ENABLE_TODO_TOOLS` when the
    file does not set it. `uninstall` removes every hook of ours and the `env` key
    install added (as recorded in `storage.installed`), if it still has the value
    install wrote.

    Idempotent: when nothing needs to change the file is not written at all.
    """
    path = settings_path(scope, root, home)
    events = {**EVENTS, **TASK_EVENTS} if tasks else EVENTS
    commands = {} if uninstall else {event: hook_command(event) for event in events}
    before = installed.added(path)
    after: list[Added] = []

    def edit(data: dict[str, Any]) -> list[str]:
        after.clear()
        if uninstall:
            return _remove_all(data) + _remove_env(data, before)
        actions = _add_all(data, commands)
        if tasks:
            made = _add_env(data, path, before)
            actions += made[0]
            after.append(made[1])
        return actions

    result = settings.update(path, parse, edit)
    now = after[0] if after else (None if uninstall else before)
    if now is not before and (now is not None or before.env):
        try:
            installed.remember(path, now)
        except RalphstateError as exc:
            result.actions.append(f"note: {exc}")
    return result


def _add_env(data: dict[str, Any], path: Path, before: Added) -> tuple[list[str], Added]:
    """Turn the task tools on in the file's `env`, unless it says something already:
    (what was done, what install has added to this file now)."""
    env = data.get("env")
    if env is not None and not isinstance(env, dict):
        raise RalphstateError(f'"env" in {path} is not an object; nothing was changed.')
    made_env = env is None
    env = data.setdefault("env", {})
    actions: list[str] = []
    value = env.get(TASKS_ENV)
    if value is None:
        env[TASKS_ENV] = ON
        actions.append(f'turned the task tools on: env.{TASKS_ENV} = "{ON}"')
        now = Added({**before.env, TASKS_ENV: ON}, before.made_env or made_env)
    else:
        shown = json_value(value)
        if str(value).strip().lower() in TRUTHY:
            actions.append(f"the task tools are on already: env.{TASKS_ENV} = {shown}")
        else:
            actions.append(
                f"note: env.{TASKS_ENV} is {shown} in this file, left as it is; the task tools"
                " are on only when it is 1"
            )
        now = before
    off = env.get(TASKS_OFF_ENV)
    if off is not None and str(off).strip().lower() in FALSY:
        actions.append(
            f"note: env.{TASKS_OFF_ENV} is {json_value(off)}: Claude Code offers TodoWrite"
            " instead of TaskCreate and TaskUpdate"
        )
    return actions, now


def _remove_env(data: dict[str, Any], before: Added) -> list[str]:
    """Remove the `env` keys install added, those that still have the value it wrote,
    and the `env` object when install made it and nothing is left in it."""
    env = data.get("env")
    if not before.env or not isinstance(env, dict):
        return []
    actions: list[str] = []
    for key, value in before.env.items():
        if key in env and env[key] == value:
            del env[key]
            actions.append(f"removed env.{key}")
    if before.made_env and not env:
        del data["env"]
    return actions


def json_value(value: object) -> str:
    """A settings value as JSON writes it, on one line."""
    import json

    return json.dumps(value, ensure_ascii=False)


def find_installed(root: Path, home: Path | None = None) -> list[InstalledHook]:
    """ralphstate's hooks in every scope's settings file, for `ralphstate doctor`.

    Files that are missing or unreadable are skipped; `read_settings` says why.
    """
    found: list[InstalledHook] = []
    seen: set[Path] = set()
    for scope in SCOPES:
        path = settings_path(scope, root, home)
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        try:
            data = read_settings(path)
        except RalphstateError:
            continue
        hooks = data.get("hooks") if data else None
        if not isinstance(hooks, dict):
            continue
        for event, groups in hooks.items():
            for _group, handler in settings.handlers(groups):
                if own_subcommand(handler.get("command")) is not None:
                    found.append(
                        InstalledHook(
                            scope, path, event, handler["command"], handler.get("timeout")
                        )
                    )
    return found


def _add_all(data: dict[str, Any], commands: dict[str, str]) -> list[str]:
    hooks = data.setdefault("hooks", {})
    actions: list[str] = []
    for event, command in commands.items():
        actions += _add(hooks, event, command)
    if data.get("disableAllHooks") is True:
        actions.append("note: disableAllHooks is true in this file, so Claude Code runs no hooks")
    return actions


def _add(hooks: dict[str, Any], event: str, command: str) -> list[str]:
    groups = hooks.setdefault(event, [])
    own = _own(groups, {**EVENTS, **TASK_EVENTS}[event])
    if not own:
        group: dict[str, Any] = {"matcher": ""} if event in MATCHER_EVENTS else {}
        if event in MATCHERS:
            group["matcher"] = MATCHERS[event]
        timeout = TIMEOUTS.get(event, TIMEOUT)
        group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
        groups.append(group)
        return [f"added {event} hook: {command}"]
    actions: list[str] = []
    group, handler = own[0]
    wanted = MATCHERS.get(event)
    if wanted is not None and group.get("matcher") != wanted and len(group["hooks"]) == 1:
        actions.append(f"set the {event} hook's matcher to {wanted} (was {group.get('matcher')!r})")
        group["matcher"] = wanted
    if handler.get("type") != "command" or handler.get("command") != command:
        actions.append(f"updated {event} hook: {command} (was: {handler.get('command')})")
        handler["type"] = "command"
        handler["command"] = command
    needed = TIMEOUTS.get(event, TIMEOUT)
    current = handler.get("timeout")
    if "timeout" not in handler:
        handler["timeout"] = needed
    elif event in TIMEOUTS and (
        isinstance(current, bool) or not isinstance(current, (int, float)) or current < needed
    ):
        handler["timeout"] = needed
        actions.append(f"raised the {event} hook's timeout to {needed}s (was {current!r})")
    for group, extra in own[1:]:
        settings.drop(group, extra)
        actions.append(f"removed duplicate {event} hook: {extra.get('command')}")
    settings.prune(groups, [group for group, _handler in own[1:]])
    return actions or [f"{event} hook already installed: {command}"]


def _remove_all(data: dict[str, Any]) -> list[str]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return ["no ralphstate hooks to remove"]
    actions: list[str] = []
    for event, sub in {**EVENTS, **TASK_EVENTS}.items():
        groups = hooks.get(event)
        if groups is None:
            continue
        own = _own(groups, sub)
        for group, handler in own:
            settings.drop(group, handler)
            actions.append(f"removed {event} hook: {handler.get('command')}")
        settings.prune(groups, [group for group, _handler in own])
        if own and not groups:
            del hooks[event]
    if actions and not hooks:
        del data["hooks"]
    return actions or ["no ralphstate hooks to remove"]


def _own(groups: list[Any], sub: str) -> list[settings.Handler]:
    return [(g, h) for g, h in settings.handlers(groups) if own_subcommand(h.get("command")) == sub]
