"""What `status` gathers into one value (loop/statusfacts.py): all of it for the view,
and for `--json` only what it prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralphstate.core import views
from ralphstate.loop import statusfacts
from ralphstate.loop.project import locate


def test_the_view_gets_every_fact(project: Path, rs: Any) -> None:
    assert rs("init", "Build it", "-c", "tests pass", "--check", "lint", "true").code == 0
    state, facts = statusfacts.gather(locate(), project)
    assert facts.where == str(project)
    assert (facts.trusted, facts.known_here, facts.in_git) == (True, True, False)
    assert facts.guarded == "guarded: no files"
    assert facts.proof["approvedBy"] == "you" and facts.proof_said
    assert facts.hooks_view is None  # at the project root
    assert views.status(state, facts).splitlines()[1] == "spec: Build it"


def test_json_gathers_only_what_it_prints(project: Path, rs: Any) -> None:
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    state, facts = statusfacts.gather(locate(), project, view=False)
    assert (facts.trusted, facts.guarded, facts.proof_said, facts.unenforced) == (
        None,
        None,
        (),
        None,
    )
    shown = statusfacts.as_json(state, facts)
    assert (shown["knownHere"], shown["staleEvidence"]) == (True, [])
    assert "lastRunSandbox" not in shown
