"""Text from a state file or a check, made safe to show on a terminal."""

from __future__ import annotations

import re


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: object) -> str:
    """Text from a state file (or any file a repository brings) as one line a terminal
    shows faithfully: every character that is not printable (control characters and
    escape sequences, newlines and tabs, bidi overrides and isolates, line and paragraph
    separators, zero-width and other format characters) is shown as `\\xNN`, `\\uNNNN`
    or `\\UNNNNNNNN` instead of acting on the terminal. So a check command reviewed before
    `ralphstate trust` is the command that will run, and a name echoed back cannot
    write to the clipboard (OSC 52) or redraw the line. Everything that prints
    state-derived text goes through here."""
    shown = str(text)
    if shown.isprintable():  # the usual case: nothing to escape
        return shown
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in shown)


def visible_lines(text: object) -> str:
    """Text of several lines (a spec), each line made safe as `visible` makes it, the
    newlines between them kept."""
    return "\n".join(visible(line) for line in str(text).split("\n"))


# What a check prints goes into the state and the block reason: terminal escape
# sequences and control characters but tab and newline are dropped from it.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_CONTROL_OUTPUT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def plain_output(text: str) -> str:
    """A command's output without escape sequences and control characters."""
    return _CONTROL_OUTPUT.sub("", _ANSI.sub("", text))


# How much of a session id is shown where one is named in passing (`owner 0a1b2c3d…`).
SHORT_ID_CHARS = 8


def short_id(session: object) -> str:
    """A session id as every message names it: its first `SHORT_ID_CHARS` characters,
    with `…` when there is more, made safe to show (`visible`): one helper, one style."""
    text = str(session)
    cut = len(text) > SHORT_ID_CHARS
    return visible(text[:SHORT_ID_CHARS]) + ("…" if cut else "")


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
