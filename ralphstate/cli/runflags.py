"""`ralphstate run`'s options on the command line, built from the rows of
run/runoptions.py: each row's flags, help and metavar, and a click type for the kind
of value it takes. Every option that is not given reaches the command as None, so
the plan can tell it from one that was."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from ralphstate.core import budgets
from ralphstate.run import optionkinds
from ralphstate.run.runoptions import Option

F = TypeVar("F", bound=Callable[..., Any])


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds.")
    return value


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    seconds = budgets.parse_duration(value)
    if seconds is None:
        raise click.BadParameter(f"{value!r} is not a duration such as 8h, 90m or 1h30m.")
    return seconds


def _listed(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str] | None:
    return list(value) or None


def _resolved(
    ctx: click.Context, param: click.Parameter, value: tuple[Path, ...]
) -> list[Path] | None:
    return [path.resolve() for path in value] or None


def _given(ctx: click.Context, param: click.Parameter, value: bool | None) -> bool | None:
    """A flag that was not given is None, as every other option is."""
    return True if value else None


def _settings(kind: optionkinds.Kind) -> dict[str, Any]:
    """The click parameters of a kind of value (a switch's depend on its flags: _switch)."""
    match kind:
        case optionkinds.Choice():
            return {"type": click.Choice(kind.choices)}
        case optionkinds.Whole():
            return {"type": click.IntRange(kind.lowest, kind.highest)}
        case optionkinds.Seconds() | optionkinds.Dollars():
            return {"type": click.FloatRange(0, min_open=True), "callback": _finite}
        case optionkinds.Duration():
            return {"callback": _duration}
        case optionkinds.Commands():
            return {"multiple": True, "callback": _listed}
        case optionkinds.Files():
            path = click.Path(dir_okay=False, path_type=Path)
            return {"type": path, "multiple": True, "callback": _resolved}
        case _:  # text, as click reads it
            return {}


def _switch(option: Option) -> dict[str, Any]:
    """An on/off pair (`--shell/--no-shell`) or a flag (`--commit`)."""
    if "/" in option.flags[0]:
        return {"default": None}
    return {"is_flag": True, "default": None, "callback": _given}


def click_option(option: Option) -> Callable[[F], F]:
    """The click option of one row."""
    if isinstance(option.kind, optionkinds.Switch):
        settings = _switch(option)
    else:
        settings = {"default": None, **_settings(option.kind)}
    return click.option(
        *option.flags, option.name, metavar=option.metavar, help=option.help, **settings
    )


def options(rows: Sequence[Option]) -> Callable[[F], F]:
    """A decorator giving a command the options of the rows that have flags, in the
    rows' order."""

    def decorate(command: F) -> F:
        for option in reversed([row for row in rows if row.flags]):
            command = click_option(option)(command)
        return command

    return decorate
