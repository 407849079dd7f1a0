"""The kinds of value an option of `ralphstate run` takes (the table is
run/runoptions.py): how each reads and checks what a configuration file gives. The
command line reads the same kinds through click, one click type per kind
(cli/runflags.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphstate.core.budgets import parse_duration
from ralphstate.core.errors import RalphstateError

# The error of a key whose value is not what it must be: bad("true or false").
Bad = Callable[[str], RalphstateError]


@dataclass(frozen=True)
class Text:
    """A string with something in it: a command, a name."""

    wanted: str = "a non-empty string"

    def read(self, value: Any, bad: Bad, root: Path) -> str:
        if not isinstance(value, str) or not value.strip():
            raise bad(self.wanted)
        return value


@dataclass(frozen=True)
class Choice:
    """One of a few words."""

    choices: tuple[str, ...]

    def read(self, value: Any, bad: Bad, root: Path) -> str:
        if not isinstance(value, str) or value not in self.choices:
            raise bad(" or ".join(self.choices))
        return value


@dataclass(frozen=True)
class Whole:
    """A whole number from `lowest` to `highest`."""

    lowest: int
    highest: int

    def read(self, value: Any, bad: Bad, root: Path) -> int:
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not self.lowest <= value <= self.highest
        ):
            raise bad(f"a whole number from {self.lowest} to {self.highest}")
        return value


@dataclass(frozen=True)
class Seconds:
    """A finite number of seconds: above 0 (a timeout), or 0 or more (a grace)."""

    above_zero: bool = True

    def read(self, value: Any, bad: Bad, root: Path) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number of seconds")
        if not math.isfinite(value):  # TOML has nan and inf; neither is a time
            raise bad("a finite number of seconds")
        if value < 0 or (self.above_zero and value == 0):
            raise bad("a number of seconds above 0" if self.above_zero else "0 or more seconds")
        return float(value)


@dataclass(frozen=True)
class Dollars:
    """US dollars above 0."""

    def read(self, value: Any, bad: Bad, root: Path) -> float:
        return Seconds().read(value, lambda _: bad("US dollars above 0"), root)


@dataclass(frozen=True)
class Duration:
    """A time: `8h`, `90m`, `1h30m`, or a number of seconds."""

    def read(self, value: Any, bad: Bad, root: Path) -> float:
        if isinstance(value, str):
            seconds = parse_duration(value)
            if seconds is None:
                raise bad("a duration such as 8h, 90m, 1h30m or a number of seconds")
            return seconds
        return Seconds().read(value, bad, root)


@dataclass(frozen=True)
class Switch:
    """True or false; `negated` when the key says the opposite of the option
    (`sandbox-network = false` is `--no-network`)."""

    negated: bool = False

    def read(self, value: Any, bad: Bad, root: Path) -> bool:
        if not isinstance(value, bool):
            raise bad("true or false")
        return value != self.negated


@dataclass(frozen=True)
class Commands:
    """A command line, or several: the first and its fallbacks, in turn."""

    def read(self, value: Any, bad: Bad, root: Path) -> list[str]:
        commands = [value] if isinstance(value, str) else value
        if (
            not isinstance(commands, list)
            or not commands
            or not all(isinstance(c, str) and c.strip() for c in commands)
        ):
            raise bad("a non-empty string (the agent command) or a list of them")
        return list(commands)


@dataclass(frozen=True)
class Files:
    """A file, or several, named from the project's root."""

    def read(self, value: Any, bad: Bad, root: Path) -> list[Path]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise bad("a file name or a list of file names")
        return [root / item for item in items]


Kind = Text | Choice | Whole | Seconds | Dollars | Duration | Switch | Commands | Files
