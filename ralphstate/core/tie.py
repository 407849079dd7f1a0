"""Which of a loop's criteria an agent's task is tied to (docs/explanation/design.md,
"The task gate").

A task (its subject and its description) is tied to a criterion when

- its subject is the criterion's name, or
- a line of its subject or description holds `criterion: NAME`, NAME being the rest of
  that line after the first `criterion:`, trimmed, without one pair of enclosing quotes
  or backticks.

Names are compared trimmed, with each run of whitespace as one space, and without
regard to case. A name that is not one of the loop's criteria ties nothing.
"""

from __future__ import annotations

import re

from ralphstate.core import state as st

# `criterion:` at the start of a line or after a character that is not part of a word.
_LABEL = re.compile(r"(?:^|(?<=\W))criterion:", re.IGNORECASE)
_QUOTES = ('"', "'", "`")


def key(name: str) -> str:
    """How two names are compared: trimmed, whitespace runs as one space, casefolded."""
    return " ".join(name.split()).casefold()


def named(text: str) -> list[str]:
    """The names given as `criterion: NAME` in `text`, one per line at most, in order."""
    names: list[str] = []
    for line in text.splitlines():
        found = _LABEL.search(line)
        if found is None:
            continue
        name = line[found.end() :].strip()
        if len(name) >= 2 and name[0] in _QUOTES and name[-1] == name[0]:
            name = name[1:-1].strip()
        if name:
            names.append(name)
    return names


def tied(state: st.State, subject: str, description: str = "") -> list[str]:
    """The criteria of `state` the task is tied to, in the loop's order."""
    by_key: dict[str, str] = {}
    for criterion in state["criteria"]:
        by_key.setdefault(key(criterion), criterion)
    wanted = {key(subject), *(key(n) for n in named(subject) + named(description))}
    chosen = {by_key[k] for k in wanted if k in by_key}
    return [c for c in state["criteria"] if c in chosen]
