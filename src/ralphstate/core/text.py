"""Text from a state file or a check, made safe to show on a terminal."""

from __future__ import annotations

import re

# Control characters but tab and newline: C0, DEL and C1.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: object) -> str:
    """Text from a state file as a terminal shows it faithfully: a control character (an
    escape sequence, a carriage return, in a file that came with a clone) is shown as
    `\\xNN` instead of redrawing the line, so a check command reviewed before `ralphstate
    trust` is the command that will run."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", str(text))


# What a check prints goes into the state and the block reason: terminal escape
# sequences and control characters but tab and newline are dropped from it.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_CONTROL_OUTPUT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def plain_output(text: str) -> str:
    """A command's output without escape sequences and control characters."""
    return _CONTROL_OUTPUT.sub("", _ANSI.sub("", text))


_PLURALS = {"criterion": "criteria"}


def noun(n: int, singular: str) -> str:
    """`singular` when `n` is 1, else its plural (`criterion` → `criteria`, `check` →
    `checks`): the one place a count's noun is chosen."""
    return singular if n == 1 else _PLURALS.get(singular, singular + "s")


def count(n: int, singular: str) -> str:
    """`1 criterion`, `2 criteria`, `0 checks`: a number and its noun."""
    return f"{n} {noun(n, singular)}"


def all_of(n: int, singular: str) -> str:
    """`all 3 criteria`, `the one criterion`, `all 0 checks`."""
    return f"the one {singular}" if n == 1 else f"all {count(n, singular)}"
