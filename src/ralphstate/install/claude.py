"""`ralphstate install`: merge ralphstate's hooks into Claude Code's settings file.

Claude Code reads hooks from `.claude/settings.json` (project),
`.claude/settings.local.json` (local) and `~/.claude/settings.json` (user), in this
shape (https://code.claude.com/docs/en/hooks):

    {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": ..., "timeout": 30}]}],
               "SessionStart": [{"matcher": "", "hooks": [...]}],
               "PreCompact": [{"matcher": "", "hooks": [...]}]}}

Stop takes no matcher; for SessionStart and PreCompact an empty matcher matches every
source and trigger. Everything else in the file is kept as it is, in its order. Our own
entries are recognised by their command (`ralphstate hook stop`, `... -m ralphstate hook
stop`, any path in front), so an upgrade replaces them in place and an uninstall removes
only them. A file that is not what Claude Code expects is reported, never rewritten.
"""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.fsio import atomic_write, makedirs

SCOPES = ("project", "local", "user")
# Claude Code event name -> `ralphstate hook` subcommand, in the order they are written.
EVENTS = {"Stop": "stop", "SessionStart": "session-start", "PreCompact": "pre-compact"}
# Events whose matcher group carries `"matcher": ""` (match every source / trigger).
MATCHER_EVENTS = frozenset({"SessionStart", "PreCompact"})
TIMEOUT = 30
# The Stop hook may run the loop's checks (verify-on-stop) for up to
# limits.STOP_VERIFY_BUDGET seconds; its timeout leaves room for that.
TIMEOUTS = {"Stop": limits.STOP_HOOK_TIMEOUT}
_SCRIPT = "ralphstate.exe" if os.name == "nt" else "ralphstate"
_SUBCOMMANDS = "|".join(EVENTS.values())
_OWN = re.compile(
    rf"""(?:^|[\s"'/\\])ralphstate(?:\.exe)?["']?\s+hook\s+({_SUBCOMMANDS})(?=[\s"']|$)"""
    rf"""|(?:^|\s)-m\s+ralphstate\s+hook\s+({_SUBCOMMANDS})(?=[\s"']|$)""",
    re.IGNORECASE,
)
_AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_SH_ESCAPED = '"\\$`'
_WRITE_ATTEMPTS = 5


@dataclass
class InstallResult:
    """What `install` did: the settings file, whether it was rewritten, and each step."""

    path: Path
    changed: bool
    actions: list[str] = field(default_factory=list)


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
    """The command Claude Code runs for `event`, with absolute, double-quoted paths.

    The installed console script beside this interpreter when there is one, else this
    interpreter with `-m ralphstate`; either way it works from any directory.
    """
    try:
        sub = EVENTS[event]
    except KeyError:
        raise ValueError(f"unknown hook event {event!r}") from None
    suffix = ""
    if agent is not None:
        if not _AGENT_NAME.fullmatch(agent):
            raise ValueError(f"invalid agent name {agent!r}")
        suffix = f" --agent {agent}"
    script = _console_script()
    if script is not None:
        return f"{_quote(script)} hook {sub}{suffix}"
    if not sys.executable:
        raise RalphstateError(
            "Cannot tell which Python runs ralphstate; run `ralphstate install` from an"
            " installed ralphstate command."
        )
    return f"{_quote(os.path.abspath(sys.executable))} -m ralphstate hook {sub}{suffix}"


def _console_script() -> str | None:
    candidates = [Path(os.path.abspath(sys.executable)).parent] if sys.executable else []
    scripts = sysconfig.get_path("scripts")
    if scripts:
        candidates.append(Path(scripts))
    for directory in candidates:
        path = directory / _SCRIPT
        if path.is_file():
            return str(path)
    return None


def _quote(path: str) -> str:
    """`path` in double quotes for the shell Claude Code runs hooks with (sh, or Git Bash
    on Windows, where forward slashes keep the path free of backslash escapes)."""
    if os.name == "nt":
        path = path.replace("\\", "/")
    return '"' + "".join("\\" + c if c in _SH_ESCAPED else c for c in path) + '"'


def command_target(command: str) -> str | None:
    """The program a hook command starts: the path in its leading quotes, else its first
    word (which may be a bare name to look up on PATH). None for an empty or unbalanced
    command."""
    text = command.lstrip()
    if not text:
        return None
    if text[0] == "'":
        end = text.find("'", 1)
        return (text[1:end] or None) if end > 0 else None
    if text[0] != '"':
        return text.split(None, 1)[0]
    out: list[str] = []
    i = 1
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in _SH_ESCAPED:
            out.append(text[i + 1])
            i += 2
            continue
        if char == '"':
            return "".join(out) or None
        out.append(char)
        i += 1
    return None


def own_subcommand(command: object) -> str | None:
    """`stop`, `session-start` or `pre-compact` when `command` runs ralphstate's hook."""
    if not isinstance(command, str):
        return None
    match = _OWN.search(command)
    if match is None:
        return None
    return (match.group(1) or match.group(2)).lower()


def read_settings(path: Path) -> dict[str, Any] | None:
    """The settings object in `path`, None when there is no file; RalphstateError when it
    is not something Claude Code (or ralphstate) can use."""
    raw = _read_bytes(path)
    return None if raw is None else _parse(raw, path)


def install(
    scope: str, root: Path, *, uninstall: bool = False, home: Path | None = None
) -> InstallResult:
    """Add (or with `uninstall`, remove) ralphstate's hooks in the `scope` settings file.

    Idempotent: when nothing needs to change the file is not written at all.
    """
    path = settings_path(scope, root, home)
    commands = {} if uninstall else {event: hook_command(event) for event in EVENTS}
    target = path.resolve() if path.is_symlink() else path  # write through a symlink
    for _ in range(_WRITE_ATTEMPTS):
        original = _read_bytes(target)
        data = {} if original is None else _parse(original, path)
        before = copy.deepcopy(data)
        actions = _remove_all(data) if uninstall else _add_all(data, commands)
        if data == before:
            return InstallResult(path, False, actions)
        payload = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        mode = _mode(target)
        try:
            makedirs(target.parent)  # never world-writable, whatever the umask
            written = atomic_write(target, payload, still_ok=_unchanged(target, original))
            if written and mode is not None:
                os.chmod(target, mode)  # keep a private settings file private
        except OSError as exc:
            raise RalphstateError(f"Cannot write {path}: {exc.strerror or exc}.") from None
        if written:
            return InstallResult(path, True, actions)
    raise RalphstateError(
        f"{path} kept changing while ralphstate was updating it; nothing was written, try again."
    )


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
            for _group, handler in _handlers(groups):
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
    own = _own(groups, EVENTS[event])
    if not own:
        group: dict[str, Any] = {"matcher": ""} if event in MATCHER_EVENTS else {}
        timeout = TIMEOUTS.get(event, TIMEOUT)
        group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
        groups.append(group)
        return [f"added {event} hook: {command}"]
    actions: list[str] = []
    _group, handler = own[0]
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
        _drop(group, extra)
        actions.append(f"removed duplicate {event} hook: {extra.get('command')}")
    _prune(groups, [group for group, _handler in own[1:]])
    return actions or [f"{event} hook already installed: {command}"]


def _remove_all(data: dict[str, Any]) -> list[str]:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return ["no ralphstate hooks to remove"]
    actions: list[str] = []
    for event, sub in EVENTS.items():
        groups = hooks.get(event)
        if groups is None:
            continue
        own = _own(groups, sub)
        for group, handler in own:
            _drop(group, handler)
            actions.append(f"removed {event} hook: {handler.get('command')}")
        _prune(groups, [group for group, _handler in own])
        if own and not groups:
            del hooks[event]
    if actions and not hooks:
        del data["hooks"]
    return actions or ["no ralphstate hooks to remove"]


def _handlers(groups: object) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(matcher group, handler) pairs, skipping anything malformed (left as it is)."""
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    if not isinstance(groups, list):
        return pairs
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            pairs += [(group, h) for h in group["hooks"] if isinstance(h, dict)]
    return pairs


def _own(groups: list[Any], sub: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(g, h) for g, h in _handlers(groups) if own_subcommand(h.get("command")) == sub]


def _drop(group: dict[str, Any], handler: dict[str, Any]) -> None:
    group["hooks"] = [h for h in group["hooks"] if h is not handler]


def _prune(groups: list[Any], touched: list[dict[str, Any]]) -> None:
    """Remove the matcher groups that our removals left empty, and only those."""
    emptied = [g for g in touched if not g["hooks"]]
    groups[:] = [g for g in groups if not any(g is e for e in emptied)]


def _unchanged(path: Path, original: bytes | None) -> Callable[[], bool]:
    """Asked just before the replace: has anyone else written the file meanwhile?"""
    return lambda: _read_bytes(path) == original


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RalphstateError(f"Cannot read {path}: {exc.strerror or exc}.") from None


def _parse(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RalphstateError(f"{path} is not UTF-8 text; nothing was changed.") from None
    if not text.strip():
        return {}  # an empty file holds nothing to lose
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RalphstateError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno});"
            " fix it and run again, nothing was changed."
        ) from None
    if not isinstance(data, dict):
        raise RalphstateError(f"{path} does not hold a JSON object; nothing was changed.")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise RalphstateError(f'"hooks" in {path} is not an object; nothing was changed.')
    for event in EVENTS:
        if event in hooks and not isinstance(hooks[event], list):
            raise RalphstateError(f'"hooks.{event}" in {path} is not a list; nothing was changed.')
    return data


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
