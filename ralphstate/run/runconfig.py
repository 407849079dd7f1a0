"""Defaults for `ralphstate run`, so a person types the agent command once.

They are read from the `[tool.ralphstate.run]` table of the project's
`pyproject.toml`, then from the `[run]` table of `.loop/config.toml`, whose keys
win; options given on the command line win over both. The project is the
directory that holds `.loop/`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralphstate.core import limits
from ralphstate.core.budgets import parse_duration
from ralphstate.core.errors import RalphstateError
from ralphstate.storage import fsio

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PROMPT_MODES = ("stdin", "arg", "file")
PROMPT_FILE = "{prompt_file}"
KEYS = (
    "agent",
    "prompt-mode",
    "max",
    "timeout",
    "context",
    "grace",
    "max-cost",
    "max-tokens",
    "max-duration",
    "on-limit",
    "agent-errors",
    "step-retries",
    "idle-timeout",
    "notify",
    "keep-awake",
    "keep-logs",
    "sandbox",
    "sandbox-network",
    "shell",
    "strict",
    "check-in",
)
ON_LIMIT = ("wait", "pause")


@dataclass
class RunConfig:
    agent: str | None = None
    # More agent commands after the first: the fallback chain.
    fallbacks: list[str] = field(default_factory=list)
    prompt_mode: str | None = None
    max: int | None = None
    timeout: float | None = None
    context: list[Path] = field(default_factory=list)
    grace: float | None = None
    max_cost: float | None = None
    max_tokens: int | None = None
    max_duration: float | None = None
    on_limit: str | None = None
    agent_errors: int | None = None
    step_retries: int | None = None
    idle_timeout: float | None = None
    notify: str | None = None
    keep_awake: bool = True
    keep_logs: int | None = None
    # The sandbox of each iteration (docs/how-to/sandbox.md), and whether it keeps the network.
    sandbox: str | None = None
    sandbox_network: bool = True
    shell: bool = False
    strict: bool = False
    check_in: bool = False
    # The files the values came from, for messages.
    sources: list[str] = field(default_factory=list)


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


def _seconds(value: Any, *, above_zero: bool, bad: Callable[[str], RalphstateError]) -> float:
    """A `timeout` (above 0) or a `grace` (0 or more) in seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad("a number of seconds")
    if not math.isfinite(value):  # TOML has nan and inf; neither is a time
        raise bad("a finite number of seconds")
    if value < 0 or (above_zero and value == 0):
        raise bad("a number of seconds above 0" if above_zero else "0 or more seconds")
    return float(value)


def _duration(value: Any, bad: Callable[[str], RalphstateError]) -> float:
    if isinstance(value, str):
        seconds = parse_duration(value)
        if seconds is None:
            raise bad("a duration such as 8h, 90m, 1h30m or a number of seconds")
        return seconds
    return _seconds(value, above_zero=True, bad=bad)


def _whole(value: Any, lowest: int, highest: int, bad: Callable[[str], RalphstateError]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lowest <= value <= highest:
        raise bad(f"a whole number from {lowest} to {highest}")
    return value


def _agent(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    commands = [value] if isinstance(value, str) else value
    if (
        not isinstance(commands, list)
        or not commands
        or not all(isinstance(c, str) and c.strip() for c in commands)
    ):
        raise bad("a non-empty string (the agent command) or a list of them")
    config.agent, config.fallbacks = commands[0], list(commands[1:])


def _prompt_mode(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    if value not in PROMPT_MODES:
        raise bad(" or ".join(PROMPT_MODES))
    config.prompt_mode = value


def _max(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(f"a whole number from 1 to {limits.RUN_MAX_ITERATIONS}")
    if not 1 <= value <= limits.RUN_MAX_ITERATIONS:
        raise bad(f"a whole number from 1 to {limits.RUN_MAX_ITERATIONS}")
    config.max = value


def _timeout(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    config.timeout = _seconds(value, above_zero=True, bad=bad)


def _grace(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    config.grace = _seconds(value, above_zero=False, bad=bad)


def _max_cost(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    config.max_cost = _seconds(value, above_zero=True, bad=lambda _: bad("US dollars above 0"))


def _max_tokens(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    config.max_tokens = _whole(value, 1, limits.MAX_USAGE_TOKENS, bad)


def _max_duration(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    config.max_duration = _duration(value, bad)


def _on_limit(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    if value not in ON_LIMIT:
        raise bad(" or ".join(ON_LIMIT))
    config.on_limit = value


def _agent_errors(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    config.agent_errors = _whole(value, 1, 1000, bad)


def _step_retries(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    config.step_retries = _whole(value, 1, 1000, bad)


def _idle_timeout(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    config.idle_timeout = _seconds(value, above_zero=True, bad=bad)


def _notify(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    if not isinstance(value, str) or not value.strip():
        raise bad("a non-empty string (the notifier's command)")
    config.notify = value


def _keep_awake(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    if not isinstance(value, bool):
        raise bad("true or false")
    config.keep_awake = value


def _flag(name: str) -> Callable[[RunConfig, Any, Callable[[str], RalphstateError]], None]:
    """The setter of a true-or-false key (`shell`, `strict`)."""

    def setter(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
        if not isinstance(value, bool):
            raise bad("true or false")
        setattr(config, name, value)

    return setter


def _keep_logs(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    config.keep_logs = _whole(value, 1, 100_000, bad)


def _sandbox(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    from ralphstate.sandbox.modes import MODES

    if value not in MODES:
        raise bad(" or ".join(MODES))
    config.sandbox = value


def _sandbox_network(config: RunConfig, value: Any, bad: Callable[[str], RalphstateError]) -> None:
    if not isinstance(value, bool):
        raise bad("true or false")
    config.sandbox_network = value


# How each key but `context` (whose files are named from the project) is read.
_SETTERS: dict[str, Callable[[RunConfig, Any, Callable[[str], RalphstateError]], None]] = {
    "agent": _agent,
    "prompt-mode": _prompt_mode,
    "max": _max,
    "timeout": _timeout,
    "grace": _grace,
    "max-cost": _max_cost,
    "max-tokens": _max_tokens,
    "max-duration": _max_duration,
    "on-limit": _on_limit,
    "agent-errors": _agent_errors,
    "step-retries": _step_retries,
    "idle-timeout": _idle_timeout,
    "notify": _notify,
    "keep-awake": _keep_awake,
    "keep-logs": _keep_logs,
    "sandbox": _sandbox,
    "sandbox-network": _sandbox_network,
    "shell": _flag("shell"),
    "strict": _flag("strict"),
    "check-in": _flag("check_in"),
}


def _apply(config: RunConfig, table: dict[str, Any], root: Path, where: str) -> None:
    config.sources.append(where)
    for key, value in table.items():
        if key not in KEYS:
            raise RalphstateError(f"{where}: unknown key {key!r} (known: {', '.join(KEYS)}).")

        def bad(wanted: str, key: str = key, value: Any = value) -> RalphstateError:
            return RalphstateError(f"{where}: {key!r} must be {wanted}, not {value!r}.")

        if key in _SETTERS:
            _SETTERS[key](config, value, bad)
        elif key == "context":
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise bad("a file name or a list of file names")
            config.context = [root / item for item in items]
