"""What `ralphstate install` added to a settings file besides its hooks, so that
`--uninstall` removes exactly that.

`install --tasks` adds `CLAUDE_CODE_ENABLE_TODO_TOOLS` to a Claude Code settings file's
`env` when the file does not set it already, and `install` adds the `permissions.allow`
rules the agent's ralphstate commands need, those the file does not have already.
Whether it did is not something the file can say (the person may have written the
same value, or the same rule), so it is remembered here, in a small per-user JSON file
(`installed.json` in the data directory) keyed by the settings file's real path: the
keys added and their values, and the rules added.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ralphstate.core import clock
from ralphstate.storage.peruser import home, jsonstore
from ralphstate.storage.peruser.jsonstore import Entries

INSTALLED_NAME = "installed.json"


def _path() -> Path:
    return home.data_dir() / INSTALLED_NAME


def _key(settings: Path) -> str:
    return os.path.realpath(settings)


@dataclass
class Added:
    """What install added to one settings file: to its `env`, the keys with the values
    it wrote, and whether it made the `env` object itself; to its `permissions.allow`,
    the rules, and whether it made the `permissions` object and its `allow` list."""

    env: dict[str, str] = field(default_factory=dict)
    made_env: bool = False
    allow: list[str] = field(default_factory=list)
    made: tuple[bool, bool] = (False, False)

    @property
    def made_permissions(self) -> bool:
        return self.made[0]

    @property
    def made_allow(self) -> bool:
        return self.made[1]

    def nothing(self) -> bool:
        return not self.env and not self.allow


def added(settings: Path) -> Added:
    """What install added to `settings` (nothing, when it is not recorded)."""
    try:
        entry = jsonstore.read(_path()).get(_key(settings), {})
    except home.NoHome:
        return Added()
    env = entry.get("env")
    keys = {}
    if isinstance(env, dict):
        keys = {k: v for k, v in env.items() if isinstance(k, str) and isinstance(v, str)}
    allow = entry.get("allow")
    rules = [r for r in allow if isinstance(r, str)] if isinstance(allow, list) else []
    made = (entry.get("madePermissions") is True, entry.get("madeAllow") is True)
    return Added(keys, entry.get("madeEnv") is True, rules, made)


def remember(settings: Path, what: Added | None) -> None:
    """Record `what` install added to `settings` (None: forget it all). RalphstateError
    when the record cannot be written."""
    key = _key(settings)

    def edit(entries: Entries) -> None:
        entries.pop(key, None)
        if what is not None and not what.nothing():
            entries[key] = {
                "env": what.env,
                "madeEnv": what.made_env,
                "allow": what.allow,
                "madePermissions": what.made_permissions,
                "madeAllow": what.made_allow,
                "at": clock.now_iso(),
            }

    jsonstore.change(_path(), "the record of installed settings", edit)
