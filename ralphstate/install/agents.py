"""`ralphstate install [--agent NAME]`: ralphstate's hooks in an agent's hook file, or
its plugin; and the hooks `doctor` finds.

Every agent is installed the same way, from what its module says of its hook file
(`agents.contract.HookFile`): a hook file is edited by `install.hookfile`, a plugin of
ralphstate's own written by `install.plugin`, with the same guarantees
(`install.settings`): everything else in the file is kept, our entries are recognised
by their command (`install.command`: `... stop --agent codex`) and replaced in place, a
second run changes nothing, `--uninstall` removes only ours, and a file that is not
what the agent expects is reported, never rewritten. The default agent's command
names no `--agent`. With `--tasks`, an agent's task hooks too (Claude Code's), and its
task tools turned on (`install.taskenv`). Claude Code has a third scope, local
(`.claude/settings.local.json`, the person's own, its default).

| agent    | project file                   | user file                               | shape   |
|----------|--------------------------------|-----------------------------------------|---------|
| claude   | .claude/settings.json          | ~/.claude/settings.json                 | grouped |
| codex    | .codex/hooks.json              | $CODEX_HOME/hooks.json                  | grouped |
| gemini   | .gemini/settings.json          | ~/.gemini/settings.json                 | grouped |
| cursor   | .cursor/hooks.json             | ~/.cursor/hooks.json                    | flat    |
| copilot  | .github/hooks/ralphstate.json  | $COPILOT_HOME/hooks/ralphstate.json     | flat    |
| opencode | .opencode/plugin/ralphstate.ts | ~/.config/opencode/plugin/ralphstate.ts | plugin  |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralphstate.agents import table
from ralphstate.agents.contract import Agent, HookCommand
from ralphstate.core.errors import RalphstateError
from ralphstate.core.schema import DEFAULT_AGENT
from ralphstate.install import hookfile, plugin, settings, taskenv
from ralphstate.install.command import own_subcommand, powershell_command, shell_command
from ralphstate.install.settings import InstallResult
from ralphstate.loop.enforcement import hook_file_path

SCOPES = ("project", "local", "user")


@dataclass(frozen=True)
class AgentHook:
    """One ralphstate hook found in an agent's hook file (or its plugin)."""

    agent: str
    scope: str
    path: Path
    event: str
    command: str
    # As written in the file; not part of what makes two hooks the same.
    timeout: object = field(default=None, compare=False)


def hooks_path(agent: str, scope: str, root: Path, home: Path | None = None) -> Path:
    """The file `agent` reads its hooks from for `scope` (`loop.enforcement`, which
    looks for the hooks there too)."""
    hook_file = _agent(agent).hook_file
    if scope in hook_file.scopes:
        return Path(
            hook_file_path(hook_file, scope, str(root), None if home is None else str(home))
        )
    if scope in SCOPES:
        wanted = " or ".join(f"--scope {s}" for s in hook_file.scopes)
        raise RalphstateError(f"{agent} has no {scope!r} scope; use {wanted}.")
    raise RalphstateError(f"Unknown scope {scope!r}; expected project, local or user.")


def hook_command(event: str, agent: str | None = None) -> str:
    """The sh command of the hook for the default agent's `event` (Claude Code's event
    names), with `--agent AGENT` when one is given: this interpreter, by absolute,
    double-quoted path, importing the hook in isolated mode, so it works from any
    directory and imports nothing from it (`install.command`)."""
    try:
        sub = table.get(DEFAULT_AGENT).hook_file.all_events[event]
    except KeyError:
        raise ValueError(f"unknown hook event {event!r}") from None
    return shell_command(sub, agent)


def read_file(agent: str, path: Path) -> dict[str, Any] | None:
    """The hook file's object in `path`, None when there is no file; RalphstateError
    when it is not something the agent (or ralphstate) can use."""
    raw = settings.read_bytes(path)
    return None if raw is None else _parse(_agent(agent), raw, path)


def install_agent(
    agent: str,
    scope: str,
    root: Path,
    *,
    uninstall: bool = False,
    home: Path | None = None,
    tasks: bool = False,
    allow: bool = False,
    hooks: bool = True,
) -> InstallResult:
    """Add (or remove) ralphstate's hooks in `agent`'s file for `scope`; with `tasks`,
    its task hooks too; with `allow`, the `permissions.allow` rules of the agent's own
    ralphstate commands (Claude Code's: `install.permissions`); without `hooks`, those
    rules alone."""
    spec = _agent(agent)
    hook_file = spec.hook_file
    path = hooks_path(agent, scope, root, home)
    if (allow or not hooks) and not hook_file.task_events:
        raise RalphstateError(f"{spec.title} has no permission rules ralphstate writes.")
    if hook_file.plugin is not None:
        return plugin.install(spec, path, uninstall=uninstall)
    if tasks and not hook_file.task_events:
        raise RalphstateError(f"{spec.title} has no task hooks.")
    events = hook_file.all_events if tasks else hook_file.events
    wanted = {} if uninstall else {e: _handler(spec, sub) for e, sub in events.items()}

    def load(raw: bytes, path: Path) -> dict[str, Any]:
        return _parse(spec, raw, path)

    def edit(data: dict[str, Any]) -> list[str]:
        if not hooks:
            return []
        if uninstall:
            return hookfile.remove_all(hook_file, data)
        return hookfile.add_all(hook_file, data, wanted)

    if hook_file.task_events:
        return taskenv.update(
            path,
            load,
            edit,
            tasks=tasks,
            uninstall=uninstall,
            allow=allow,
            hooks=hooks,
            within=root if scope in ("project", "local") else None,
        )

    def nothing_left(data: dict[str, Any]) -> bool:  # our own file, now empty
        return hook_file.own_file and uninstall and data == {"version": hookfile.FILE_VERSION}

    within = root if scope in ("project", "local") else None  # a project's own file
    return settings.update(path, load, edit, remove_when=nothing_left, within=within)


def find_installed(
    root: Path, home: Path | None = None, agent: str | None = None
) -> list[AgentHook]:
    """ralphstate's hooks in every agent's files (or `agent`'s), every scope, for
    `doctor`; files that are missing or unreadable are skipped."""
    found: list[AgentHook] = []
    for spec in table.every().values() if agent is None else [_agent(agent)]:
        seen: set[Path] = set()
        for scope in spec.hook_file.scopes:
            path = hooks_path(spec.name, scope, root, home)
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            found += _found(spec, scope, path)
    return found


def _found(spec: Agent, scope: str, path: Path) -> list[AgentHook]:
    """Our hooks in one file, under any event, in the file's order."""
    hook_file = spec.hook_file
    if hook_file.plugin is not None:
        command = plugin.installed(spec, path)
        event = next(iter(hook_file.events))
        return [] if command is None else [AgentHook(spec.name, scope, path, event, command)]
    try:
        data = read_file(spec.name, path)
    except RalphstateError:
        return []
    hooks = data.get("hooks") if data else None
    if not isinstance(hooks, dict):
        return []
    found: list[AgentHook] = []
    for event, listed in hooks.items():
        for _container, handler in hookfile.entries(hook_file, listed):
            command = hookfile.command(hook_file, handler)
            if command is not None and own_subcommand(command) is not None:
                found.append(
                    AgentHook(spec.name, scope, path, event, command, handler.get("timeout"))
                )
    return found


def _agent(name: str) -> Agent:
    try:
        return table.get(name)
    except KeyError:
        raise RalphstateError(
            f"unknown agent {name!r}; expected one of {', '.join(table.NAMES)}."
        ) from None


def _handler(spec: Agent, sub: str) -> dict[str, Any]:
    """Our handler for `sub` in `spec`'s hook file, as its module shapes it."""
    if spec.hook_file.handler is None:
        raise RalphstateError(f"{spec.name} has no hook file of handlers.")
    flag = None if spec.name == DEFAULT_AGENT else spec.name
    command = HookCommand(
        sub, shell_command(sub, flag), powershell_command(sub, flag), spec.hook_file.seconds(sub)
    )
    return dict(spec.hook_file.handler(command))


def _parse(spec: Agent, raw: bytes, path: Path) -> dict[str, Any]:
    # The default agent's events are checked too, as for its own settings file.
    checked = [*table.get(DEFAULT_AGENT).hook_file.events, *spec.hook_file.all_events]
    return hookfile.parse(spec.hook_file, raw, path, checked)
