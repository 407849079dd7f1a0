"""The criteria are what the gate counts: the `criteria` list and every key of
`criteriaStatus` (the design notes' shape); a loop without criteria ends by the marker
alone only when the person started it so (`init --no-criteria`); blank names are
refused everywhere. Stops go through real `ralphstate hook stop` processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ralphstate.core import queries
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState
from ralphstate.storage.peruser import registry
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.loops import SID, stop


def hand_written(root: Path, raw: dict[str, Any]) -> Path:
    """A state.json written by hand, of a loop this machine knows."""
    loop = root / ".loop"
    loop.mkdir(exist_ok=True)
    path = loop / "state.json"
    path.write_text(json.dumps(raw))
    registry.record(LoopPaths(root, loop), st.parse(path.read_bytes()), None)
    return path


def state_of(root: Path) -> st.State:
    return st.parse((root / ".loop" / "state.json").read_bytes())


# -- criteria from criteriaStatus --------------------------------------------------------


def test_the_keys_of_criteria_status_are_criteria_after_the_list_in_order() -> None:
    state = st.normalise(
        {"criteria": ["b", "a"], "criteriaStatus": {"c": False, "a": True, "d": True}}
    )
    assert state["criteria"] == ["b", "a", "c", "d"]
    assert queries.unmet(state) == ["b", "c"]
    only_map = st.normalise({"criteriaStatus": {"test passes": True, "no lint errors": False}})
    assert only_map["criteria"] == ["test passes", "no lint errors"]


def test_a_design_notes_loop_without_a_criteria_list_is_held_by_its_unmet_criterion(
    project: Path, rs: Any
) -> None:
    hand_written(
        project,
        {
            "spec": "original user request",
            "criteriaStatus": {"test passes": True, "no lint errors": False},
            "status": "in_progress",
            "sessionId": SID,
        },
    )
    shown = rs("status")
    assert "criteria 1/2" in shown.out and "no lint errors" in shown.out
    out = stop(project)
    assert out is not None and out["decision"] == "block"
    assert "- no lint errors" in out["reason"]
    assert state_of(project)["status"] == "in_progress"


# -- a loop with no criteria -------------------------------------------------------------


def test_a_loop_with_no_criteria_never_ends_by_the_marker_alone(project: Path, rs: Any) -> None:
    started = rs("init", "spec only", "--max-iterations", "2")
    assert started.code == 0
    assert "no criteria" in started.out and "--no-criteria" in started.out
    out = stop(project)
    assert out is not None and out["decision"] == "block"
    assert "has no success criteria" in out["reason"]
    assert "ralphstate criteria add" in out["reason"]
    assert "--no-criteria" in out["reason"]
    assert state_of(project)["status"] == "in_progress"
    stop(project)
    released = stop(project)  # never a trap: the cap still lets the agent go
    assert released is not None and "decision" not in released
    assert (state_of(project)["status"], state_of(project)["pauseReason"]) == (
        "paused",
        "max_iterations",
    )


def test_a_hand_written_loop_with_no_criteria_is_held_too(project: Path) -> None:
    hand_written(project, {"spec": "x", "sessionId": SID})
    out = stop(project)
    assert out is not None and out["decision"] == "block"
    assert "has no success criteria" in out["reason"]


def test_no_criteria_lets_the_marker_alone_end_the_loop_and_every_message_says_so(
    project: Path, rs: Any
) -> None:
    started = rs("init", "spec only", "--no-criteria")
    assert started.code == 0, started
    assert "the completion marker alone ends it" in started.out
    state = state_of(project)
    assert state["noCriteria"] is True
    cast_state: dict[str, Any] = dict(state)
    cast_state["sessionId"] = SID
    (project / ".loop" / "state.json").write_bytes(st.dumps(st.normalise(cast_state)))

    assert "no criteria (--no-criteria): the completion marker alone ends this loop" in (
        rs("status").out
    )
    from ralphstate.core import restore

    assert "no criteria (--no-criteria): the completion marker alone ends it" in (
        restore.context(state_of(project), "compact")
    )
    held = stop(project, "Still working.")
    assert held is not None and held["decision"] == "block"
    assert "no criteria (--no-criteria): the completion marker alone ends it" in held["reason"]
    done = stop(project)
    assert done is not None and "decision" not in done
    assert done["systemMessage"].startswith("ralphstate: loop complete after 1 iteration")
    assert (
        "it has no criteria (--no-criteria), so the completion marker alone ended it"
        in (done["systemMessage"])
    )
    assert state_of(project)["status"] == "complete"


def test_no_criteria_is_refused_with_criteria(project: Path, rs: Any) -> None:
    done = rs("init", "x", "-c", "a", "--no-criteria")
    assert done.code == 1
    assert done.err == (
        "ralphstate: --no-criteria starts a loop without criteria; leave out -c (and a"
        " template's criteria), or leave out --no-criteria.\n"
    )
    assert not (project / ".loop").exists()


# -- blank names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["init", "x", "-c", "a", "-c", "  "], "a criterion needs a name, not only spaces."),
        (["init", "x", "-s", "\t"], "a step needs some text, not only spaces."),
        (["init", "x", "-c", ""], "a criterion needs a name, not only spaces."),
    ],
)
def test_init_refuses_blank_names(project: Path, rs: Any, args: list[str], error: str) -> None:
    done = rs(*args)
    assert (done.code, done.out, done.err) == (1, "", f"ralphstate: {error}\n")
    assert not (project / ".loop").exists()


def test_a_template_with_a_blank_name_is_refused(project: Path, rs: Any) -> None:
    template = project / "t.json"
    template.write_text(json.dumps({"spec": "x", "criteria": ["a", " "]}))
    done = rs("init", "--from", str(template))
    assert done.code == 1
    assert done.err == (
        f"ralphstate: template {template}: 'criteria' holds a blank name; give every item"
        " some text, or remove it\n"
    )


def test_a_template_in_the_design_notes_shape_brings_its_criteria(project: Path, rs: Any) -> None:
    template = project / "t.json"
    template.write_text(json.dumps({"spec": "x", "criteriaStatus": {"a": True, "b": False}}))
    assert rs("init", "--from", str(template)).code == 0
    assert state_of(project)["criteria"] == ["a", "b"]


def test_commands_refuse_blank_names(project: Path, rs: Any) -> None:
    rs("init", "x", "-c", "a")
    before = (project / ".loop" / "state.json").read_bytes()
    assert rs("criteria", "add", " ").err == (
        "ralphstate: a criterion needs a name, not only spaces.\n"
    )
    assert rs("step", "add", "\n").err == "ralphstate: a step needs some text, not only spaces.\n"
    assert (project / ".loop" / "state.json").read_bytes() == before


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"criteria": ["a", " "]}, "'criteria' holds a blank name"),
        ({"criteriaStatus": {"": False}}, "'criteriaStatus' holds a blank name"),
        ({"steps": ["\t"]}, "'steps' holds a blank name"),
        ({"completedSteps": [" "]}, "'completedSteps' holds a blank name"),
    ],
)
def test_a_state_file_with_a_blank_name_is_refused(raw: dict[str, Any], problem: str) -> None:
    with pytest.raises(CorruptState) as caught:
        st.normalise(raw)
    assert problem in str(caught.value)
