"""`ralphstate install --sandbox`: Claude Code's sandbox for interactive sessions, with
the write denials `ralphstate run --sandbox claude` gives a run, in the project's local
settings (`.claude/settings.local.json`); `--uninstall` removes exactly them.

Install turns the sandbox on (`sandbox.enabled`, `failIfUnavailable`, no unsandboxed
escape) where the file says nothing of those keys, keeps what the person set there
(and says so), and adds the protected paths to `sandbox.filesystem.denyWrite` and
their `Edit` rules to `permissions.deny`. What it added is recorded per settings file
in the per-user state directory (`sandbox/installed.json`), so `--uninstall` takes
out only that: a key that no longer holds the value install wrote, or an entry the
person added themselves, stays.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ralphstate.core.errors import RalphstateError
from ralphstate.install import settings
from ralphstate.install.settings import InstallResult
from ralphstate.sandbox import ccsettings
from ralphstate.sandbox.reach import Reach
from ralphstate.storage.peruser import home, jsonstore

# The switches install sets when the file does not set them.
SWITCHES = {"enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False}


def _record_path() -> Path:
    return home.state_dir() / "sandbox" / "installed.json"


def _recorded(path: Path) -> dict[str, Any]:
    found = jsonstore.read(_record_path()).get(str(path.absolute()))
    return found if isinstance(found, dict) else {}


def _remember(path: Path, what: dict[str, Any]) -> None:
    key = str(path.absolute())

    def edit(entries: dict[str, Any]) -> None:
        if what:
            entries[key] = what
        else:
            entries.pop(key, None)

    jsonstore.change(_record_path(), "the sandbox settings install added", edit)


def _object(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise RalphstateError(f'"{key}" in {path} is not an object; nothing was changed.')
    return value


def _list(data: dict[str, Any], key: str, path: Path) -> list[Any]:
    value = data.setdefault(key, [])
    if not isinstance(value, list):
        raise RalphstateError(f'"{key}" in {path} is not a list; nothing was changed.')
    return value


def _add(data: dict[str, Any], path: Path, where: Reach, added: dict[str, Any]) -> list[str]:
    wanted = ccsettings.settings(where)
    box = _object(data, "sandbox", path)
    actions: list[str] = []
    for key, value in SWITCHES.items():
        if key not in box:
            box[key] = value
            added.setdefault("switches", {})[key] = value
            actions.append(f"set sandbox.{key} = {str(value).lower()}")
        elif box[key] != value:
            actions.append(f"note: sandbox.{key} is {box[key]!r} in this file, left as it is")
    lists = (
        (_list(_object(box, "filesystem", path), "denyWrite", path), "denyWrite"),
        (_list(_object(data, "permissions", path), "deny", path), "deny"),
    )
    values = (wanted["sandbox"]["filesystem"]["denyWrite"], wanted["permissions"]["deny"])
    count = 0
    for (target, name), new in zip(lists, values, strict=True):
        for value in new:
            if value not in target:
                target.append(value)
                added.setdefault(name, []).append(value)
                count += name == "denyWrite"
    if count:
        actions.append(f"denied writes to {count} protected paths (sandbox and Edit rules)")
    return actions


def _remove(data: dict[str, Any], added: dict[str, Any]) -> list[str]:
    actions: list[str] = []
    box = data.get("sandbox")
    if isinstance(box, dict):
        for key, value in (added.get("switches") or {}).items():
            if box.get(key) == value:
                del box[key]
                actions.append(f"removed sandbox.{key}")
        files = box.get("filesystem")
        if isinstance(files, dict):
            _drop(files, "denyWrite", added.get("denyWrite") or [])
            if not files:
                del box["filesystem"]
        if not box:
            del data["sandbox"]
    rules = data.get("permissions")
    if isinstance(rules, dict):
        _drop(rules, "deny", added.get("deny") or [])
        if not rules:
            del data["permissions"]
    if added.get("denyWrite"):
        actions.append("removed the write denials install added")
    return actions


def _drop(holder: dict[str, Any], key: str, values: list[Any]) -> None:
    found = holder.get(key)
    if isinstance(found, list):
        holder[key] = [v for v in found if v not in values]
        if not holder[key]:
            del holder[key]


def reach_of(root: Path) -> Reach:
    """The protected paths of the project at `root`: its loop's guarded files when it
    has a loop that can be read, git's files and the per-user store."""
    from ralphstate.sandbox.reach import reach
    from ralphstate.storage.loopdir.store import Store
    from ralphstate.storage.system.paths import find, for_init

    found = find(root) or for_init(root)
    guards: list[str] = []
    with contextlib.suppress(RalphstateError):  # no loop, or one that cannot be read
        guards = list(Store(found).load()["guards"] or [])
    return reach(found, guards, [["claude"]])


def update(path: Path, root: Path, uninstall: bool) -> InstallResult:
    """Add (or with `uninstall` remove) the session's sandbox settings in `path`."""
    where = reach_of(root)
    before = _recorded(path)
    added: dict[str, Any] = {} if uninstall else {k: v for k, v in before.items()}

    def edit(data: dict[str, Any]) -> list[str]:
        if uninstall:
            return _remove(data, before)
        added.clear()
        added.update({k: (dict(v) if isinstance(v, dict) else list(v)) for k, v in before.items()})
        return _add(data, path, where, added)

    result = settings.update(path, settings.parse, edit, within=root)
    now = {} if uninstall else added
    if now != before:
        _remember(path, now)
    return result


def enabled(root: Path) -> bool:
    """Whether the project's Claude Code settings (local, then shared) turn the client's
    sandbox on for sessions (`sandbox.enabled`); False when none says so."""
    for name in ("settings.local.json", "settings.json"):
        with contextlib.suppress(OSError, ValueError, RalphstateError):
            raw = settings.read_bytes(root / ".claude" / name)
            data = settings.parse(raw, root / ".claude" / name) if raw else None
            box = data.get("sandbox") if isinstance(data, dict) else None
            if isinstance(box, dict) and isinstance(box.get("enabled"), bool):
                return bool(box["enabled"])
    return False
