"""Find the completion marker in an assistant reply, ignoring code.

The marker counts only in prose: not inside a fenced code block and not inside an
inline code span, so a reply that shows the marker in an example does not end a loop.
Fences and spans follow CommonMark, reduced to what a reply needs: block containers
(lists, quotes) and indented code blocks are not modelled.
"""

from __future__ import annotations

import re

from ralphstate.core.errors import RalphstateError
from ralphstate.core.limits import MAX_MARKER_CHARS

# An opening fence: up to 3 spaces, then 3+ backticks or tildes, then the info string.
_OPEN_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
# A closing fence: up to 3 spaces, 3+ of one fence char, then only spaces or tabs.
_CLOSE_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BACKTICKS = re.compile(r"`+")


# The frame SessionStart puts the loop's state in (core/render.py): never in a marker.
_FRAME_TAG = re.compile(r"</?loop-state>", re.IGNORECASE)


def marker_problem(marker: str) -> str | None:
    """Why `marker` cannot be a completion marker, as one sentence; None when it can.

    A marker is quoted to the model in block reasons and the restored context, and the
    model must repeat it exactly: so it is short, one line, single spaces between words,
    no surrounding spaces, nothing a code span or the context's frame would change."""
    if not marker.strip():
        return "a marker cannot be empty."
    if marker != marker.strip():
        return "a marker cannot start or end with a space."
    if any(c.isspace() and c != " " for c in marker) or "  " in marker:
        return (
            "a marker has single spaces between words: no tabs, line breaks or double"
            " spaces, so that it can be repeated exactly as quoted."
        )
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in marker):
        return "a marker cannot hold control characters."
    if len(marker) > MAX_MARKER_CHARS:
        return f"a marker is at most {MAX_MARKER_CHARS} characters, not {len(marker)}."
    if "`" in marker:
        return "a marker cannot hold a backtick: in backticks it is code, where it does not count."
    if _FRAME_TAG.search(marker):
        return "a marker cannot hold <loop-state>, which frames the loop's restored state."
    return None


def check_marker(marker: str) -> None:
    """Refuse a marker that could not be repeated exactly as quoted (`marker_problem`)."""
    problem = marker_problem(marker)
    if problem:
        raise RalphstateError(problem)


def contains_marker(text: str, marker: str) -> bool:
    """True when `marker` occurs in `text` outside fenced code blocks and code spans.
    An empty marker never counts."""
    if not marker or marker not in text:
        return False
    if "`" not in text and "~~~" not in text:
        return True
    paragraph: list[str] = []
    fence = ""  # the opening fence while inside a fenced block, else ""
    for line in _LINE_BREAK.split(text):
        if fence:
            close = _CLOSE_FENCE.fullmatch(line)
            if close and close[1][0] == fence[0] and len(close[1]) >= len(fence):
                fence = ""
            continue
        opening = _OPEN_FENCE.fullmatch(line)
        if opening and not (opening[1][0] == "`" and "`" in opening[2]):
            if _in_prose(paragraph, marker):
                return True
            paragraph = []
            fence = opening[1]
        elif line.strip(" \t"):
            paragraph.append(line)
        else:  # a blank line ends the paragraph; a code span never crosses it
            if _in_prose(paragraph, marker):
                return True
            paragraph = []
    return _in_prose(paragraph, marker)


def _in_prose(lines: list[str], marker: str) -> bool:
    """The marker in one paragraph, outside its code spans. A run of N backticks opens
    a span closed by the next run of exactly N; a run with no partner is literal."""
    if not lines:
        return False
    text = "\n".join(lines)
    if marker not in text:
        return False
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    # Each run's partner is the next run of the same length; pointers only move forward.
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    cursor = dict.fromkeys(by_length, 0)
    prose_from = 0
    index = 0
    while index < len(runs):
        start, end = runs[index]
        same = by_length[end - start]
        at = cursor[end - start]
        while at < len(same) and same[at] <= index:
            at += 1
        cursor[end - start] = at
        if at == len(same):  # unmatched: literal backticks, part of the prose
            index += 1
            continue
        if marker in text[prose_from:start]:
            return True
        index = same[at] + 1
        prose_from = runs[same[at]][1]
    return marker in text[prose_from:]
