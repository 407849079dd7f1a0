"""What `ralphstate install` added to a settings file besides its hooks, so that
`--uninstall` removes exactly that.

`install --tasks` adds `CLAUDE_CODE_ENABLE_TODO_TOOLS` to a Claude Code settings file's
`env` when the file does not set it already. Whether it did is not something the file
can say (the person may have written the same value), so it is remembered here, in a
small per-user JSON file (`installed.json` in the data directory) keyed by the settings
file's real path: the keys added and their values.
"""

from __future__ import annotations

import os
from pathlib import Path

from ralphstate.core import clock
from ralphstate.storage import home, jsonstore
from ralphstate.storage.jsonstore import Entries

INSTALLED_NAME = "installed.json"


def _path() -> Path:
    return home.data_dir() / INSTALLED_NAME


def _key(settings: Path) -> str:
    return os.path.realpath(settings)


class Added:
    """What install added to one settings file's `env`: the keys with the values it
    wrote, and whether it made the `env` object itself."""

    def __init__(self, env: dict[str, str] | None = None, made_env: bool = False) -> None:
        self.env = env or {}
        self.made_env = made_env


def added(settings: Path) -> Added:
    """What install added to `settings` (nothing, when it is not recorded)."""
    try:
        entry = jsonstore.read(_path()).get(_key(settings), {})
    except home.NoHome:
        return Added()
    env = entry.get("env")
    if not isinstance(env, dict):
        return Added()
    keys = {k: v for k, v in env.items() if isinstance(k, str) and isinstance(v, str)}
    return Added(keys, entry.get("madeEnv") is True)


def remember(settings: Path, what: Added | None) -> None:
    """Record `what` install added to `settings` (None: forget it all). RalphstateError
    when the record cannot be written."""
    key = _key(settings)

    def edit(entries: Entries) -> None:
        entries.pop(key, None)
        if what is not None and what.env:
            entries[key] = {"env": what.env, "madeEnv": what.made_env, "at": clock.now_iso()}

    jsonstore.change(_path(), "the record of installed settings", edit)
