"""Every command the model is told to run works as quoted: each suggested command in a
block reason is run, as a real process, and must succeed and change what it says. A
completion marker that could not be repeated exactly is refused when it is set."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralphstate.core import marker as mk
from ralphstate.core import queries
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState, RalphstateError
from tests.helpers.checks import PASS
from tests.helpers.loops import load, own, stop

AWKWARD = ["--help", "-c", "--note", "-", "--", "-s x", 'it\'s "done"', "a  b", "1"]


def suggested(reason: str) -> list[str]:
    return [line.strip() for line in reason.splitlines() if line.startswith("  ralphstate ")]


def run_suggested(root: Path, line: str) -> subprocess.CompletedProcess[bytes]:
    """The command exactly as quoted, split as a POSIX shell splits it."""
    args = shlex.split(line)
    assert args[0] == "ralphstate"
    return subprocess.run(
        [sys.executable, "-m", "ralphstate", *args[1:]], cwd=root, capture_output=True, timeout=60
    )


@pytest.mark.parametrize("name", AWKWARD)
def test_the_commands_of_a_block_reason_work_for_any_criterion_and_step_name(
    project: Path, rs: Any, name: str
) -> None:
    assert rs("init", "x", "-c", name, "-s", name).code == 0
    assert load(project)["criteria"] == [name] and load(project)["steps"] == [name]
    own(project)
    out = stop(project, "working")
    assert out is not None and out["decision"] == "block"
    lines = suggested(out["reason"])
    assert len(lines) == 2, out["reason"]
    for line in lines:
        done = run_suggested(project, line)
        assert done.returncode == 0, (line, done.stderr)
    state = load(project)
    assert queries.met(state, name) and state["completedSteps"] == [name]


@pytest.mark.parametrize("name", ["--help", "-c", "--note"])
def test_the_verify_command_works_for_any_criterion_name(project: Path, rs: Any, name: str) -> None:
    assert rs("init", "x").code == 0
    assert rs("criteria", "add", "--check", PASS, "--", name).code == 0
    own(project)
    out = stop(project, "working")
    assert out is not None and out["decision"] == "block"
    (line,) = suggested(out["reason"])
    assert line.startswith("ralphstate verify ")
    done = run_suggested(project, line)
    assert done.returncode == 0, (line, done.stderr)
    assert load(project)["evidence"][name]["result"] == "verified"


@pytest.mark.parametrize("name", ["--help", "-c", "--note"])
def test_the_run_prompt_commands_work_for_any_name(project: Path, rs: Any, name: str) -> None:
    assert rs("init", "x", "-c", name, "-s", name).code == 0
    prompt = rs("run", "--agent", "agent", "--dry-run").out
    lines = [line.strip() for line in prompt.splitlines() if line.startswith("     ralphstate ")]
    assert len(lines) == 2, prompt
    for line in lines:
        done = run_suggested(project, line)
        assert done.returncode == 0, (line, done.stderr)
    state = load(project)
    assert queries.met(state, name) and state["completedSteps"] == [name]


# -- the completion marker ---------------------------------------------------------------

BAD_MARKERS = [
    ("DONE  NOW", "a marker has single spaces between words"),
    ("DONE\tNOW", "a marker has single spaces between words"),
    (" DONE", "a marker cannot start or end with a space"),
    ("DONE ", "a marker cannot start or end with a space"),
    ("<loop-state>", "a marker cannot hold <loop-state>"),
    ("</LOOP-STATE>", "a marker cannot hold <loop-state>"),
    ("x" * 101, "a marker is at most 100 characters"),
    ("`DONE`", "a marker cannot hold a backtick"),
    ("DONE\x1b[0m", "a marker cannot hold control characters"),
]


@pytest.mark.parametrize(("marker", "problem"), BAD_MARKERS)
def test_a_marker_that_would_be_quoted_altered_is_refused_by_init(
    project: Path, rs: Any, marker: str, problem: str
) -> None:
    done = rs("init", "x", "-c", "a", "--marker", marker)
    assert done.code == 1 and done.out == ""
    assert done.err.startswith(f"ralphstate: {problem}")
    assert done.err.count("\n") == 1
    assert not (project / ".loop").exists()


@pytest.mark.parametrize(("marker", "problem"), BAD_MARKERS)
def test_the_marker_check_is_one_function(marker: str, problem: str) -> None:
    with pytest.raises(RalphstateError) as caught:
        mk.check_marker(marker)
    assert str(caught.value).startswith(problem)
    with pytest.raises(CorruptState):
        st.normalise({"completionMarker": marker})


@pytest.mark.parametrize(("marker", "problem"), BAD_MARKERS)
def test_a_template_with_such_a_marker_is_refused(
    project: Path, rs: Any, marker: str, problem: str
) -> None:
    template = project / "t.json"
    template.write_text(json.dumps({"spec": "x", "criteria": ["a"], "completionMarker": marker}))
    done = rs("init", "--from", str(template))
    assert done.code == 1 and problem in done.err
    assert not (project / ".loop").exists()


@pytest.mark.parametrize("marker", ["ALL DONE", "<done/>", "✓ finished", "x" * 100, "DONE!"])
def test_a_marker_repeated_exactly_as_quoted_completes(project: Path, rs: Any, marker: str) -> None:
    assert rs("init", "x", "-c", "a", "--marker", marker).code == 0
    rs("criteria", "set", "a", "true")
    own(project)
    out = stop(project, "Done.")
    assert out is not None and out["decision"] == "block"
    quoted = out["reason"].split("end your reply with ", 1)[1].split(" (outside code", 1)[0]
    assert quoted == marker
    out = stop(project, f"Everything is verified. {quoted}")
    assert out is not None and "decision" not in out
    assert load(project)["status"] == "complete"
