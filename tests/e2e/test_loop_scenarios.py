"""The loop end to end: the real client, ralphstate's installed hooks, a scripted model.

A person sets the loop up with the `ralphstate` command; the scripted model works
through its Bash tool with the same command; the client runs the hooks that
`ralphstate install` wrote. The tests read the outcome from `.loop/state.json`, the
history and the requests the model was sent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_support import Cli, RunClaude, history
from e2e_support import read_state as loop_state
from fake_api import FakeAnthropicAPI, bash, feedback, loop_context, text, texts

pytestmark = pytest.mark.e2e


def test_the_loop_holds_until_criteria_are_verified_and_the_marker_is_said(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    cli("init", "Add a CSV export", "-c", "tests pass", "-s", "write the exporter",
        "--max-iterations", "6", "--stall-limit", "3")  # fmt: skip
    api.usage = {"input_tokens": 100, "cache_creation_input_tokens": 30,
                 "cache_read_input_tokens": 7, "output_tokens": 20}  # fmt: skip
    api.add_turns(
        [text("I will start on the exporter.")],
        [bash('ralphstate step done "write the exporter"')],
        [bash('ralphstate criteria set "tests pass" true')],
        [text("Everything is verified.")],
        [text("The export works.\n\n<loop-complete>")],
    )

    done, result = run_claude(project, "Add a CSV export")

    assert done.returncode == 0, done.stderr
    assert result["result"] == "The export works.\n\n<loop-complete>"
    first, unmet, _, _, unsaid = api.conversation()
    assert "Spec: Add a CSV export" in loop_context(first)
    assert feedback(unmet).startswith(
        "ralphstate loop, iteration 1 of 6: 1 of 1 criterion not verified yet:\n- tests pass\n"
    )
    assert 'ralphstate criteria set "tests pass" true' in feedback(unmet)
    assert 'ralphstate step done "write the exporter"' in feedback(unmet)
    assert "the one criterion is recorded as met (1 claimed)" in feedback(unsaid)
    assert "<loop-complete>" in feedback(unsaid)
    state = loop_state(project)
    assert state["status"] == "complete"
    assert state["iteration"] == 2
    assert state["sessionId"] == result["session_id"]
    assert state["criteriaStatus"] == {"tests pass": True}
    assert state["completedSteps"] == ["write the exporter"]
    assert [e["event"] for e in history(project)][-1] == "complete"
    # The Stop hook counted every reply of the session from its transcript, once each,
    # as the scripted API reported them: 157 tokens a reply. The reply that ends the loop
    # is counted only when the client wrote it to the transcript before its Stop hook
    # read it (Claude Code sometimes writes it a moment later, and no stop follows).
    replies = len(api.conversation())
    assert replies == 5
    assert state["usage"]["tokens"] in (157 * replies, 157 * (replies - 1))


def test_without_a_loop_the_session_ends_as_usual(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    api.add_turns([text("Answered.")])

    done, result = run_claude(project, "What is 2 + 2?")

    assert done.returncode == 0, done.stderr
    assert result["result"] == "Answered."
    [request] = api.conversation()
    assert loop_context(request) == ""
    assert not (project / ".loop").exists()


def test_a_loop_the_agent_starts_belongs_to_its_session(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    api.add_turns(
        [bash('ralphstate init "Fix the parser" -c "parser tests pass"')],
        [text("The loop is set up.")],
        [bash('ralphstate criteria set "parser tests pass" true')],
        [text("Fixed and verified. <loop-complete>")],
    )

    done, result = run_claude(project, "Fix the parser, in a loop")

    assert done.returncode == 0, done.stderr
    assert "1 of 1 criterion not verified yet" in feedback(api.conversation()[2])
    state = loop_state(project)
    assert state["sessionId"] == result["session_id"]
    assert (state["status"], state["iteration"]) == ("complete", 1)


def test_a_runaway_loop_is_released_at_max_iterations(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    cli("init", "Endless", "-c", "never true", "--max-iterations", "3", "--stall-limit", "10")
    api.add_turns(*([text(f"Still working ({n}).")] for n in range(10)))

    done, result = run_claude(project, "Work")

    assert done.returncode == 0, done.stderr
    # Three blocks, then the fourth stop pauses the loop and lets the session end.
    assert len(api.conversation()) == 4
    assert result["result"] == "Still working (3)."
    state = loop_state(project)
    assert (state["status"], state["pauseReason"], state["iteration"]) == (
        "paused",
        "max_iterations",
        3,
    )
    assert "max_iterations" in [e["event"] for e in history(project)]


def test_a_loop_without_progress_pauses_at_the_stall_limit(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    cli("init", "Stuck", "-c", "never true", "--max-iterations", "20", "--stall-limit", "2")
    api.add_turns(*([text(f"Thinking ({n}).")] for n in range(10)))

    done, _ = run_claude(project, "Work")

    assert done.returncode == 0, done.stderr
    assert len(api.conversation()) == 3
    state = loop_state(project)
    assert (state["status"], state["pauseReason"], state["iteration"]) == ("paused", "stall", 2)


def test_a_corrupt_state_file_never_blocks_and_is_left_as_it_is(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    state_file = project / ".loop" / "state.json"
    state_file.parent.mkdir()
    state_file.write_bytes(b'{"spec": "half written", "criteria": [')
    api.add_turns([text("Done.")])

    done, result = run_claude(project, "Work")

    assert done.returncode == 0, done.stderr
    assert result["result"] == "Done."
    [request] = api.conversation()
    assert loop_context(request) == ""
    assert state_file.read_bytes() == b'{"spec": "half written", "criteria": ['


def test_a_loop_owned_by_another_session_is_left_alone(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    cli("init", "Someone else's work", "-c", "their criterion")
    state_file = project / ".loop" / "state.json"
    state = json.loads(state_file.read_text())
    state["sessionId"] = "0c0ffee0-0000-4000-8000-000000000000"
    state_file.write_text(json.dumps(state, indent=2))
    api.add_turns([text("Done with my own task.")])

    done, _result = run_claude(project, "Something unrelated")

    assert done.returncode == 0, done.stderr
    [request] = api.conversation()
    context = loop_context(request)
    assert "belongs to another session" in context
    assert "ralphstate adopt" in context
    after = loop_state(project)
    assert after["sessionId"] == "0c0ffee0-0000-4000-8000-000000000000"
    assert (after["status"], after["iteration"]) == ("in_progress", 0)


def test_the_loop_survives_compaction(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    api.add_turns([text("Looked around."), bash("ls")], [text("Ready.")])
    _, first = run_claude(project, "Look around")
    session = first["session_id"]
    cli("init", "Ship the report", "-c", "report renders", "-s", "render it")

    done, _ = run_claude(project, "/compact", "--resume", session)

    assert done.returncode == 0, done.stderr
    assert len(api.compactions()) == 1
    state = loop_state(project)
    # The `-p` process ended the session, which handed the loop back; `--resume` takes it.
    assert state["sessionId"] is None
    assert state["lastCheckpoint"] is not None
    checkpoint, released = history(project)[-2:]
    assert {"event": "checkpoint", "trigger": "manual"}.items() <= checkpoint.items()
    assert (released["event"], released["session"]) == ("released", session)

    api.add_turns(
        [text("Picking up after the summary.")],
        [bash('ralphstate criteria set "report renders" true && ralphstate step done "render it"')],
        [text("Rendered and checked. <loop-complete>")],
    )
    done, _ = run_claude(project, "continue", "--resume", session)

    assert done.returncode == 0, done.stderr
    resumed = api.conversation()[2]
    assert texts(resumed, "user")[0].startswith("This session is being continued")
    # Restored twice: by SessionStart "compact" during /compact, and "resume" now.
    restored = loop_context(resumed)
    assert restored.count("Spec: Ship the report") == 2
    assert "The conversation was compacted; this restores the loop." in restored
    assert "report renders" in feedback(api.conversation()[3])
    state = loop_state(project)
    assert (state["status"], state["iteration"], state["sessionId"]) == ("complete", 1, session)
