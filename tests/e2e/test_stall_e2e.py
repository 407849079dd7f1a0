"""Stall detection with the real client and ralphstate's installed hooks: turns that
change the project's files are progress though the model records nothing, and stops
while the client reports background work running (the Stop input's
`background_tasks`) are not counted toward the stall limit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from e2e_support import Cli, RunClaude, history
from e2e_support import read_state as loop_state
from fake_api import FakeAnthropicAPI, bash, text, tool_use

pytestmark = pytest.mark.e2e

WHO = ["-c", "user.name=Loop Tester", "-c", "user.email=tester@example.invalid"]


def git(project: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, env=env, capture_output=True, check=True)


def test_turns_of_real_edits_with_nothing_recorded_are_not_a_stall(
    cli: Cli,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    claude_env: dict[str, str],
) -> None:
    (project / "app.py").write_text("print('hello')\n")
    (project / ".gitignore").write_text(".claude/\n")
    git(project, claude_env, "init", "-q")
    git(project, claude_env, "add", "-A")
    git(project, claude_env, *WHO, "commit", "-q", "-m", "the app")
    cli("install")
    cli("init", "Fix the app", "-c", "never true", "--max-iterations", "5", "--stall-limit", "2")
    for n in range(1, 8):  # a long turn of edits, then a reply that records nothing
        api.add_turns([bash(f"echo '# attempt {n}' >> app.py")], [text(f"Tried fix {n}.")])

    done, _ = run_claude(project, "Fix the app", timeout=90)

    assert done.returncode == 0, done.stderr
    state = loop_state(project)
    # Not paused as a stall after three stops: blocked five times, then the cap.
    assert (state["status"], state["pauseReason"], state["iteration"]) == (
        "paused",
        "max_iterations",
        5,
    )
    assert state["blocksWithoutProgress"] == 0
    assert "# attempt 6" in (project / "app.py").read_text()
    assert "stall" not in [e["event"] for e in history(project)]


def test_stops_while_background_work_runs_are_not_a_stall(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    cli("init", "Slow tests", "-c", "never true", "--max-iterations", "4", "--stall-limit", "1")
    api.add_turns(
        [
            tool_use(
                "Bash", command="sleep 12", description="the slow tests", run_in_background=True
            )
        ],
        *([text(f"Waiting for the tests ({n}).")] for n in range(1, 10)),
    )

    done, _ = run_claude(project, "Run the slow tests", timeout=90)

    assert done.returncode == 0, done.stderr
    state = loop_state(project)
    # Without the background task, the second stop pauses the loop as a stall.
    assert (state["status"], state["pauseReason"], state["iteration"]) == (
        "paused",
        "max_iterations",
        4,
    )
    assert state["blocksWithoutProgress"] == 0  # every stop held: none counted
