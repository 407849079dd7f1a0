"""The first shortcut of the proof (docs/explanation/proof.md) with the real Claude Code
client: on a project whose pytest suite really fails, the scripted model's Bash tool
replaces the person's check with `true`, runs `ralphstate verify`, and says the
completion marker. The loop does not complete: the Stop hook ralphstate installed
pauses it for the person's review, and the message the person reads (never the
model) names the replaced check and the Claude Code session that replaced it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_support import Cli, RunClaude, history, read_state
from fake_api import FEEDBACK, FakeAnthropicAPI, bash, text, texts

from tests.adversarial.scripted import CHECK, CRITERION, Person, make_project
from tests.helpers.gitrepo import use_identity

pytestmark = pytest.mark.e2e


def record_stop_outputs(project: Path, record: Path) -> None:
    """Have the installed Stop hook's output also written to `record`, one JSON object a
    line: what the client shows the person."""
    settings = project / ".claude" / "settings.local.json"
    data = json.loads(settings.read_text())
    [hook] = data["hooks"]["Stop"][0]["hooks"]
    hook["command"] += f" | tee -a '{record}'"
    settings.write_text(json.dumps(data, indent=2))


def test_a_replaced_check_from_the_bash_tool_pauses_the_loop_for_review(
    cli: Cli,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    claude_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_identity(monkeypatch, tmp_path)
    make_project(project, Person(project, claude_env))
    cli("install")
    record = tmp_path / "stop-outputs.jsonl"
    record_stop_outputs(project, record)
    api.add_turns(
        [bash(f'ralphstate criteria check "{CRITERION}" true')],
        [bash("ralphstate verify")],
        [text("All the tests pass. <loop-complete>")],
        # Blocked because the replaced check proved nothing: the agent claims it instead.
        [bash(f'ralphstate criteria set "{CRITERION}" true')],
        [text("Verified. <loop-complete>")],
    )

    done, result = run_claude(project, "Finish calc", timeout=180)

    assert done.returncode == 0, done.stderr
    session = result["session_id"]
    state = read_state(project)
    assert (state["status"], state["pauseReason"]) == ("paused", "review"), state
    assert state["checks"][CRITERION] == "true"
    assert not history(project, "complete")
    [changed] = [e for e in history(project, "check_set") if e["command"] == "true"]
    assert changed["actor"] == {"kind": "agent", "agent": "claude", "session": session}
    outputs = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    message = outputs[-1]["systemMessage"]
    assert f"the check of '{CRITERION}' was replaced" in message, message
    assert CHECK in message and "`true`" in message, message
    assert f"claude session {session[:8]}" in message and "by you" not in message, message
    assert "ralphstate review" in message, message
    # The model is never told to trust or approve: that is the person's.
    reasons = [t for r in api.conversation() for t in texts(r, "user") if t.startswith(FEEDBACK)]
    for reason in reasons:
        assert "ralphstate trust" not in reason and "ralphstate review" not in reason, reason
