"""A loop carried from one session of the real client to the next, with the hooks
`ralphstate install` writes and a scripted model.

A session that ends hands its loop back (SessionEnd), and a plain new `claude` in the
project continues it; a session killed before it could say so leaves the loop to its
owner until the owner timeout has passed; a state file the agent writes itself holds
its session at once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from e2e_support import Cli, RunClaude, history
from e2e_support import read_state as loop_state
from fake_api import FakeAnthropicAPI, bash, feedback, loop_context, text

from tests.helpers.gitrepo import init_repo, use_identity

pytestmark = pytest.mark.e2e

# The client lets a turn end after this many Stop blocks in a row: the first session
# ends with its loop unfinished, as a person closing the terminal would leave it.
BLOCK_CAP = {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "1"}
DONE = [
    [bash('ralphstate criteria set "parser tests pass" true')],
    [text("The parser tests pass.\n\n<loop-complete>")],
]


def test_a_plain_new_session_continues_the_loop_of_one_that_ended(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    cli("init", "Fix the parser", "-c", "parser tests pass", "--stall-limit", "9")
    api.add_turns([text("Reading the parser.")], [text("Still reading.")])

    done, first = run_claude(project, "Fix the parser", env=BLOCK_CAP)

    assert done.returncode == 0, done.stderr
    state = loop_state(project)
    assert (state["status"], state["sessionId"]) == ("in_progress", None)
    [released] = history(project, "released")
    assert (released["session"], released["reason"]) == (first["session_id"], "other")

    api.add_turns(*DONE)
    done, second = run_claude(project, "Carry on")

    assert done.returncode == 0, done.stderr
    assert second["session_id"] != first["session_id"]
    assert "Spec: Fix the parser" in loop_context(api.conversation()[2])
    state = loop_state(project)
    assert (state["status"], state["sessionId"]) == ("complete", second["session_id"])
    taken = history(project, "adopted")[-1]
    assert (taken["session"], taken["by"]) == (second["session_id"], "startup")


def test_a_killed_sessions_loop_is_taken_at_once_when_its_process_is_gone(
    cli: Cli,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    claude_bin: Path,
    claude_env: dict[str, str],
) -> None:
    cli("install")
    cli("init", "Fix the parser", "-c", "parser tests pass")
    started = project.parent / "started"
    api.add_turns([bash(f"touch {started} && sleep 60")])
    command = [str(claude_bin), "-p", "Fix the parser", "--output-format", "json"]
    crashed = subprocess.Popen(
        [*command, "--allowedTools", "Bash"],
        cwd=project,
        env=claude_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and crashed.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the session never ran its command"
    finally:
        os.killpg(crashed.pid, signal.SIGKILL)  # no SessionEnd: a crash
        crashed.wait(timeout=30)
    owner = loop_state(project)["sessionId"]
    assert owner  # still the killed session's

    # The killed session's agent process is gone from this machine: the next session
    # takes the loop at once, without the owner timeout's wait, and says so.
    api.add_turns(*DONE)
    done, second = run_claude(project, "Carry on")
    assert done.returncode == 0, done.stderr
    assert "belongs to another session" not in loop_context(api.conversation()[0])
    state = loop_state(project)
    assert (state["status"], state["sessionId"]) == ("complete", second["session_id"])
    assert state["sessionId"] != owner
    taken = history(project, "adopted")[-1]
    assert (taken["from"], taken["session"]) == (owner, second["session_id"])
    assert taken.get("ownerProcessGone") is True, taken


SEED = """mkdir -p .loop && cat > .loop/state.json <<'EOF'
{
  "spec": "Fix the parser",
  "criteria": ["parser tests pass"],
  "criteriaStatus": {"parser tests pass": false},
  "steps": ["read the parser"],
  "completedSteps": [],
  "iteration": 0,
  "status": "in_progress"
}
EOF"""


def test_a_state_file_the_agent_writes_itself_holds_its_session(
    cli: Cli,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_identity(monkeypatch, tmp_path)
    init_repo(project)
    cli("install")
    api.add_turns([bash(SEED)], [text("The loop is set up.")], *DONE)

    done, result = run_claude(project, "Fix the parser, in a loop")

    assert done.returncode == 0, done.stderr
    assert result["result"] == "The parser tests pass.\n\n<loop-complete>"
    held = feedback(api.conversation()[2])
    assert held.startswith("ralphstate loop, iteration 1 of 20: 1 of 1 criterion not verified")
    state = loop_state(project)
    assert (state["status"], state["sessionId"]) == ("complete", result["session_id"])
    [taken] = history(project, "adopted")
    assert (taken["session"], taken["by"]) == (result["session_id"], "stop")
