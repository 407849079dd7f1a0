"""`visible`, the one sanitiser for text from a state file shown on a terminal."""

from __future__ import annotations

import pytest

from ralphstate.core.text import visible

HOSTILE = [
    ("\x1b]52;c;cHduZWQ=\x07", "\\x1b]52;c;cHduZWQ=\\x07"),  # OSC 52: a clipboard write
    ("ok\rtouch PWNED", "ok\\x0dtouch PWNED"),  # a carriage return redraws the line
    ("a\x1b[2Kb", "a\\x1b[2Kb"),  # erase line
    ("one\ntwo", "one\\x0atwo"),  # a newline fakes a second line of the review
    ("tab\there", "tab\\x09here"),
    ("safe\u202eevil", "safe\\u202eevil"),  # right-to-left override
    ("x\u2066y\u2069", "x\\u2066y\\u2069"),  # bidi isolates
    ("x\u2028y\u2029z", "x\\u2028y\\u2029z"),  # line and paragraph separators
    ("x\u200bz\ufeff", "x\\u200bz\\ufeff"),  # zero-width space, byte-order mark
    ("\x9b31m", "\\x9b31m"),  # a C1 control sequence introducer
    ("back\\slash", "back\\slash"),
    ("naïve café ✓", "naïve café ✓"),
]


@pytest.mark.parametrize(("raw", "shown"), HOSTILE)
def test_visible_escapes_everything_that_changes_what_a_terminal_shows(
    raw: str, shown: str
) -> None:
    assert visible(raw) == shown


def test_visible_is_one_line_of_printable_text() -> None:
    every = "".join(chr(c) for c in range(0x3000))
    shown = visible(every)
    assert shown.isprintable() or all(ch.isprintable() or ch == " " for ch in shown)
    assert "\n" not in shown and "\r" not in shown and "\x1b" not in shown
