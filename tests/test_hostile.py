"""Hostile repositories: what a cloned `.loop/` (or a template, or a config file) may
put in front of a person or run, and what it may not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # writes "pwned" into the terminal's clipboard
SHOWN_OSC52 = "\\x1b]52;c;cHduZWQ=\\x07"


def start(rs: Any, *args: str) -> None:
    result = rs("init", "Export invoices as CSV", "-c", "tests pass", *args)
    assert result.code == 0, result.err


def edit_state(project: Path, **changes: Any) -> None:
    path = project / ".loop" / "state.json"
    state = json.loads(path.read_text())
    state.update(changes)
    path.write_text(json.dumps(state))


# -- one sanitiser for everything that echoes state-derived text ---------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("criteria", "set", "1", "true"), f"tests {SHOWN_OSC52}pass: met\n"),
        (("criteria", "remove", "1"), f"removed criterion 'tests {SHOWN_OSC52}pass'\n"),
        (("step", "done", "1"), f"done: write {SHOWN_OSC52}it\n"),
        (("step", "undo", "1"), f"not done: write {SHOWN_OSC52}it\n"),
    ],
)
def test_names_from_a_cloned_state_are_echoed_escaped(
    rs: Any, project: Path, args: tuple[str, ...], expected: str
) -> None:
    start(rs)
    edit_state(
        project,
        criteria=[f"tests {OSC52}pass"],
        steps=[f"write {OSC52}it"],
        completedSteps=[f"write {OSC52}it"] if args[1] == "undo" else [],
    )
    done = rs(*args)
    assert done.code == 0, done.err
    assert done.out == expected
    assert "\x1b" not in done.out + done.err


def test_names_the_person_typed_are_echoed_escaped_too(rs: Any, project: Path) -> None:
    start(rs)
    added = rs("criteria", "add", "docs\u202e written")
    assert added.out == "added criterion 'docs\\u202e written'\n"
    step = rs("step", "add", "line\u2028two")
    assert step.out == "added step 'line\\u2028two'\n"


# -- a cloned loop cannot pass for a known one ---------------------------------------------


def test_a_cloned_loop_without_an_identity_is_not_a_known_loop(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ralphstate.storage import registry
    from ralphstate.storage.paths import LoopPaths
    from tests.helpers.hardening import hook, hook_input_for
    from tests.helpers.loops import make_loop, parser_state

    # An earlier loop here had no `startedAt` (written by hand) and was adopted...
    paths = LoopPaths(project, project / ".loop")
    make_loop(project, known=False, session=None, startedAt=None)
    registry.record(paths, parser_state(session=None, startedAt=None))
    # ...and a clone now brings another loop, also without one, to the same place.
    make_loop(project, known=False, session=None, startedAt=None, spec="CLONED spec")
    run = hook("session-start", hook_input_for(project, source="startup"))
    assert b"not started on this machine" in run.out
    assert b"CLONED" not in run.out


def test_adopting_a_loop_without_an_identity_gives_it_one(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ralphstate.core import state as st
    from tests.helpers.hardening import hook, hook_input_for
    from tests.helpers.loops import make_loop

    path = make_loop(project, known=False, session=None, startedAt=None)
    assert rs("adopt").code == 0
    assert st.parse(path.read_bytes())["startedAt"] is not None
    run = hook("session-start", hook_input_for(project, source="startup"))
    assert b"<loop-state>" in run.out
