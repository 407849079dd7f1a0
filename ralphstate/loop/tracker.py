"""A tracker file: markdown whose YAML frontmatter carries a loop's settings
(docs/explanation/design-notes.md, "A native loop with a tracker file").

    ---
    iteration: 0
    max_iterations: 15
    completion_marker: "E2E_COMPLETE"
    active: true
    started_at: "2026-02-25T10:00:00Z"
    ---
    # E2E Test Progress
    ...

Only flat `key: value` lines are read (a value may be quoted), within a few lines and
bytes: no YAML library, and nothing nested. `init --from` and `init --task` read the
frontmatter of the file they are given: `max_iterations` and `completion_marker` are
the loop's, `iteration` is where its count starts, `active: false` (a tracker whose
loop ended) and any other key are refused, naming it, as is a key the command line or
the other file gives another value. Once the loop started its settings live in
state.json; the frontmatter is not written back. A task file that is a tracker has one
more use: the completion marker written in its body counts, as in the reply.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.marker import contains_marker, marker_problem

KEYS = ("iteration", "max_iterations", "completion_marker", "active", "started_at")
# A frontmatter ends within this many lines; a longer one is not a tracker's.
MAX_LINES = 40
# A key; the line around it is split by hand (a pattern with runs of blanks side by side
# backtracks over a long run of them: tests/loop/test_linear_parsing.py).
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_ISO = re.compile(r"\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?)?")


def split(text: str, name: str) -> tuple[dict[str, str] | None, str]:
    """(the frontmatter's keys, or None when the text has none; the body below it).
    RalphstateError, in one sentence naming `name`, for a frontmatter it cannot read."""
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[0].rstrip("\r \t") != "---":
        return None, text
    found: dict[str, str] = {}
    for number, raw in enumerate(lines[1 : MAX_LINES + 1], start=2):
        line = raw.rstrip("\r")
        if line.rstrip() in ("---", "..."):
            return found, "\n".join(lines[number:])
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found_key = _key_value(line)
        if found_key is None or line[0] in " \t":
            raise RalphstateError(
                f"line {number} of {name}'s frontmatter is not a flat `key: value` line,"
                " the only kind ralphstate reads there."
            )
        found[found_key[0]] = _unquoted(found_key[1])
    raise RalphstateError(
        f"{name} opens a frontmatter with `---` that does not end within {MAX_LINES} lines."
    )


def _key_value(line: str) -> tuple[str, str] | None:
    """(the key, the value) of a `key: value` line, without the blanks around each;
    None for another line."""
    key, colon, value = line.partition(":")
    key = key.rstrip(" \t")
    if not colon or not _KEY.fullmatch(key):
        return None
    return key, value.strip(" \t")


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        return inner.replace('\\"', '"').replace("\\\\", "\\") if value[0] == '"' else inner
    if " #" in value:  # a comment after a plain value
        value = value.split(" #", 1)[0].rstrip()
    return value


def settings(keys: dict[str, str], name: str) -> dict[str, Any]:
    """The loop's settings a tracker's frontmatter gives, as state keys
    (`maxIterations`, `completionMarker`, `iteration`); RalphstateError naming a key it
    refuses."""
    unknown = [k for k in keys if k not in KEYS]
    if unknown:
        raise RalphstateError(
            f"{name}'s frontmatter has {', '.join(unknown)}, which ralphstate does not read"
            f" (it reads {', '.join(KEYS)}); remove {'it' if len(unknown) == 1 else 'them'}."
        )
    found: dict[str, Any] = {}
    if "max_iterations" in keys:
        found["maxIterations"] = _number(keys, "max_iterations", name, 1)
    if "iteration" in keys:
        found["iteration"] = _number(keys, "iteration", name, 0)
    if "completion_marker" in keys:
        problem = marker_problem(keys["completion_marker"])
        if problem:
            raise RalphstateError(f"{name}'s completion_marker: {problem}")
        found["completionMarker"] = keys["completion_marker"]
    active = keys.get("active", "true").lower()
    if active not in ("true", "false"):
        raise RalphstateError(f"{name}'s active is true or false, not {keys['active']!r}.")
    if active == "false":
        raise RalphstateError(
            f"{name}'s frontmatter says active: false, a loop that has ended; set it to"
            " true (or remove the line) to start a loop from it."
        )
    started = keys.get("started_at")
    if started is not None and not _ISO.fullmatch(started):
        raise RalphstateError(f"{name}'s started_at is not a date and time: {started!r}.")
    return found


def _number(keys: dict[str, str], key: str, name: str, least: int) -> int:
    value = keys[key]
    if not value.isdecimal() or int(value) < least:
        raise RalphstateError(
            f"{name}'s {key} is a whole number of at least {least}, not {value!r}."
        )
    return int(value)


def read(text: str, name: str) -> tuple[dict[str, Any] | None, str]:
    """(the settings of the tracker `text`, None when it has no frontmatter; its body)."""
    keys, body = split(text, name)
    return (None if keys is None else settings(keys, name)), body


def settle(
    given: list[tuple[str, dict[str, Any]]],
    template: dict[str, Any],
    max_iterations: int | None,
    marker: str | None,
) -> tuple[int | None, str | None, int]:
    """(maxIterations, completionMarker, the iteration the loop starts at) once the
    trackers `given` (each with its file's name) are read: a key they give is the
    loop's unless the command line (`--max-iterations`, `--marker`), the template or
    the other tracker gives it another value, which is refused naming both."""
    options = {"maxIterations": max_iterations, "completionMarker": marker}
    flags = {"maxIterations": "--max-iterations", "completionMarker": "--marker"}
    keys = {"maxIterations": "max_iterations", "completionMarker": "completion_marker"}
    chosen: dict[str, tuple[str, Any]] = {}
    for key, value in options.items():
        if value is not None:
            chosen[key] = (flags[key], value)
        elif key in template:
            chosen[key] = ("the template", template[key])
    iteration = 0
    for name, found in given:
        for key, value in found.items():
            if key == "iteration":
                iteration = max(iteration, value)
                continue
            if key in chosen and chosen[key][1] != value:
                raise RalphstateError(
                    f"{name}'s frontmatter says {keys[key]}: {value} and {chosen[key][0]}"
                    f" says {chosen[key][1]}; give one of them."
                )
            chosen[key] = (name, value)
    most = chosen.get("maxIterations", ("", st.DEFAULT_MAX_ITERATIONS))[1]
    if iteration >= most:
        raise RalphstateError(
            f"the tracker's iteration {iteration} has reached its max_iterations {most}:"
            " that loop is over; lower iteration or raise max_iterations."
        )
    got = {k: v[1] for k, v in chosen.items()}
    return got.get("maxIterations"), got.get("completionMarker"), iteration


def refuse_marker(body: str | None, marker: str, name: str) -> None:
    """Refuse to start from a tracker task file whose body already holds the marker:
    its first stop would take the loop for done."""
    if body is not None and contains_marker(body, marker):
        raise RalphstateError(
            f"{name} already holds the completion marker {marker} in its body, which would"
            " end the loop at its first stop; remove it first."
        )


def body_with_marker(root: Path, name: str | None, marker: str) -> str | None:
    """The body of the loop's task file `name` when the file is a tracker (it has a
    frontmatter) and its body holds the completion `marker` outside code; None
    otherwise, or when it cannot be read (the stop reads it again for its boxes)."""
    if not name:
        return None
    from ralphstate.loop import taskfile

    try:
        text = taskfile.read(root, name).decode("utf-8", "replace")
        keys, body = split(text, name)
    except RalphstateError:
        return None
    if keys is None or not contains_marker(body, marker):
        return None
    return body
