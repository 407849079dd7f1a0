"""The checks of the state's fields that hold one value: a text, a whole number within
bounds, seconds, a budget, a flag, one word of a few, the completion marker.

Each reader takes the raw state as read and the field's key, and returns the field's
value, or None when the field takes its default (core/schema.py, `Field`); a value it
cannot use raises `fields.Invalid` with a sentence that names the key. The fields that
hold records and lists are read in core/fields.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ralphstate.core.fields import Invalid, number
from ralphstate.core.limits import MAX_ITERATIONS_CEILING
from ralphstate.core.marker import marker_problem

Raw = dict[str, Any]


def text(raw: Raw, key: str) -> str:
    """A string, empty when missing."""
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise Invalid(f"'{key}' must be a string")
    return value


def opt_str(raw: Raw, key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise Invalid(f"'{key}' must be a string or null")
    return value


def tasks_file(raw: Raw, key: str) -> str | None:
    name = opt_str(raw, key)
    if name is not None and not name.strip():
        raise Invalid(f"'{key}' must name a file or be null")
    return name


def count(lowest: int) -> Callable[[Raw, str], int | None]:
    """A reader of a whole number from `lowest` to MAX_ITERATIONS_CEILING (a
    whole-number float is one; a bool never is); missing or null: the default."""

    def read(raw: Raw, key: str) -> int | None:
        value = raw.get(key)
        if value is None:
            return None
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(f"'{key}' must be a whole number")
        if value < lowest or value > MAX_ITERATIONS_CEILING:
            raise Invalid(
                f"'{key}' must be between {lowest} and {MAX_ITERATIONS_CEILING}, not {value}"
            )
        return value

    return read


def seconds(raw: Raw, key: str) -> float | None:
    """A span of seconds, 0 or more, or null."""
    value = raw.get(key)
    if value is None:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not (math.isfinite(value) and value >= 0):
        raise Invalid(f"'{key}' must be a number of seconds, 0 or more, or null")
    return float(value)


def budget(raw: Raw, key: str) -> float | None:
    """A budget: a number above 0, or null (none)."""
    value = raw.get(key)
    if value is None:
        return None
    if not number(value) or value == 0:
        raise Invalid(f"'{key}' must be a number above 0, or null, not {value!r}")
    return float(value)


def whole_budget(raw: Raw, key: str) -> int | None:
    """A budget counted in whole units (tokens): above 0, or null (none)."""
    value = budget(raw, key)
    return None if value is None else int(raw[key])


def flag(raw: Raw, key: str) -> bool:
    """True or false; missing or null: false."""
    value = raw.get(key, False)
    if value is not None and not isinstance(value, bool):
        raise Invalid(f"'{key}' must be true or false, not {value!r}")
    return bool(value)


def switch(raw: Raw, key: str) -> bool | None:
    """True, false or null (null: the default, which the reader of the field knows)."""
    value = raw.get(key)
    if value is not None and not isinstance(value, bool):
        raise Invalid(f"'{key}' must be true, false or null, not {value!r}")
    return value


def verify_on_stop(raw: Raw, key: str) -> bool | None:
    """`verifyOnStop`: a switch whose `false` in a file without `noCriteria` (every file
    since holds it) was written before verify-on-stop became the default: that `false`
    was the old default, not the person's choice, and reads as null."""
    value = switch(raw, key)
    if value is False and "noCriteria" not in raw:
        return None
    return value


def one_of(choices: Sequence[str]) -> Callable[[Raw, str], str | None]:
    """A reader of one of `choices`; missing: the default."""

    def read(raw: Raw, key: str) -> str | None:
        if key not in raw:
            return None
        value = raw[key]
        if value not in choices:
            raise Invalid(f"'{key}' must be one of {', '.join(choices)}, not {value!r}")
        return str(value)

    return read


def marker(raw: Raw, key: str) -> str | None:
    """The completion marker: some text the marker rules accept; missing, null or
    empty: the default."""
    value = raw.get(key)
    if not value:
        return None
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"'{key}' must be a non-empty string")
    problem = marker_problem(value)
    if problem:
        raise Invalid(f"'{key}' is refused: {problem.rstrip('.')}")
    return value


def an_object(raw: Raw, key: str) -> dict[str, Any] | None:
    """A JSON object kept as it is, or null."""
    value = raw.get(key)
    if value is not None and not isinstance(value, dict):
        raise Invalid(f"'{key}' must be an object or null")
    return value
