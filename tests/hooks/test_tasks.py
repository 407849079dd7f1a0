"""The PostToolUse hook mirroring the agent's task tools into the loop, and the
SessionStart restore of the mirrored list, through real `ralphstate hook ...` processes
on real files. The inputs have the shapes Claude Code 2.1.330 sends
(tests/fixtures/agents/claude_post_tool_use_*.json)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import filelock
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from ralphstate.core import state as st
from tests.helpers import FIXTURES, hardening, run_process
from tests.helpers.hardening import hook_kept_its_promises, processes_started
from tests.helpers.loops import SID, make_loop
from tests.helpers.race import racing_hook
from tests.helpers.taskcalls import calls as tasklist_calls


def hook(
    event: str, root: Path, data: dict[str, Any] | bytes, env: dict[str, str] | None = None
) -> tuple[dict[str, Any] | None, str]:
    raw = data if isinstance(data, bytes) else orjson.dumps({"cwd": str(root), **data})
    done = run_process(["hook", event], cwd=root, input=raw, env=env, timeout=20)
    assert done.returncode == 0
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    if out is not None:
        assert done.stdout.count(b"\n") == 1, "exactly one JSON object"
    return out, done.stderr.decode()


def create(task_id: str, subject: str, session: str = SID) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "tool_name": "TaskCreate",
        "tool_input": {"subject": subject, "description": "", "activeForm": subject},
        "tool_response": {"task": {"id": task_id, "subject": subject, "description": ""}},
        "tool_use_id": "toolu_01",
    }


def update(
    task_id: str, to: str, came: str = "pending", session: str = SID, success: bool = True
) -> dict[str, Any]:
    response: dict[str, Any] = {"success": success, "taskId": task_id}
    if success:
        response["updatedFields"] = ["status"]
        response["statusChange"] = {"from": came, "to": to}
    else:
        response["updatedFields"] = []
        response["error"] = "TaskCompleted hook feedback: check failed"
    return {
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "tool_name": "TaskUpdate",
        "tool_input": {"taskId": task_id, "status": to},
        "tool_response": response,
    }


def todo_write(old: list[tuple[str, str]], new: list[tuple[str, str]]) -> dict[str, Any]:
    def items(todos: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"content": c, "status": s, "activeForm": c} for c, s in todos]

    return {
        "session_id": SID,
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {"todos": items(new)},
        "tool_response": {"oldTodos": items(old), "newTodos": items(new)},
    }


def post(root: Path, data: dict[str, Any], env: dict[str, str] | None = None) -> str:
    """Run the hook; it never answers with anything on a usable loop."""
    out, err = hook("post-tool-use", root, data, env)
    assert out is None
    return err


def read(path: Path) -> st.State:
    return st.parse(path.read_bytes())


# -- TaskCreate / TaskUpdate --------------------------------------------------------


def test_a_created_task_is_a_step_recorded_with_its_origin(root: Path) -> None:
    path = make_loop(root)
    assert post(root, create("1", "Write the  exporter\n")) == ""
    state = read(path)
    assert state["steps"] == ["tokenizer", "parser", "Write the exporter"]
    assert state["remainingSteps"] == state["steps"]
    assert state["taskList"] == [
        {
            "list": SID,
            "id": "1",
            "subject": "Write the exporter",
            "status": "pending",
            "step": "Write the exporter",
            "added": True,
        }
    ]
    history = (root / ".loop" / "history.jsonl").read_text()
    assert '"event":"step_added"' in history and '"by":"task"' in history


def test_started_changes_only_the_tasks_status(root: Path) -> None:
    path = make_loop(root)
    post(root, create("1", "Write the exporter"))
    post(root, update("1", "in_progress"))
    state = read(path)
    assert state["taskList"][0]["status"] == "in_progress"
    assert state["completedSteps"] == []
    assert state["steps"] == ["tokenizer", "parser", "Write the exporter"]


def test_completed_makes_its_step_done_and_reopened_undoes_it(root: Path) -> None:
    path = make_loop(root)
    post(root, create("1", "Write the exporter"))
    post(root, update("1", "completed", came="in_progress"))
    state = read(path)
    assert state["completedSteps"] == ["Write the exporter"]
    assert state["remainingSteps"] == ["tokenizer", "parser"]
    assert state["taskList"][0]["status"] == "completed"
    post(root, update("1", "in_progress", came="completed"))
    state = read(path)
    assert state["completedSteps"] == [] and state["taskList"][0]["status"] == "in_progress"


def test_a_completion_refused_by_the_gate_changes_nothing(root: Path) -> None:
    path = make_loop(root)
    post(root, create("1", "Write the exporter"))
    before = path.read_bytes()
    post(root, update("1", "completed", success=False))
    assert path.read_bytes() == before


def test_a_task_on_a_step_the_person_wrote_completes_it_and_never_removes_it(
    root: Path,
) -> None:
    path = make_loop(root)
    post(root, create("1", "parser"))
    state = read(path)
    assert state["steps"] == ["tokenizer", "parser"]
    assert state["taskList"][0]["step"] == "parser" and state["taskList"][0]["added"] is False
    post(root, update("1", "completed"))
    assert read(path)["completedSteps"] == ["parser"]
    post(root, update("1", "in_progress", came="completed"))
    post(root, update("1", "deleted", came="in_progress"))
    state = read(path)
    assert state["steps"] == ["tokenizer", "parser"] and state["taskList"] == []


def test_deleted_removes_the_mirrored_step(root: Path) -> None:
    path = make_loop(root)
    post(root, create("1", "Write the exporter"))
    post(root, create("2", "Test it"))
    post(root, update("1", "deleted"))
    state = read(path)
    assert state["steps"] == ["tokenizer", "parser", "Test it"]
    assert [t["id"] for t in state["taskList"]] == ["2"]


def test_a_deleted_task_whose_step_is_done_leaves_the_step(root: Path) -> None:
    path = make_loop(root)
    post(root, create("1", "Write the exporter"))
    post(root, update("1", "completed"))
    post(root, update("1", "deleted", came="completed"))
    state = read(path)
    assert state["completedSteps"] == ["Write the exporter"] and state["taskList"] == []


def test_an_update_of_a_task_never_created_here_changes_nothing(root: Path) -> None:
    path = make_loop(root)
    before = path.read_bytes()
    post(root, update("7", "completed"))
    assert path.read_bytes() == before


def test_another_tool_is_passed_untouched(root: Path) -> None:
    path = make_loop(root)
    before = path.read_bytes()
    data = {"session_id": SID, "tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert post(root, data) == ""
    assert path.read_bytes() == before
    assert not (root / ".loop" / "state.lock").exists()


@pytest.mark.parametrize(
    ("named", "used"), [("shared", "shared"), ("x" * 100, "x" * 100), ("x" * 101, SID)]
)
def test_the_list_named_in_the_environment_is_the_tasks_list(
    root: Path, named: str, used: str
) -> None:
    path = make_loop(root)
    post(root, create("1", "Write the exporter"), env={"CLAUDE_CODE_TASK_LIST_ID": named})
    assert read(path)["taskList"][0]["list"] == used


def test_a_plan_recreated_in_a_new_list_is_the_same_tasks(root: Path) -> None:
    """After /clear the session (and its task list) is new; the model recreates its open
    tasks as the restore told it: each is tied again to the step it had, no duplicate."""
    path = make_loop(root)
    post(root, create("1", "Write the exporter"))
    post(root, create("2", "Test it"))
    post(root, update("1", "completed"))
    cast_state = read(path)
    cast_state["sessionId"] = "after-clear"
    path.write_bytes(st.dumps(cast_state))
    post(root, create("1", "Test it", session="after-clear"))
    state = read(path)
    assert state["steps"] == ["tokenizer", "parser", "Write the exporter", "Test it"]
    tasks = {t["subject"]: (t["list"], t["id"], t["status"]) for t in state["taskList"]}
    assert tasks == {
        "Write the exporter": (SID, "1", "completed"),
        "Test it": ("after-clear", "1", "pending"),
    }
    post(root, update("1", "completed", session="after-clear"))
    assert read(path)["completedSteps"] == ["Write the exporter", "Test it"]


def recorded(root: Path, name: str) -> bytes:
    """A PostToolUse input Claude Code 2.1.330 sent (tests/fixtures/agents/)."""
    raw = (FIXTURES / "agents" / f"claude_post_tool_use_{name}.json").read_text()
    placed = raw.replace("{project}", str(root)).replace("{transcript}", str(root / "t.jsonl"))
    return placed.encode()


def test_the_inputs_claude_code_sends_are_mirrored(root: Path) -> None:
    """Create, start, a completion the gate refused, complete: as the client sent them."""
    session = orjson.loads(recorded(root, "task_create"))["session_id"]
    path = make_loop(root, session=session)
    for name in ("task_create", "task_update_in_progress", "task_update_refused"):
        assert hook("post-tool-use", root, recorded(root, name)) == (None, "")
    state = read(path)
    assert state["steps"][-1] == "Write the exporter" and state["completedSteps"] == []
    assert state["taskList"][0]["status"] == "in_progress"
    assert hook("post-tool-use", root, recorded(root, "task_update_completed")) == (None, "")
    assert read(path)["completedSteps"] == ["Write the exporter"]


def test_the_todo_write_claude_code_sends_is_mirrored(root: Path) -> None:
    session = orjson.loads(recorded(root, "todo_write"))["session_id"]
    path = make_loop(root, session=session)
    assert hook("post-tool-use", root, recorded(root, "todo_write")) == (None, "")
    state = read(path)
    assert state["steps"] == ["tokenizer", "parser", "Write the exporter", "Test it"]
    assert state["completedSteps"] == ["Write the exporter"]


# -- TodoWrite ----------------------------------------------------------------------


def test_todo_write_mirrors_the_whole_list(root: Path) -> None:
    path = make_loop(root)
    post(root, todo_write([], [("Write the exporter", "in_progress"), ("Test it", "pending")]))
    state = read(path)
    assert state["steps"] == ["tokenizer", "parser", "Write the exporter", "Test it"]
    assert [(t["id"], t["status"]) for t in state["taskList"]] == [
        (None, "in_progress"),
        (None, "pending"),
    ]
    post(
        root,
        todo_write(
            [("Write the exporter", "in_progress"), ("Test it", "pending")],
            [("Write the exporter", "completed"), ("Test it", "pending")],
        ),
    )
    assert read(path)["completedSteps"] == ["Write the exporter"]
    # the model drops an open item, and a person's step it had listed
    post(root, todo_write([("Test it", "pending")], [("parser", "pending")]))
    post(root, todo_write([("parser", "pending")], []))
    state = read(path)
    assert state["steps"] == ["tokenizer", "parser", "Write the exporter"]
    assert state["completedSteps"] == ["Write the exporter"]


def test_todo_write_after_clear_removes_nothing(root: Path) -> None:
    path = make_loop(root)
    post(root, todo_write([], [("Write the exporter", "pending")]))
    post(root, todo_write([], [("Test it", "pending")]))  # a new list: nothing was removed
    assert read(path)["steps"] == ["tokenizer", "parser", "Write the exporter", "Test it"]


# -- whose loop ---------------------------------------------------------------------


def test_another_sessions_loop_is_untouched(root: Path) -> None:
    path = make_loop(root, session="session-b")
    before = path.read_bytes()
    assert post(root, create("1", "Write the exporter")) == ""
    assert path.read_bytes() == before
    assert not (root / ".loop" / "state.lock").exists()


@pytest.mark.parametrize("status", ["paused", "complete", "cancelled"])
def test_a_loop_not_in_progress_is_untouched(root: Path, status: str) -> None:
    path = make_loop(root, status=status)
    before = path.read_bytes()
    assert post(root, create("1", "Write the exporter")) == ""
    assert path.read_bytes() == before


def test_a_loop_that_came_with_a_clone_is_untouched(root: Path) -> None:
    path = make_loop(root, session=None, known=False)
    before = path.read_bytes()
    assert post(root, create("1", "Write the exporter")) == ""
    assert path.read_bytes() == before


def test_an_unowned_loop_known_here_is_adopted(root: Path) -> None:
    path = make_loop(root, session=None)
    post(root, create("1", "Write the exporter"))
    state = read(path)
    assert state["sessionId"] == SID and state["steps"][-1] == "Write the exporter"
    assert '"by":"post-tool-use"' in (root / ".loop" / "history.jsonl").read_text()


def test_inside_ralphstate_run_the_loop_is_mirrored_not_taken(root: Path) -> None:
    path = make_loop(root, session="the-runner")
    post(root, create("1", "Write the exporter", session="iteration-3"), {"RALPHSTATE_RUNNER": "1"})
    state = read(path)
    assert state["sessionId"] == "the-runner" and state["steps"][-1] == "Write the exporter"


# -- faults -------------------------------------------------------------------------


def test_a_broken_state_file_fails_open_untouched_and_is_told_once(root: Path) -> None:
    make_loop(root)
    path = root / ".loop" / "state.json"
    path.write_bytes(b'{"spec": "x", "steps": [')
    out, err = hook("post-tool-use", root, create("1", "Write the exporter"))
    assert out is not None and set(out) == {"systemMessage"}
    assert "not valid JSON" in out["systemMessage"]
    assert err.startswith("ralphstate hook post-tool-use: ") and "allowing" in err
    assert path.read_bytes() == b'{"spec": "x", "steps": ['
    again, _ = hook("post-tool-use", root, create("2", "Test it"))
    assert again is None  # once a session
    assert path.read_bytes() == b'{"spec": "x", "steps": ['


@pytest.mark.parametrize(
    "data",
    [b"not json", b"[1]", {"tool_name": "TaskCreate", "tool_response": {}}],
    ids=["not json", "not an object", "no session"],
)
def test_bad_input_fails_open(root: Path, data: dict[str, Any] | bytes) -> None:
    path = make_loop(root)
    before = path.read_bytes()
    out, err = hook("post-tool-use", root, data)
    assert out is None and err.startswith("ralphstate hook post-tool-use: ")
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "response",
    [
        {"task": "1"},
        {"task": {"id": "1", "subject": "   "}},
        {"task": {"id": {"x": 1}, "subject": "ok"}},
        {"task": {"id": "1" * 200, "subject": "ok"}},
        [],
    ],
    ids=["task not an object", "blank subject", "id not text", "id too long", "not an object"],
)
def test_a_call_that_cannot_be_read_is_ignored(root: Path, response: Any) -> None:
    path = make_loop(root)
    before = path.read_bytes()
    data = create("1", "x")
    data["tool_response"] = response
    assert post(root, data) == ""
    assert path.read_bytes() == before


# -- a concurrent Stop --------------------------------------------------------------


def test_a_stop_and_a_mirrored_task_at_once_lose_nothing(root: Path) -> None:
    """Both hooks have read the state and wait for its lock at the same time; each then
    writes what it decided on the state as it is under the lock."""
    path = make_loop(root)
    lock = filelock.FileLock(str(root / ".loop" / "state.lock"))
    children: list[tuple[subprocess.Popen[bytes], Path]] = []
    try:
        race(root, lock, children)
    except BaseException:
        for child, _ in children:
            child.kill()
            child.communicate()
        raise
    outs = []
    for child, _ in children:
        out, err = child.communicate(timeout=30)
        assert child.returncode == 0, err
        outs.append(out)
    assert orjson.loads(outs[0])["decision"] == "block"
    assert outs[1] == b""
    state = read(path)
    assert state["iteration"] == 1  # the stop's block
    assert state["steps"][-1] == "Write the exporter"  # and the mirrored task
    assert state["taskList"][0]["subject"] == "Write the exporter"


def race(
    root: Path, lock: filelock.FileLock, children: list[tuple[subprocess.Popen[bytes], Path]]
) -> None:
    """Start a Stop and a PostToolUse while `lock` is held; let go once both wait for it."""
    with lock:
        for event, data in (
            ("stop", {"session_id": SID, "last_assistant_message": "working"}),
            ("post-tool-use", create("1", "Write the exporter")),
        ):
            mark = root.parent / f"waiting-{event}"
            child = racing_hook(root, event, orjson.dumps({"cwd": str(root), **data}), mark)
            children.append((child, mark))
        for child, mark in children:
            deadline = time.monotonic() + 20
            while not mark.exists():
                if child.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the hook never asked for the lock: {mark.name}")
                time.sleep(0.005)


# -- with a task file ---------------------------------------------------------------

TASKS = b"# Plan\r\n\r\n- [ ] Write the exporter\r\n  - [ ] Test it\r\n- [x] Done before\r\n"


def task_loop(root: Path) -> Path:
    (root / "TODO.md").write_bytes(TASKS)
    return make_loop(
        root,
        tasksFile="TODO.md",
        steps=["Write the exporter", "Test it", "Done before"],
        completedSteps=["Done before"],
    )


def test_a_completed_task_ticks_its_box_and_nothing_else(root: Path) -> None:
    path = task_loop(root)
    post(root, create("1", "Write the exporter"))
    post(root, create("2", "Refactor the CLI"))  # no box: kept in the mirror only
    assert (root / "TODO.md").read_bytes() == TASKS
    state = read(path)
    assert state["steps"] == ["Write the exporter", "Test it", "Done before"]
    assert [t["step"] for t in state["taskList"]] == ["Write the exporter", None]
    post(root, update("1", "completed"))
    post(root, update("2", "completed"))
    after = (root / "TODO.md").read_bytes()
    assert after == TASKS.replace(b"- [ ] Write", b"- [x] Write")
    state = read(path)
    assert state["completedSteps"] == ["Write the exporter", "Done before"]
    assert state["steps"] == ["Write the exporter", "Test it", "Done before"]
    # reopening a task never unchecks a box, nor does deleting it remove a line
    post(root, update("1", "in_progress", came="completed"))
    post(root, update("1", "deleted", came="in_progress"))
    assert (root / "TODO.md").read_bytes() == after


def test_a_task_file_that_cannot_be_read_fails_open(root: Path) -> None:
    path = task_loop(root)
    (root / "TODO.md").unlink()
    before = path.read_bytes()
    out, _ = hook("post-tool-use", root, create("1", "Write the exporter"))
    assert out is not None and "TODO.md does not exist" in out["systemMessage"]
    assert path.read_bytes() == before


# -- SessionStart -------------------------------------------------------------------


def test_the_restore_lists_the_tasks_open_first_and_how_to_recreate_them(root: Path) -> None:
    make_loop(root)
    post(root, create("1", "Write the exporter"))
    post(root, create("2", "Test it"))
    post(root, update("1", "completed"))
    post(root, update("2", "in_progress"))
    out, _ = hook("session-start", root, {"session_id": SID, "source": "compact"})
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert (
        "Task list (1 open of 2, mirrored from your task tools):\n"
        "- [>] Test it\n"
        "- [x] Write the exporter\n"
    ) in context
    assert context.index("Test it\n") < context.index("</loop-state>")
    assert "recreate the open tasks listed above with TaskCreate" in context


def test_without_tasks_the_restore_says_nothing_of_them(root: Path) -> None:
    make_loop(root)
    out, _ = hook("session-start", root, {"session_id": SID, "source": "startup"})
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "Task list" not in context and "TaskCreate" not in context


def test_with_every_task_done_the_restore_asks_for_none_to_be_recreated(root: Path) -> None:
    make_loop(root)
    post(root, create("1", "Write the exporter"))
    post(root, update("1", "completed"))
    out, _ = hook("session-start", root, {"session_id": SID, "source": "startup"})
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert (
        "Task list (0 open of 1, mirrored from your task tools):\n- [x] Write the exporter\n"
        in context
    )
    assert "TaskCreate" not in context


def test_the_restore_reads_the_task_file(root: Path) -> None:
    path = task_loop(root)
    before = path.read_bytes()
    (root / "TODO.md").write_bytes(TASKS.replace(b"- [ ] Write", b"- [x] Write"))
    out, _ = hook("session-start", root, {"session_id": SID, "source": "startup"})
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "Steps done:\n- Write the exporter\n- Done before\n" in context
    assert "Steps remaining:\n- Test it\n" in context
    assert path.read_bytes() == before  # read for the restore, not written


# -- status -------------------------------------------------------------------------


def test_status_shows_which_steps_came_from_the_task_list(root: Path) -> None:
    path = task_loop(root)
    (root / "TODO.md").write_bytes(TASKS)
    post(root, create("1", "Write the exporter"))
    post(root, create("2", "Refactor the CLI"))
    shown = run_process(["status"], cwd=root)
    assert shown.returncode == 0
    lines = shown.stdout.decode().splitlines()
    assert "  [>] Write the exporter  (next)  (task list: #1)" in lines
    assert "  [ ] Test it" in lines
    assert lines[-2:] == ["tasks on no step 1 (task list only):", "  [ ] #2 Refactor the CLI"]
    as_json = orjson.loads(run_process(["status", "--json"], cwd=root).stdout)
    assert [(t["id"], t["step"]) for t in as_json["taskList"]] == [
        ("1", "Write the exporter"),
        ("2", None),
    ]
    assert read(path)["taskList"] == as_json["taskList"]


# -- whatever arrives ----------------------------------------------------------------------

LOOPS: dict[str, dict[str, Any]] = {
    "owned": {},
    "another session's": {"session": "session-b"},
    "paused": {"status": "paused"},
    "unowned, known": {"session": None},
    "with a task file": {"tasksFile": "TODO.md", "steps": ["Write the exporter"]},
}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=hs.sampled_from([*LOOPS, "broken"]),
    data=hs.one_of(
        hs.binary(max_size=40),
        hs.fixed_dictionaries(
            {"session_id": hs.sampled_from([SID, "session-b"]) | hs.none() | hs.integers()},
            optional={
                "tool_name": hs.sampled_from(["TaskCreate", "TaskUpdate", "TodoWrite", "Bash"])
                | hs.integers(),
                "tool_input": tasklist_calls.flatmap(lambda c: hs.just(c[1])) | hs.text(max_size=5),
                "tool_response": tasklist_calls.flatmap(lambda c: hs.just(c[2])),
            },
        ),
    ),
)
def test_whatever_arrives_the_hook_keeps_its_promises(
    project: Path, which: str, data: bytes | dict[str, Any]
) -> None:
    """Exit 0; nothing on stdout but, for a loop it cannot use, one message; a file it
    cannot read left as it is; what it writes reads back; nothing run."""
    loop = project / ".loop"
    if loop.exists():
        shutil.rmtree(loop)
    (project / "TODO.md").write_bytes(b"- [ ] Write the exporter\n")
    if which == "broken":
        loop.mkdir()
        (loop / "state.json").write_bytes(b'{"steps": [')
    else:
        make_loop(project, **LOOPS[which])
    before = (loop / "state.json").read_bytes()
    raw = data if isinstance(data, bytes) else orjson.dumps({"cwd": str(project), **data})
    with processes_started() as started:
        run = hardening.hook("post-tool-use", raw)
    assert started == []
    out = hook_kept_its_promises(run, "post-tool-use")
    after = (loop / "state.json").read_bytes()
    if which == "broken":
        assert after == before and out in (None, {"systemMessage": ANY})
    else:
        assert out is None
        st.parse(after)
        if which in ("another session's", "paused"):
            assert after == before
    assert (project / "TODO.md").read_bytes() in (
        b"- [ ] Write the exporter\n",
        b"- [x] Write the exporter\n",
    )
