"""One agent's hook file, edited: ralphstate's hooks added, updated or removed, and the
rest of the file kept as it is, in its order.

The file's shape is the agent's (`agents.contract.HookFile`): "grouped", Claude Code's
`{"hooks": {EVENT: [{"matcher"?, "hooks": [HANDLER]}]}}`, or "flat",
`{"version": 1, "hooks": {EVENT: [HANDLER]}}`. Our entries are recognised by their
command (`install.command`: `... stop --agent codex`, or an older version's form) and
replaced in place, so an upgrade updates them and an uninstall removes only them; a
second install changes nothing. A limit or a name the person set on our handler is
theirs, except a Stop (or TaskCompleted) timeout too short for verify-on-stop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralphstate.agents.contract import HookFile
from ralphstate.core.errors import RalphstateError
from ralphstate.install import settings
from ralphstate.install.command import own_subcommand

FILE_VERSION = 1
# Our handler's keys whose value the person may choose; a timeout is raised when too short.
LIMIT_KEYS = ("timeout", "timeoutSec", "loop_limit", "name")
TIMEOUT_KEYS = ("timeout", "timeoutSec")
# The subcommands whose timeout must leave room for verify-on-stop.
LONG = ("stop", "task-completed")
Entry = tuple[Any, dict[str, Any]]  # (the list or matcher group holding it, our handler)


def parse(hook_file: HookFile, raw: bytes, path: Path, checked: list[str]) -> dict[str, Any]:
    """The file's object (`settings.parse`, the `checked` events as lists)."""
    data = settings.parse(raw, path, checked)
    if hook_file.shape == "flat" and data.get("version", FILE_VERSION) != FILE_VERSION:
        raise RalphstateError(
            f'{path} has "version": {data["version"]!r}, not {FILE_VERSION}; nothing was changed.'
        )
    return data


def command(hook_file: HookFile, handler: dict[str, Any]) -> str | None:
    """The command a handler runs, from the first of the agent's command keys."""
    for key in hook_file.command_keys:
        if isinstance(handler.get(key), str):
            return str(handler[key])
    return None


def entries(hook_file: HookFile, listed: object) -> list[Entry]:
    """(container, handler) of every handler under one event: the matcher group for the
    grouped shape, the event's list itself for the flat one."""
    if hook_file.shape != "flat":
        return list(settings.handlers(listed))
    if not isinstance(listed, list):
        return []
    return [(listed, h) for h in listed if isinstance(h, dict)]


def own(hook_file: HookFile, listed: object, sub: str) -> list[Entry]:
    """Our handlers for `sub` under one event."""
    return [
        (c, h)
        for c, h in entries(hook_file, listed)
        if own_subcommand(command(hook_file, h)) == sub
    ]


def add_all(
    hook_file: HookFile, data: dict[str, Any], wanted: dict[str, dict[str, Any]]
) -> list[str]:
    """Add or update our `wanted` handler of each event."""
    if hook_file.shape == "flat":
        data.setdefault("version", FILE_VERSION)
    hooks = data.setdefault("hooks", {})
    actions: list[str] = []
    for event, handler in wanted.items():
        actions += _add(hook_file, hooks, event, handler)
    return actions + (hook_file.notes(data) if hook_file.notes else [])


def _add(
    hook_file: HookFile, hooks: dict[str, Any], event: str, handler: dict[str, Any]
) -> list[str]:
    listed = hooks.setdefault(event, [])
    sub = hook_file.all_events[event]
    found = own(hook_file, listed, sub)
    shown = command(hook_file, handler)
    matcher = hook_file.matchers.get(event, "")
    if not found:
        if hook_file.shape == "flat":
            listed.append(handler)
        else:
            group: dict[str, Any] = (
                {"matcher": matcher} if event in hook_file.matcher_events else {}
            )
            group["hooks"] = [handler]
            listed.append(group)
        return [f"added {event} hook: {shown}"]
    container, mine = found[0]
    actions = _matcher(hook_file, event, container, mine, matcher)
    was = command(hook_file, mine)
    if any(mine.get(key) != value for key, value in handler.items() if key not in LIMIT_KEYS):
        actions.append(f"updated {event} hook: {shown} (was: {was})")
    actions += _keys(hook_file, event, sub, mine, handler)
    for holder, extra in found[1:]:
        _drop(hook_file, holder, extra)
        actions.append(f"removed duplicate {event} hook: {command(hook_file, extra)}")
    if hook_file.shape != "flat":
        settings.prune(listed, [c for c, _h in found[1:]])
    return actions or [f"{event} hook already installed: {shown}"]


def _matcher(
    hook_file: HookFile, event: str, container: Any, mine: dict[str, Any], matcher: str
) -> list[str]:
    """Our group gets its matcher back; a group shared with the person's hooks keeps
    theirs: narrowing it would narrow theirs too."""
    alone = hook_file.shape != "flat" and all(h is mine for h in container["hooks"])
    if not matcher or not alone or container.get("matcher") == matcher:
        return []
    was = container.get("matcher")
    container["matcher"] = matcher
    return [hook_file.matcher_said.format(event=event, matcher=matcher, was=was)]


def _keys(
    hook_file: HookFile, event: str, sub: str, mine: dict[str, Any], handler: dict[str, Any]
) -> list[str]:
    """Our handler's keys set as `handler` has them, but for a limit or a name the
    person set, unless it is a timeout too short to verify."""
    actions: list[str] = []
    for key, value in handler.items():
        if key not in LIMIT_KEYS or key not in mine:
            mine[key] = value
        elif key in TIMEOUT_KEYS and sub in LONG and _below(mine[key], value):
            unit = hook_file.timeout_unit
            actions.append(f"raised the {event} hook's {key} to {value}{unit} (was {mine[key]!r})")
            mine[key] = value
    return actions


def _below(current: object, needed: int) -> bool:
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        return True
    return current < needed


def _drop(hook_file: HookFile, container: Any, handler: dict[str, Any]) -> None:
    if hook_file.shape == "flat":
        container[:] = [h for h in container if h is not handler]
    else:
        settings.drop(container, handler)


def remove_all(hook_file: HookFile, data: dict[str, Any]) -> list[str]:
    """Remove every hook of ours, the task hooks too, and what they leave empty."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return ["no ralphstate hooks to remove"]
    actions: list[str] = []
    for event, sub in hook_file.all_events.items():
        listed = hooks.get(event)
        found = own(hook_file, listed, sub)
        for container, handler in found:
            _drop(hook_file, container, handler)
            actions.append(f"removed {event} hook: {command(hook_file, handler)}")
        if found and isinstance(listed, list) and hook_file.shape != "flat":
            settings.prune(listed, [c for c, _h in found])
        if found and not listed:
            del hooks[event]
    if actions and not hooks:
        del data["hooks"]
    return actions or ["no ralphstate hooks to remove"]
