"""What ralphstate relies on in the real Claude Code client, checked against it.

Each test runs the pinned client against the scripted API with probe hooks that
record their input, environment and parent processes. If an upgrade of the client
changes one of these facts, the test that states it fails.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from e2e_support import HookProbe, RunClaude, transcript_dir, write_hooks
from fake_api import (
    FakeAnthropicAPI,
    bash,
    task_create,
    task_update,
    text,
    texts,
    todo,
    tool_result,
    tool_results,
    tool_use,
)

pytestmark = pytest.mark.e2e

ENV_DUMP = "env > bash-env.txt"


def read_env_file(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return dict(pairs)


def test_hooks_fire_with_the_documented_input_and_environment(
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    probe: HookProbe,
    project: Path,
    home: Path,
) -> None:
    write_hooks(project, {e: probe.command(e) for e in ("SessionStart", "Stop")})
    api.add_turns([text("Looking."), bash(ENV_DUMP)], [text("All done.")])

    done, result = run_claude(project, "do the task")

    assert done.returncode == 0, done.stderr
    assert result["result"] == "All done."
    session = result["session_id"]
    transcript = transcript_dir(home, project) / f"{session}.jsonl"
    assert transcript.is_file()

    [start] = probe.calls("SessionStart")
    assert start.input == {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    [stop] = probe.calls("Stop")
    assert stop.input["session_id"] == session
    assert stop.input["transcript_path"] == str(transcript)
    assert stop.input["cwd"] == str(project)
    assert stop.input["hook_event_name"] == "Stop"
    assert stop.input["permission_mode"] == "default"
    assert stop.input["stop_hook_active"] is False
    assert stop.input["last_assistant_message"] == "All done."
    assert isinstance(stop.input["prompt_id"], str)

    for call in (start, stop):
        assert call.cwd == str(project)
        assert call.env["CLAUDE_PROJECT_DIR"] == str(project)
        assert call.env["CLAUDE_CODE_SESSION_ID"] == session
        assert call.env["HOME"] == str(home)
        # The hook runs as `/bin/sh -c COMMAND`; the shell may or may not stay
        # between it and the client, whose pid CLAUDE_PID names.
        ancestors = dict(call.chain[1:3])
        claude_pid = int(call.env["CLAUDE_PID"])
        assert "-p" in ancestors[claude_pid]
        assert call.ppid == claude_pid or ancestors[call.ppid][:2] == ["/bin/sh", "-c"]

    assert api.side_requests() == []
    bash_env = read_env_file(project / "bash-env.txt")
    assert bash_env["CLAUDE_CODE_SESSION_ID"] == session
    assert bash_env["CLAUDE_PID"] == start.env["CLAUDE_PID"]
    assert "CLAUDE_PROJECT_DIR" not in bash_env


def test_a_stop_block_reaches_the_model_as_user_feedback(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path
) -> None:
    write_hooks(project, {"Stop": probe.command("Stop")})
    probe.reply("Stop", {"decision": "block", "reason": "Criterion unmet."}, call=0)
    probe.reply("Stop", {"systemMessage": "Shown to the person only."}, call=1)
    api.add_turns([text("First try.")], [text("Second try.")])

    done, result = run_claude(project, "do the task")

    assert done.returncode == 0, done.stderr
    assert result["result"] == "Second try."
    _first, second = api.conversation()
    assert texts(second, "user")[-1] == "Stop hook feedback:\nCriterion unmet."
    assert texts(second, "assistant")[-1] == "First try."
    assert not any("Shown to the person only." in json.dumps(b) for b in api.messages())
    inputs = [call.input for call in probe.calls("Stop")]
    assert [i["stop_hook_active"] for i in inputs] == [False, True]
    assert [i["last_assistant_message"] for i in inputs] == ["First try.", "Second try."]


def test_session_start_context_reaches_the_model(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path
) -> None:
    write_hooks(project, {"SessionStart": probe.command("SessionStart")})
    output = {"hookEventName": "SessionStart", "additionalContext": "Loop restored."}
    probe.reply("SessionStart", {"hookSpecificOutput": output, "systemMessage": "Hello."})
    api.add_turns([text("Fine.")])

    done, _ = run_claude(project, "do the task")

    assert done.returncode == 0, done.stderr
    [request] = api.conversation()
    context = "SessionStart hook additional context: Loop restored."
    assert any(context in t for t in texts(request, "system"))
    assert "Hello." not in json.dumps(request)


def test_the_client_ends_a_turn_after_eight_blocks_in_a_row(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path
) -> None:
    write_hooks(project, {"Stop": probe.command("Stop")})
    probe.reply("Stop", {"decision": "block", "reason": "Never done."})
    api.add_turns(*([text(f"Answer {n}.")] for n in range(20)))

    done, _ = run_claude(project, "do the task")

    assert done.returncode == 0, done.stderr
    # Eight blocks are obeyed; the ninth Stop hook still runs, and is overridden.
    assert len(probe.calls("Stop")) == 9
    assert len(api.conversation()) == 9


def test_the_block_cap_is_set_by_the_environment(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path
) -> None:
    write_hooks(project, {"Stop": probe.command("Stop")})
    probe.reply("Stop", {"decision": "block", "reason": "Never done."})
    api.add_turns(*([text(f"Answer {n}.")] for n in range(20)))

    done, _ = run_claude(project, "do the task", env={"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "3"})

    assert done.returncode == 0, done.stderr
    assert len(probe.calls("Stop")) == 4
    assert len(api.conversation()) == 4


def test_a_zero_block_cap_removes_the_limit(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path
) -> None:
    write_hooks(project, {"Stop": probe.command("Stop")})
    for call in range(12):
        probe.reply("Stop", {"decision": "block", "reason": "Not yet."}, call=call)
    api.add_turns(*([text(f"Answer {n}.")] for n in range(20)))

    done, result = run_claude(project, "do the task", env={"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "0"})

    assert done.returncode == 0, done.stderr
    assert len(probe.calls("Stop")) == 13
    assert result["result"] == "Answer 12."


def test_a_tool_call_resets_the_block_count(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path
) -> None:
    write_hooks(project, {"Stop": probe.command("Stop")})
    probe.reply("Stop", {"decision": "block", "reason": "Keep working."})
    # Twelve blocks with a Bash call after each, then only text.
    for n in range(12):
        api.add_turns([text(f"Step {n}.")], [bash(f"echo {n}")])
    api.add_turns(*([text(f"Answer {n}.")] for n in range(20)))

    done, _ = run_claude(project, "do the task", env={"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "3"})

    assert done.returncode == 0, done.stderr
    # 12 blocks each followed by a tool call, then 3 in a row and one overridden.
    assert len(probe.calls("Stop")) == 12 + 4
    assert tool_results(api.conversation()[-1])[:2] == ["0", "1"]


def test_a_failing_stop_hook_with_exit_code_2_blocks(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path
) -> None:
    write_hooks(project, {"Stop": probe.command("Stop")})
    probe.reply("Stop", "", call=0, exit_code=2, stderr="usage error")
    probe.reply("Stop", "", call=1, exit_code=1, stderr="crashed")
    api.add_turns([text("One.")], [text("Two.")], [text("Three.")])

    done, result = run_claude(project, "do the task")

    assert done.returncode == 0, done.stderr
    # Exit 2 blocks with stderr as the reason; exit 1 is a non-blocking error.
    assert result["result"] == "Two."
    assert len(api.conversation()) == 2
    feedback = texts(api.conversation()[1], "user")[-1]
    assert feedback.startswith("Stop hook feedback:\n[")
    assert feedback.endswith("]: usage error")


def test_compact_on_resume_runs_the_compaction_hooks(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path
) -> None:
    events = ("SessionStart", "PreCompact", "Stop")
    write_hooks(project, {e: probe.command(e) for e in events})
    api.add_turns([text("Working."), bash("echo one")], [text("Paused here.")])
    _, first = run_claude(project, "do the task")
    session = first["session_id"]
    sent_before = len(api.messages())

    done, result = run_claude(project, "/compact", "--resume", session)

    assert done.returncode == 0, done.stderr
    assert result["session_id"] == session
    [compaction] = api.messages()[sent_before:]
    assert api.compactions() == [compaction]
    assert compaction["tools"], "the summary request carries the conversation's tools"
    assert [c.input["source"] for c in probe.calls("SessionStart")] == [
        "startup",
        "resume",
        "compact",
    ]
    [pre] = probe.calls("PreCompact")
    assert pre.input["trigger"] == "manual"
    assert pre.input["session_id"] == session
    assert pre.env["CLAUDE_PROJECT_DIR"] == str(project)
    assert len(probe.calls("Stop")) == 1, "/compact alone does not stop a turn"

    api.add_turns([text("Continuing.")])
    run_claude(project, "continue", "--resume", session)
    summary = texts(api.conversation()[-1], "user")[0]
    assert summary.startswith("This session is being continued from a previous conversation")


def test_the_client_talks_only_to_the_scripted_api(
    run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, home: Path
) -> None:
    api.add_turns([text("Hi.")])

    done, result = run_claude(project, "hello")

    assert done.returncode == 0, done.stderr
    assert result["result"] == "Hi."
    assert [(r.method, r.path) for r in api.requests] == [("POST", "/v1/messages?beta=true")]
    assert (transcript_dir(home, project) / f"{result['session_id']}.jsonl").is_file()


# -- The task tools (TaskCreate/TaskUpdate, or TodoWrite) ------------------------------

TODO_TOOLS = {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
TODO_WRITE = {**TODO_TOOLS, "CLAUDE_CODE_ENABLE_TASKS": "0"}
AGENT_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
# The fixtures' stand-ins for what changes from run to run.
FIXTURE_SESSION = "9d3c1f0e-5a4b-4c2d-8e7f-0a1b2c3d4e5f"
FIXTURE_PROMPT = "b7e2c9d1-0f3a-4e5b-9c8d-7a6b5c4d3e2f"
FIXTURE_COMMAND = "ralphstate hook task-completed"
DEFERRED = 'Use ToolSearch with query "select:<name>[,<name>...]"'


def offered(body: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The tools a request gives the model: (with a schema, named as deferred).

    Deferred tools are named one a line, up to a blank line, after the system-role
    text that tells the model to load them with ToolSearch first.
    """
    named = {tool["name"] for tool in body["tools"]}
    deferred: set[str] = set()
    for chunk in texts(body, "system"):
        if DEFERRED in chunk:
            listing = chunk.split(DEFERRED, 1)[1].split(":\n", 1)[1]
            deferred |= set(listing.split("\n\n", 1)[0].split("\n"))
    return named, deferred


def neutral(data: Any, probe: HookProbe, session: str, project: Path) -> Any:
    """A recorded hook input with what changes from run to run replaced as the fixtures
    write it: ids, paths, durations, and the probe's command (as ralphstate's)."""
    raw = json.dumps(data)
    raw = raw.replace(json.dumps(probe.command("TaskCompleted"))[1:-1], FIXTURE_COMMAND)
    out = json.loads(raw)
    assert (data["session_id"], data["cwd"]) == (session, str(project))
    # Only the keys the input has are replaced, so a key the client drops still fails.
    stand_ins = {
        "session_id": FIXTURE_SESSION,
        "prompt_id": FIXTURE_PROMPT,
        "transcript_path": "{transcript}",
        "cwd": "{project}",
        "duration_ms": 12,
    }
    for key, stand_in in stand_ins.items():
        if key in out:
            out[key] = stand_in
    return out


def assert_fixture(name: str, recorded: dict[str, Any]) -> None:
    """The recorded input is the fixture `name` (RALPHSTATE_RECORD_FIXTURES=1 rewrites
    the fixture from this run instead)."""
    path = AGENT_FIXTURES / f"{name}.json"
    if os.environ.get("RALPHSTATE_RECORD_FIXTURES") == "1":
        path.write_text(json.dumps(recorded) + "\n", encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == recorded, name


def stored_tasks(home: Path, session: str) -> dict[str, dict[str, Any]]:
    folder = home / ".claude" / "tasks" / session
    return {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def test_the_task_tools_are_offered_only_when_switched_on(
    run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    api.add_turns([text("Off.")], [text("On.")], [text("Todo.")])
    run_claude(project, "hello")
    run_claude(project, "hello", env=TODO_TOOLS)
    run_claude(project, "hello", env=TODO_WRITE)
    (settings_project := tmp_path / "with-settings").mkdir()
    (settings_project / ".claude").mkdir()
    (settings_project / ".claude" / "settings.json").write_text(json.dumps({"env": TODO_TOOLS}))
    api.add_turns([text("From settings.")])
    run_claude(settings_project, "hello")

    default, switched_on, todo_write, from_settings = (offered(b) for b in api.conversation())
    task_tools = {"TaskCreate", "TaskGet", "TaskList", "TaskUpdate"}
    # The newest model (the client's default) gets none of them...
    assert not (default[0] | default[1]) & (task_tools | {"TodoWrite"})
    # ...until CLAUDE_CODE_ENABLE_TODO_TOOLS=1 (in the environment or a settings
    # file's `env`): then they are offered as deferred tools, named in the context.
    for named, deferred in (switched_on, from_settings):
        assert task_tools <= deferred
        assert not task_tools & named
        assert "TodoWrite" not in named | deferred
    # CLAUDE_CODE_ENABLE_TASKS=0 offers the older TodoWrite instead.
    assert "TodoWrite" in todo_write[1]
    assert not task_tools & (todo_write[0] | todo_write[1])


def test_a_task_tool_call_without_the_switch_is_refused(
    run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    api.add_turns([task_create("Write the exporter", "CSV export")], [text("Done.")])

    done, _ = run_claude(project, "hello")

    assert done.returncode == 0, done.stderr
    result = tool_result(api.conversation()[-1], "TaskCreate")
    assert result["is_error"] is True
    assert "No such tool available: TaskCreate" in result["content"]


def test_task_tool_hooks_get_the_recorded_inputs(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path, home: Path
) -> None:
    events = ("PostToolUse", "TaskCreated", "TaskCompleted")
    write_hooks(project, {e: probe.command(e) for e in events})
    api.add_turns(
        [task_create("Write the exporter", "CSV export of the report", "Writing the exporter")],
        [task_create("Test it", "Run the tests")],
        [task_update("1", "in_progress")],
        [task_update("1", "completed")],
        [text("One done, one to go.")],
    )

    done, result = run_claude(project, "plan the work", env=TODO_TOOLS)

    assert done.returncode == 0, done.stderr
    session = result["session_id"]
    post = [neutral(c.input, probe, session, project) for c in probe.calls("PostToolUse")]
    assert [p["tool_name"] for p in post] == ["TaskCreate"] * 2 + ["TaskUpdate"] * 2
    assert_fixture("claude_post_tool_use_task_create", post[0])
    assert post[1]["tool_input"] == {"subject": "Test it", "description": "Run the tests"}
    assert post[1]["tool_response"] == {
        "task": {"id": "2", "subject": "Test it", "description": "Run the tests"}
    }
    assert_fixture("claude_post_tool_use_task_update_in_progress", post[2])
    assert_fixture("claude_post_tool_use_task_update_completed", post[3])
    created = [neutral(c.input, probe, session, project) for c in probe.calls("TaskCreated")]
    assert [c["task_id"] for c in created] == ["1", "2"]
    assert_fixture("claude_task_created", created[0])
    [completed] = probe.calls("TaskCompleted")
    assert_fixture("claude_task_completed", neutral(completed.input, probe, session, project))
    # The model is told only this much about each call.
    tools = ["TaskCreate", "TaskCreate", "TaskUpdate", "TaskUpdate"]
    bodies = api.conversation()[1:5]
    replies = [tool_result(b, t)["content"] for b, t in zip(bodies, tools, strict=True)]
    assert replies == [
        "Task #1 created successfully: Write the exporter",
        "Task #2 created successfully: Test it",
        "Updated task #1 status",
        "Updated task #1 status",
    ]
    # The list is the session's: one file per task under ~/.claude/tasks/SESSION/.
    assert stored_tasks(home, session) == {
        "1.json": {
            "id": "1",
            "subject": "Write the exporter",
            "description": "CSV export of the report",
            "activeForm": "Writing the exporter",
            "status": "completed",
            "blocks": [],
            "blockedBy": [],
        },
        "2.json": {
            "id": "2",
            "subject": "Test it",
            "description": "Run the tests",
            "status": "pending",
            "blocks": [],
            "blockedBy": [],
        },
    }


def test_todo_write_hook_input_carries_the_old_and_new_list(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path, home: Path
) -> None:
    events = ("PostToolUse", "TaskCreated", "TaskCompleted")
    write_hooks(project, {e: probe.command(e) for e in events})
    first = [todo("Write the exporter", "in_progress"), todo("Test it", "pending")]
    second = [todo("Write the exporter", "completed"), todo("Test it", "pending")]
    api.add_turns(
        [tool_use("TodoWrite", todos=first)],
        [tool_use("TodoWrite", todos=second)],
        [text("One done.")],
    )

    done, result = run_claude(project, "plan the work", env=TODO_WRITE)

    assert done.returncode == 0, done.stderr
    session = result["session_id"]
    post = [neutral(c.input, probe, session, project) for c in probe.calls("PostToolUse")]
    assert [p["tool_response"] for p in post] == [
        {"oldTodos": [], "newTodos": first},
        {"oldTodos": first, "newTodos": second},
    ]
    assert_fixture("claude_post_tool_use_todo_write", post[1])
    # No task events and no files: the todo list lives in the session only.
    assert probe.calls("TaskCreated") == probe.calls("TaskCompleted") == []
    assert not (home / ".claude" / "tasks").exists()
    reply = tool_result(api.conversation()[1], "TodoWrite")["content"]
    assert reply.startswith("Todos have been modified successfully.")


def test_a_refused_task_completion_reaches_the_model_as_the_tool_result(
    run_claude: RunClaude, api: FakeAnthropicAPI, probe: HookProbe, project: Path, home: Path
) -> None:
    write_hooks(project, {e: probe.command(e) for e in ("PostToolUse", "TaskCompleted")})
    probe.reply("TaskCompleted", "", call=0, exit_code=2, stderr="check failed\nFAILED test_x")
    api.add_turns(
        [task_create("Write the exporter", "CSV export")],
        [text("Marking it done."), task_update("1", "completed")],
        [tool_use("TaskGet", taskId="1")],
        [task_update("1", "completed")],
        [text("Done now.")],
    )

    done, result = run_claude(project, "do the task", env=TODO_TOOLS)

    assert done.returncode == 0, done.stderr
    session = result["session_id"]
    _, _, refused, got, accepted = api.conversation()
    # Exit 2's stderr is the TaskUpdate call's result, after the hook's command; it is
    # not flagged as an error, and the turn goes on.
    command = probe.command("TaskCompleted")
    feedback = tool_result(refused, "TaskUpdate")
    assert feedback["content"] == (
        f"TaskCompleted hook feedback:\n[{command}]: check failed\nFAILED test_x"
    )
    assert "is_error" not in feedback
    assert refused["messages"][-1]["content"] == [feedback], "nothing else comes with it"
    # The task stays as it was, and PostToolUse still runs, saying it failed.
    assert tool_result(got, "TaskGet")["content"] == (
        "Task #1: Write the exporter\nStatus: pending\nDescription: CSV export"
    )
    post = [neutral(c.input, probe, session, project) for c in probe.calls("PostToolUse")]
    assert_fixture("claude_post_tool_use_task_update_refused", post[1])
    assert post[1]["tool_response"]["success"] is False
    assert "statusChange" not in post[1]["tool_response"]
    # The next try, with the hook passing, completes it.
    assert tool_result(accepted, "TaskUpdate")["content"] == "Updated task #1 status"
    assert post[3]["tool_response"]["statusChange"] == {"from": "pending", "to": "completed"}
    assert stored_tasks(home, session)["1.json"]["status"] == "completed"
    assert len(probe.calls("TaskCompleted")) == 2


def test_compact_keeps_the_task_files_and_leaves_the_tasks_out_of_the_context(
    run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, home: Path
) -> None:
    api.add_turns(
        [task_create("Write the exporter", "CSV export")],
        [task_create("Test it", "Run the tests")],
        [task_update("1", "completed")],
        [text("Paused here.")],
    )
    _, first = run_claude(project, "plan the work", env=TODO_TOOLS)
    session = first["session_id"]
    before = stored_tasks(home, session)

    done, _ = run_claude(project, "/compact", "--resume", session, env=TODO_TOOLS)

    assert done.returncode == 0, done.stderr
    assert len(api.compactions()) == 1
    assert stored_tasks(home, session) == before
    api.add_turns([text("Where was I?"), tool_use("TaskList")], [text("Found them.")])
    run_claude(project, "continue", "--resume", session, env=TODO_TOOLS)
    resumed = api.conversation()[4]
    assert texts(resumed, "user")[0].startswith("This session is being continued")
    # The client does not put the task list back into the context...
    assert "Test it" not in json.dumps(resumed)
    # ...the model has to ask for it, and the list is still there.
    listing = tool_result(api.conversation()[-1], "TaskList")["content"]
    assert listing == "#1 [completed] Write the exporter\n#2 [pending] Test it"
    # A new session starts an empty list of its own.
    api.add_turns([tool_use("TaskList")], [text("Nothing.")])
    _, fresh = run_claude(project, "new work", env=TODO_TOOLS)
    assert fresh["session_id"] != session
    assert tool_result(api.conversation()[-1], "TaskList")["content"] == "No tasks found"
