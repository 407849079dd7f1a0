"""Defaults for `ralphstate run`, so a person types the agent command once.

They are read from the `[tool.ralphstate.run]` table of the project's
`pyproject.toml`, then from the `[run]` table of `.loop/config.toml`, whose keys
win; options given on the command line win over both. The project is the
directory that holds `.loop/`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.run import runoptions
from ralphstate.storage.system import fsio

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PROMPT_FILE = "{prompt_file}"
KEYS = runoptions.KEYS


@dataclass
class RunConfig:
    """What the configuration files give: each key's value by its option's name (the
    keys and their checks are the rows of run/runoptions.py), read as attributes
    (`config.timeout`, None when no file gives it)."""

    values: dict[str, Any] = field(default_factory=dict)
    # The files the values came from, for messages.
    sources: list[str] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        if name in _NAMES:
            return self.values.get(name)
        raise AttributeError(name)

    @property
    def agent(self) -> str | None:
        """The agent command, the first of the chain `agent` names."""
        chain: list[str] = self.values.get("agents", [])
        return chain[0] if chain else None

    @property
    def fallbacks(self) -> list[str]:
        """More agent commands after the first: the fallback chain."""
        chain: list[str] = self.values.get("agents", [])
        return chain[1:]

    @property
    def context(self) -> list[Path]:
        """The context files, named from the project's root."""
        files: list[Path] = self.values.get("context", [])
        return files


_NAMES = {option.name for option in runoptions.OPTIONS if option.key is not None}


def load(root: Path, loop_dir: Path) -> RunConfig:
    """The run defaults of the project at `root`; RalphstateError for a bad file or value."""
    config = RunConfig()
    pyproject = root / "pyproject.toml"
    table = _table(pyproject, ("tool", "ralphstate", "run"))
    if table is not None:
        _apply(config, table, root, "pyproject.toml [tool.ralphstate.run]")
    own = loop_dir / "config.toml"
    table = _table(own, ("run",))
    if table is not None:
        _apply(config, table, root, f"{_shown(own, root)} [run]")
    return config


def reviewed(config: RunConfig, root: Path, specs: Sequence[Path] = ()) -> dict[str, object]:
    """What a person must have trusted before `run` uses it: the agent commands (the
    fallbacks too), the notifier and the context files the configuration files name
    (they may have come with a clone), and the specs the task file links to (`specs`:
    the agent may have written those links)."""
    settings: dict[str, object] = {}
    if specs:
        settings["specs"] = [_shown(path, root) for path in specs]
    if config.agent is not None:
        settings["agent"] = config.agent
        if config.shell:  # the same command means more through a shell
            settings["shell"] = True
    if config.fallbacks:
        settings["fallbacks"] = list(config.fallbacks)
    if config.context:
        settings["context"] = [_shown(path, root) for path in config.context]
    if config.notify is not None:
        settings["notify"] = config.notify
    # How the agent is confined is the person's to choose: a mode or a network setting
    # a file gives (the agent may have written it) is used once a person trusted it.
    if config.sandbox is not None:
        settings["sandbox"] = config.sandbox
    if config.offline is not None:
        settings["offline"] = config.offline
    return settings


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _table(path: Path, keys: tuple[str, ...]) -> dict[str, Any] | None:
    try:  # bounded, and never blocking on a FIFO or a device
        raw = fsio.read_regular(path, limits.MAX_SETTINGS_BYTES)
        if len(raw) > limits.MAX_SETTINGS_BYTES:
            raise RalphstateError(f"{path} is larger than {limits.MAX_SETTINGS_BYTES} bytes.")
        data: Any = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise RalphstateError(f"could not read {path}: {reason}.") from None
    except tomllib.TOMLDecodeError as exc:
        raise RalphstateError(f"{path} is not valid TOML: {exc}.") from None
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    if not isinstance(data, dict):
        raise RalphstateError(f"{path}: [{'.'.join(keys)}] must be a table.")
    return data


def _apply(config: RunConfig, table: dict[str, Any], root: Path, where: str) -> None:
    config.sources.append(where)
    for key, value in table.items():
        option = runoptions.BY_KEY.get(key)
        if option is None:
            raise RalphstateError(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)}).")

        def bad(wanted: str, key: str = key, value: Any = value) -> RalphstateError:
            return RalphstateError(f"{where}: {key!r} must be {wanted}, not {value!r}.")

        config.values[option.name] = option.kind.read(value, bad, root)
