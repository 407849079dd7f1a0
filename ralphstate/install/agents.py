"""`ralphstate install --agent codex|gemini|cursor|copilot|opencode`: each agent's hook file.

Claude Code's settings are handled by `install.claude`; this module writes the same three
hooks (or what the agent offers of them) into the other agents' files, with the same
guarantees (`install.settings`): everything else in the file is kept, our entries are
recognised by their command (`install.command`: `... stop --agent codex`) and replaced
in place, a second run changes nothing, `--uninstall` removes only ours, and a file
that is not what the agent expects is reported, never rewritten.

| agent   | project file                   | user file                          | shape   |
|---------|--------------------------------|------------------------------------|---------|
| codex   | .codex/hooks.json              | $CODEX_HOME/hooks.json             | grouped |
| gemini  | .gemini/settings.json          | ~/.gemini/settings.json            | grouped |
| cursor  | .cursor/hooks.json             | ~/.cursor/hooks.json               | flat    |
| copilot | .github/hooks/ralphstate.json  | $COPILOT_HOME/hooks/ralphstate.json | flat   |
| opencode | .opencode/plugin/ralphstate.ts | ~/.config/opencode/plugin/ralphstate.ts | plugin |

"grouped" is Claude Code's shape (`{"hooks": {EVENT: [{"matcher"?, "hooks": [HANDLER]}]}}`);
"flat" is `{"version": 1, "hooks": {EVENT: [HANDLER]}}`. opencode has no hook file: its
plugin is written by `install.opencode`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphstate.agents import table
from ralphstate.core.errors import RalphstateError
from ralphstate.install import claude, opencode, settings
from ralphstate.install.command import own_subcommand, powershell_command, shell_command
from ralphstate.install.settings import InstallResult

# Every agent `ralphstate install --agent` can write hooks for: each agent of the hook
# adapters' table, Claude Code first. tests/install/test_install_agents.py checks that each has
# a target here (Claude Code's is `install.claude`).
AGENT_NAMES: tuple[str, ...] = tuple(table.AGENTS)
# Cursor's cap on follow-up messages from one stop hook in a conversation; the loop's
# own `maxIterations` still applies below it. A value the person set is kept.
CURSOR_LOOP_LIMIT = 20
_EVENT_OF_SUB = {sub: event for event, sub in claude.EVENTS.items()}
_FILE_VERSION = 1
_TIMEOUT_KEYS = ("timeout", "timeoutSec")


@dataclass(frozen=True)
class Target:
    """Where and how one agent keeps its hooks."""

    agent: str
    project: str  # path under the project root
    user: Callable[[Path], Path]  # the user-scope file, from the home directory
    events: dict[str, str]  # the agent's event name -> `ralphstate hook` subcommand
    flat: bool
    handler: Callable[[str, str], dict[str, Any]]  # (event, sub) -> our handler
    command_keys: tuple[str, ...] = ("command",)
    matcher_events: frozenset[str] = frozenset()
    # A matcher other than "" (every trigger) for an event of `matcher_events`.
    matchers: tuple[tuple[str, str], ...] = ()
    own_file: bool = False  # the file is ralphstate's alone: removed when left empty


def _env_dir(name: str, home: Path, default: str) -> Path:
    value = os.environ.get(name)
    return Path(value) if value else home / default


def _timeout(sub: str) -> int:
    """Seconds a hook may run: the Stop hook leaves room for verify-on-stop's budget
    (limits.STOP_VERIFY_BUDGET), as `install` does for Claude Code."""
    return claude.TIMEOUTS.get(_EVENT_OF_SUB[sub], claude.TIMEOUT)


def _grouped(
    agent: str, unit: int = 1, names: bool = False
) -> Callable[[str, str], dict[str, Any]]:
    def handler(event: str, sub: str) -> dict[str, Any]:
        windows = agent == "gemini" and os.name == "nt"  # Gemini CLI runs PowerShell there
        out: dict[str, Any] = {"type": "command"}
        if names:
            out["name"] = f"ralphstate-{sub}"
        command = powershell_command if windows else shell_command
        out["command"] = command(sub, agent)
        out["timeout"] = _timeout(sub) * unit
        return out

    return handler


def _cursor(event: str, sub: str) -> dict[str, Any]:
    return {"command": shell_command(sub, "cursor"), "loop_limit": CURSOR_LOOP_LIMIT}


def _copilot(event: str, sub: str) -> dict[str, Any]:
    return {
        "type": "command",
        "bash": shell_command(sub, "copilot"),
        "powershell": powershell_command(sub, "copilot"),
        "timeoutSec": _timeout(sub),
    }


TARGETS = {
    "codex": Target(
        "codex",
        ".codex/hooks.json",
        lambda home: _env_dir("CODEX_HOME", home, ".codex") / "hooks.json",
        {"Stop": "stop", "SessionStart": "session-start", "PreCompact": "pre-compact"},
        flat=False,
        handler=_grouped("codex"),
        matcher_events=frozenset({"SessionStart", "PreCompact"}),
    ),
    "gemini": Target(
        "gemini",
        ".gemini/settings.json",
        lambda home: home / ".gemini" / "settings.json",
        {"AfterAgent": "stop", "SessionStart": "session-start", "PreCompress": "pre-compact"},
        flat=False,
        handler=_grouped("gemini", 1000, names=True),  # milliseconds
        matcher_events=frozenset({"SessionStart", "PreCompress"}),
        # Gemini CLI fires PreCompress with `trigger: "auto"` before every model call,
        # whether or not it then compresses: the checkpoint is taken at `/compress` only,
        # so no process starts and nothing is written at each call (docs/agents.md).
        matchers=(("PreCompress", "manual"),),
    ),
    "cursor": Target(
        "cursor",
        ".cursor/hooks.json",
        lambda home: home / ".cursor" / "hooks.json",
        {"stop": "stop"},
        flat=True,
        handler=_cursor,
    ),
    "copilot": Target(
        "copilot",
        ".github/hooks/ralphstate.json",
        lambda home: _env_dir("COPILOT_HOME", home, ".copilot") / "hooks" / "ralphstate.json",
        {"agentStop": "stop", "sessionStart": "session-start", "preCompact": "pre-compact"},
        flat=True,
        handler=_copilot,
        command_keys=("bash", "command", "powershell"),
        own_file=True,
    ),
}


@dataclass(frozen=True)
class AgentHook:
    """One ralphstate hook found in an agent's hook file."""

    agent: str
    scope: str
    path: Path
    event: str
    command: str


def hooks_path(agent: str, scope: str, root: Path, home: Path | None = None) -> Path:
    if agent == "opencode":
        return opencode.plugin_path(scope, root, home)
    target = _target(agent)
    if scope == "project":
        return root / target.project
    if scope == "user":
        return target.user(Path.home() if home is None else home)
    raise RalphstateError(f"{agent} has no {scope!r} scope; use --scope project or --scope user.")


def install_agent(
    agent: str, scope: str, root: Path, *, uninstall: bool = False, home: Path | None = None
) -> InstallResult:
    """Add (or remove) ralphstate's hooks in `agent`'s file for `scope`."""
    if agent == "claude":
        return claude.install(scope, root, uninstall=uninstall, home=home)
    if agent == "opencode":
        return opencode.install(scope, root, uninstall=uninstall, home=home)
    target = _target(agent)
    path = hooks_path(agent, scope, root, home)
    wanted = {} if uninstall else {e: target.handler(e, s) for e, s in target.events.items()}

    def load(raw: bytes, path: Path) -> dict[str, Any]:
        return _parse(target, raw, path)

    def edit(data: dict[str, Any]) -> list[str]:
        return _remove_all(target, data) if uninstall else _add_all(target, data, wanted)

    def nothing_left(data: dict[str, Any]) -> bool:  # our own file, now empty
        return target.own_file and uninstall and data == {"version": _FILE_VERSION}

    return settings.update(path, load, edit, remove_when=nothing_left)


def find_installed(root: Path, home: Path | None = None) -> list[AgentHook]:
    """ralphstate's hooks in every other agent's project and user files, for `doctor`;
    files that are missing or unreadable are skipped."""
    found: list[AgentHook] = []
    for agent, target in TARGETS.items():
        seen: set[Path] = set()
        for scope in ("project", "user"):
            path = hooks_path(agent, scope, root, home)
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            try:
                raw = settings.read_bytes(path)
                data = None if raw is None else _parse(target, raw, path)
            except RalphstateError:
                continue
            for event, sub in target.events.items():
                for _group, handler in _own(target, (data or {}).get("hooks", {}).get(event), sub):
                    command = _command(target, handler) or ""
                    found.append(AgentHook(agent, scope, path, event, command))
    for scope in ("project", "user"):
        plugin = opencode.installed(scope, root, home)
        if plugin is not None and all(h.path != plugin[0] for h in found):
            found.append(AgentHook("opencode", scope, plugin[0], "session.idle", plugin[1]))
    return found


# -- the file ------------------------------------------------------------------------


def _target(agent: str) -> Target:
    try:
        return TARGETS[agent]
    except KeyError:
        raise RalphstateError(
            f"unknown agent {agent!r}; expected one of {', '.join(AGENT_NAMES)}."
        ) from None


def _parse(target: Target, raw: bytes, path: Path) -> dict[str, Any]:
    # Claude Code's events are checked too, as for its own settings file.
    data = settings.parse(raw, path, [*claude.EVENTS, *target.events])
    if target.flat and data.get("version", _FILE_VERSION) != _FILE_VERSION:
        raise RalphstateError(
            f'{path} has "version": {data["version"]!r}, not {_FILE_VERSION}; nothing was changed.'
        )
    return data


def _command(target: Target, handler: dict[str, Any]) -> str | None:
    for key in target.command_keys:
        if isinstance(handler.get(key), str):
            return str(handler[key])
    return None


def _own(target: Target, entries: object, sub: str) -> list[tuple[Any, dict[str, Any]]]:
    """(container, handler) pairs of our handlers for `sub`: the matcher group for the
    grouped shape, the event's list itself for the flat one."""
    if target.flat:
        if not isinstance(entries, list):
            return []
        pairs: list[tuple[Any, dict[str, Any]]] = [
            (entries, h) for h in entries if isinstance(h, dict)
        ]
    else:
        pairs = list(settings.handlers(entries))
    return [(c, h) for c, h in pairs if own_subcommand(_command(target, h)) == sub]


def _add_all(target: Target, data: dict[str, Any], wanted: dict[str, dict[str, Any]]) -> list[str]:
    if target.flat:
        data.setdefault("version", _FILE_VERSION)
    hooks = data.setdefault("hooks", {})
    actions: list[str] = []
    for event, handler in wanted.items():
        actions += _add(target, hooks, event, handler)
    return actions


def _add(target: Target, hooks: dict[str, Any], event: str, handler: dict[str, Any]) -> list[str]:
    entries = hooks.setdefault(event, [])
    own = _own(target, entries, target.events[event])
    shown = _command(target, handler)
    matcher = dict(target.matchers).get(event, "")
    if not own:
        if target.flat:
            entries.append(handler)
        else:
            group: dict[str, Any] = {"matcher": matcher} if event in target.matcher_events else {}
            group["hooks"] = [handler]
            entries.append(group)
        return [f"added {event} hook: {shown}"]
    actions: list[str] = []
    container, mine = own[0]
    # A group shared with the person's hooks keeps its matcher: narrowing it would
    # narrow theirs too.
    alone = not target.flat and all(h is mine for h in container["hooks"])
    if matcher and alone and container.get("matcher") != matcher:
        actions.append(
            f"narrowed {event} hook to matcher {matcher!r} (was {container.get('matcher')!r})"
        )
        container["matcher"] = matcher
    was = _command(target, mine)
    for key, value in handler.items():
        limit = key in ("timeout", "timeoutSec", "loop_limit", "name")
        if limit and key in mine:
            if key in _TIMEOUT_KEYS and target.events[event] == "stop" and _below(mine[key], value):
                actions.append(f"raised the {event} hook's {key} to {value} (was {mine[key]!r})")
                mine[key] = value
            continue  # a limit or a name the person set is theirs, unless too short to verify
        mine[key] = value
    if was != shown:
        actions.append(f"updated {event} hook: {shown} (was: {was})")
    for container, extra in own[1:]:
        _drop(target, container, extra)
        actions.append(f"removed duplicate {event} hook: {_command(target, extra)}")
    if not target.flat:
        settings.prune(entries, [c for c, _h in own[1:]])
    return actions or [f"{event} hook already installed: {shown}"]


def _below(current: object, needed: int) -> bool:
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        return True
    return current < needed


def _drop(target: Target, container: Any, handler: dict[str, Any]) -> None:
    if target.flat:
        container[:] = [h for h in container if h is not handler]
    else:
        settings.drop(container, handler)


def _remove_all(target: Target, data: dict[str, Any]) -> list[str]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return ["no ralphstate hooks to remove"]
    actions: list[str] = []
    for event, sub in target.events.items():
        entries = hooks.get(event)
        own = _own(target, entries, sub)
        for container, handler in own:
            _drop(target, container, handler)
            actions.append(f"removed {event} hook: {_command(target, handler)}")
        if own and isinstance(entries, list) and not target.flat:
            settings.prune(entries, [c for c, _h in own])
        if own and not entries:
            del hooks[event]
    if actions and not hooks:
        del data["hooks"]
    return actions or ["no ralphstate hooks to remove"]
