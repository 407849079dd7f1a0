"""The task list mirror as a pure function (`core.tasklist.mirror`): each call of a task
tool, its effect on the steps and the mirrored list; and `taskList` as `normalise`
reads it. tests/hooks/test_tasks.py runs the same through real hook processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from ralphstate.core import limits, tasklist
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState
from tests.helpers.taskcalls import calls

LIST = "session-a"


def loop(steps: tuple[str, ...] = ("tokenizer", "parser"), done: tuple[str, ...] = ()) -> st.State:
    state = st.new("Build the parser", ["tests pass"], list(steps), now="2026-01-01T00:00:00Z")
    st.set_steps(state, state["steps"], list(done))
    return state


def call(
    state: st.State, tool: str, tool_input: Any, response: Any, boxes: list[str] | None = None
) -> tuple[list[str], list[dict[str, object]]]:
    events: list[dict[str, object]] = []
    ticks = tasklist.mirror(state, events, tool, tool_input, response, LIST, boxes)
    return ticks, events


def created(state: st.State, task_id: str, subject: str, boxes: list[str] | None = None) -> None:
    call(
        state,
        "TaskCreate",
        {"subject": subject},
        {"task": {"id": task_id, "subject": subject}},
        boxes,
    )


def moved(state: st.State, task_id: str, to: str, boxes: list[str] | None = None) -> list[str]:
    response = {"success": True, "taskId": task_id, "statusChange": {"from": "x", "to": to}}
    return call(state, "TaskUpdate", {"taskId": task_id, "status": to}, response, boxes)[0]


def todos(state: st.State, old: list[tuple[str, str]], new: list[tuple[str, str]]) -> None:
    def items(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"content": c, "status": s} for c, s in pairs]

    call(state, "TodoWrite", {}, {"oldTodos": items(old), "newTodos": items(new)})


def test_create_complete_reopen_delete() -> None:
    state = loop()
    created(state, "1", "exporter")
    assert state["steps"] == ["tokenizer", "parser", "exporter"]
    moved(state, "1", "in_progress")
    assert state["completedSteps"] == [] and state["taskList"][0]["status"] == "in_progress"
    moved(state, "1", "completed")
    assert state["completedSteps"] == ["exporter"]
    moved(state, "1", "pending")
    assert state["completedSteps"] == []
    moved(state, "1", "deleted")
    assert state["steps"] == ["tokenizer", "parser"] and state["taskList"] == []


def test_events_say_what_changed() -> None:
    state = loop()
    response = {"task": {"id": "1", "subject": "exporter"}}
    _, events = call(state, "TaskCreate", {}, response)
    assert events == [
        {"event": "step_added", "step": "exporter", "by": "task"},
        {"event": "task", "action": "added", "subject": "exporter", "id": "1"},
    ]
    _, events = call(state, "TaskCreate", {}, response)  # a repeat changes nothing
    assert events == []


def test_a_step_with_two_tasks_is_done_when_both_are() -> None:
    state = loop()
    created(state, "1", "exporter")
    created(state, "2", "exporter")
    moved(state, "1", "completed")
    assert state["completedSteps"] == []
    moved(state, "2", "completed")
    assert state["completedSteps"] == ["exporter"]


def test_deleting_one_of_two_tasks_on_a_mirrored_step_keeps_it_for_the_other() -> None:
    state = loop()
    created(state, "1", "exporter")
    created(state, "2", "exporter")
    moved(state, "1", "deleted")
    assert state["steps"][-1] == "exporter"
    assert state["taskList"][0]["added"] is True
    moved(state, "2", "deleted")
    assert state["steps"] == ["tokenizer", "parser"]


def test_a_rename_renames_the_mirrored_step_in_place() -> None:
    state = loop()
    created(state, "1", "exporter")
    created(state, "2", "docs")
    response = {"success": True, "taskId": "1", "updatedFields": ["subject"]}
    call(state, "TaskUpdate", {"taskId": "1", "subject": "CSV exporter"}, response)
    assert state["steps"] == ["tokenizer", "parser", "CSV exporter", "docs"]
    assert state["taskList"][0]["step"] == "CSV exporter"
    # a person's step is never renamed by a task on it
    created(state, "3", "parser")
    call(state, "TaskUpdate", {"taskId": "3", "subject": "parse"}, {"success": True, "taskId": "3"})
    assert state["steps"] == ["tokenizer", "parser", "CSV exporter", "docs"]
    assert state["taskList"][2]["subject"] == "parse" and state["taskList"][2]["step"] == "parser"


def test_a_task_created_again_after_its_step_is_done_leaves_it_done() -> None:
    state = loop()
    created(state, "1", "exporter")
    moved(state, "1", "completed")
    state["taskList"][0]["list"] = "an earlier session"
    created(state, "1", "exporter")
    assert state["completedSteps"] == ["exporter"]
    assert state["taskList"][0]["list"] == LIST and state["taskList"][0]["status"] == "pending"


def test_the_mirror_is_bounded_forgetting_completed_tasks_first() -> None:
    state = loop(steps=())
    for i in range(limits.MAX_MIRRORED_TASKS):
        created(state, str(i), f"task {i}")
    moved(state, "5", "completed")
    created(state, "new", "one more")
    assert len(state["taskList"]) == limits.MAX_MIRRORED_TASKS
    assert "task 5" not in [t["subject"] for t in state["taskList"]]
    assert state["completedSteps"] == ["task 5"]  # the step stays done
    _, events = call(state, "TaskCreate", {}, {"task": {"id": "x", "subject": "no room"}})
    assert events == [{"event": "task", "action": "not_mirrored", "subject": "no room"}]
    assert "no room" not in state["steps"]


def test_a_long_subject_is_one_line_clipped() -> None:
    state = loop()
    created(state, "1", "a\nb  " + "c" * 400)
    subject = state["taskList"][0]["subject"]
    assert len(subject) == limits.MAX_TASK_SUBJECT_CHARS and subject.startswith("a b cc")
    assert subject.endswith("…") and state["steps"][-1] == subject
    st.normalise(cast(st.Raw, state))  # what the mirror writes reads back


def test_todo_write_mirrors_only_its_own_items() -> None:
    state = loop()
    todos(state, [], [("parser", "in_progress"), ("exporter", "pending")])
    assert state["steps"] == ["tokenizer", "parser", "exporter"]
    todos(state, [("parser", "in_progress"), ("exporter", "pending")], [("parser", "completed")])
    assert state["steps"] == ["tokenizer", "parser"]  # exporter was the mirror's
    assert state["completedSteps"] == ["parser"]
    todos(state, [("parser", "completed")], [])
    assert state["steps"] == ["tokenizer", "parser"]  # the person's step stays


def test_with_a_task_file_only_boxes_are_ticked() -> None:
    state = loop(steps=("exporter", "docs"))
    boxes = ["exporter", "docs"]
    created(state, "1", "exporter", boxes)
    created(state, "2", "refactor", boxes)
    assert state["steps"] == ["exporter", "docs"]
    assert [t["step"] for t in state["taskList"]] == ["exporter", None]
    assert moved(state, "1", "completed", boxes) == ["exporter"]
    assert moved(state, "2", "completed", boxes) == []
    assert state["completedSteps"] == []  # the caller ticks the box, then reads the file
    assert moved(state, "1", "pending", boxes) == []
    moved(state, "1", "deleted", boxes)
    assert state["steps"] == ["exporter", "docs"]


@pytest.mark.parametrize(
    ("tool", "tool_input", "response"),
    [
        ("TaskCreate", {}, {"task": {"subject": "no id"}}),
        ("TaskCreate", {}, {"task": {"id": True, "subject": "a bool"}}),
        ("TaskCreate", {}, {"task": {"id": "1", "subject": 7}}),
        ("TaskCreate", {}, None),
        ("TaskUpdate", {"taskId": "9", "status": "completed"}, {"success": True, "taskId": "9"}),
        ("TaskUpdate", {"taskId": "1", "status": "exploded"}, {"success": True, "taskId": "1"}),
        ("TodoWrite", {}, {"newTodos": [{"content": "x", "status": "done"}, "junk"]}),
        ("TaskList", {}, {"tasks": []}),
    ],
)
def test_what_cannot_be_read_changes_nothing(tool: str, tool_input: Any, response: Any) -> None:
    state = loop()
    created(state, "1", "exporter")
    before = st.dumps(state)
    assert call(state, tool, tool_input, response) == ([], [])
    assert st.dumps(state) == before


# -- taskList in state.json ---------------------------------------------------------


def test_a_task_takes_defaults_and_keeps_its_own_keys_in_order() -> None:
    state = st.normalise({"taskList": [{"note": "mine", "subject": "exporter", "id": "1"}]})
    assert list(state["taskList"][0].items()) == [
        ("list", None),
        ("id", "1"),
        ("subject", "exporter"),
        ("status", "pending"),
        ("step", None),
        ("added", False),
        ("note", "mine"),
    ]
    assert st.normalise({"taskList": None})["taskList"] == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"x": 1}, "'taskList' must be a list of tasks"),
        (["exporter"], "'taskList' must be a list of tasks"),
        ([{"id": "1"}], "taskList[0].subject must be some text"),
        ([{"subject": "  "}], "taskList[0].subject must be some text"),
        ([{"subject": "x" * 301}], "taskList[0].subject must be some text of at most 300"),
        ([{"subject": "a", "status": "deleted"}], "taskList[0].status must be one of"),
        ([{"subject": "a", "id": 3}], "taskList[0].id must be null or a string"),
        ([{"subject": "a", "list": "x" * 101}], "taskList[0].list must be null or a string"),
        ([{"subject": "a", "step": " "}], "taskList[0].step must be null or the text"),
        ([{"subject": "a", "added": "yes"}], "taskList[0].added must be true or false"),
        ([{"subject": "a"}] * 101, "'taskList' holds 101 tasks, more than 100"),
    ],
)
def test_a_task_list_that_cannot_be_used_is_refused(value: object, problem: str) -> None:
    with pytest.raises(CorruptState) as caught:
        st.normalise({"taskList": value})
    assert problem in str(caught.value)


def test_a_template_does_not_bring_a_former_loops_tasks(rs: Any, project: Path) -> None:
    template = project / "template.json"
    task = {"list": "old", "id": "1", "subject": "exporter", "step": "exporter"}
    template.write_bytes(
        st.dumps(st.normalise({"spec": "t", "criteria": ["a"], "taskList": [task]}))
    )
    assert rs("init", "--from", str(template)).code == 0
    assert st.parse((project / ".loop" / "state.json").read_bytes())["taskList"] == []


# -- the bounds, at their boundary ---------------------------------------------------


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one more"])
def test_max_mirrored_tasks(extra: int) -> None:
    tasks = [{"subject": f"t{i}"} for i in range(limits.MAX_MIRRORED_TASKS + extra)]
    if extra:
        with pytest.raises(CorruptState, match="more than"):
            st.normalise({"taskList": tasks})
    else:
        assert len(st.normalise({"taskList": tasks})["taskList"]) == limits.MAX_MIRRORED_TASKS


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one more"])
def test_max_task_subject_chars(extra: int) -> None:
    text = "x" * (limits.MAX_TASK_SUBJECT_CHARS + extra)
    state = loop()
    created(state, "1", text)
    kept = state["taskList"][0]["subject"]
    assert kept == (text[: limits.MAX_TASK_SUBJECT_CHARS - 1] + "…" if extra else text)
    if extra:
        with pytest.raises(CorruptState, match="subject"):
            st.normalise({"taskList": [{"subject": text}]})


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one more"])
def test_max_task_id_chars(extra: int) -> None:
    task_id = "7" * (limits.MAX_TASK_ID_CHARS + extra)
    state = loop()
    created(state, task_id, "exporter")
    assert [t["id"] for t in state["taskList"]] == ([] if extra else [task_id])


# -- any sequence of calls ----------------------------------------------------------------


@given(
    steps=hs.lists(hs.sampled_from(["tokenizer", "parser", "a"]), unique=True, max_size=3),
    with_file=hs.booleans(),
    sequence=hs.lists(hs.tuples(hs.sampled_from(["s1", "s2"]), calls), max_size=12),
)
def test_any_calls_keep_the_state_whole_and_the_persons_steps(
    steps: list[str], with_file: bool, sequence: list[tuple[str, tuple[str, Any, Any]]]
) -> None:
    state = loop(steps=tuple(steps))
    boxes = list(steps) if with_file else None
    for list_id, (tool, tool_input, response) in sequence:
        events: list[dict[str, object]] = []
        ticks = tasklist.mirror(state, events, tool, tool_input, response, list_id, boxes)
        assert set(ticks) <= set(steps)
        assert all(isinstance(e["event"], str) for e in events)
        assert st.parse(st.dumps(state)) == state  # written, it reads back as it is
        assert len(state["taskList"]) <= limits.MAX_MIRRORED_TASKS
        assert set(steps) <= set(state["steps"])  # a person's step is never removed
        if with_file:
            assert state["steps"] == steps and state["completedSteps"] == []
        else:
            linked = {t["step"] for t in state["taskList"]} - {None}
            assert linked <= set(state["steps"])
