"""A suite longer than the Stop hook's budget, end to end: the real client and
ralphstate's installed hooks in a git repository. The stop's budget is 2 s and the
suite takes 4: at the claim the hook starts it, the budget cuts it short, and the
block reason blames nothing and says ralphstate runs the suite itself in the
background; the model waits, and the next claim takes that verification's pass and
completes the loop. The model's own `verify --clean` is never what ends it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import RunClaude, trust_at_terminal
from e2e_support import rs as ralphstate
from fake_api import FakeAnthropicAPI, bash, feedback, text

pytestmark = pytest.mark.e2e

CRITERION = "suite passes"
WHO = ["-c", "user.name=Loop Tester", "-c", "user.email=tester@example.invalid"]


def git(project: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, env=env, capture_output=True, check=True)


def test_a_suite_longer_than_the_budget_is_verified_in_the_background_and_completes(
    run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, claude_env: dict[str, str]
) -> None:
    (project / "suite.py").write_text("import time\ntime.sleep(4)\nprint('42 passed')\n")
    (project / ".gitignore").write_text(".claude/\n.loop/\n")
    git(project, claude_env, "init", "-q")
    git(project, claude_env, "add", "-A")
    git(project, claude_env, *WHO, "commit", "-q", "-m", "the suite")
    ralphstate(project, claude_env, "install")
    ralphstate(project, claude_env, "init", "Pass the suite", "-c", CRITERION)
    ralphstate(project, claude_env, "criteria", "check", CRITERION, f'"{sys.executable}" suite.py')
    trust_at_terminal(project, claude_env)
    ralphstate(project, claude_env, "config", "verify-budget", "2")
    api.add_turns(
        [bash(f'ralphstate criteria set "{CRITERION}" true')],
        [text("The suite passes. <loop-complete>")],
        [bash("sleep 8")],
        [text("Waited for it. <loop-complete>")],
    )

    done, result = run_claude(project, "Make the suite pass", timeout=180)

    assert done.returncode == 0, done.stderr
    assert result["result"] == "Waited for it. <loop-complete>"
    requests = api.conversation()
    assert len(requests) == 4
    reason = feedback(requests[2])
    assert reason.startswith("You claimed every criterion. ralphstate loop, iteration 1 of 20:\n")
    assert (
        "ralphstate did not run 1 check here: it does not fit the 2s a stop may spend on checks"
        " (suite passes (cut short by the stop's time)). Nothing failed, and nothing is set"
        " back.\n"
    ) in reason
    assert "ralphstate is running it itself, in a clean room, in the background" in reason
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert state["status"] == "complete"
    evidence = state["evidence"][CRITERION]
    assert (evidence["result"], evidence["clean"]) == ("verified", True)
    # The Stop hook's own background verification proved it (verify/background.py).
    assert evidence["by"] == "stop"
    lines = (project / ".loop" / "history.jsonl").read_text().splitlines()
    events = [json.loads(line)["event"] for line in lines]
    assert events[-3:] == ["verify_yourself", "check", "complete"]
