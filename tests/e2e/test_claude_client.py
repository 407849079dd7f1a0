"""What ralphstate relies on in the real Claude Code client, checked against it.

Each test runs the pinned client against the scripted API with probe hooks that
record their input, environment and parent processes. If an upgrade of the client
changes one of these facts, the test that states it fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_support import HookProbe, RunClaude, transcript_dir, write_hooks
from fake_api import FakeAnthropicAPI, bash, text, texts, tool_results

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
