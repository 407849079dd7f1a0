"""`ralphstate run` with the real Claude Code client as the agent (`claude -p`), offline
against the scripted Messages API, for several iterations to completion.

Each iteration is a fresh `claude -p` process that gets the runner's prompt, records
progress with `ralphstate` through its Bash tool and exits. ralphstate's hooks are
installed: inside the run, SessionStart restores the loop and the Stop hook lets every
iteration end (the runner owns the loop).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Cli, history, ralphstate
from fake_api import CONTEXT, FakeAnthropicAPI, bash, text, texts

from ralphstate.run.spawn import join_command

pytestmark = pytest.mark.e2e


def user_text(body: dict[str, Any]) -> str:
    return "\n".join(texts(body, "user"))


@pytest.mark.parametrize("mode", ["stdin", "arg"])
def test_claude_as_the_agent_runs_the_loop_to_completion(
    mode: str,
    cli: Cli,
    claude_bin: Path,
    claude_env: dict[str, str],
    api: FakeAnthropicAPI,
    project: Path,
) -> None:
    cli("install")
    cli("init", "Add a CSV export", "-c", "tests pass", "-c", "docs written")
    api.add_turns(
        [bash('ralphstate criteria set "tests pass" true --note "pytest: 3 passed"')],
        [text("Recorded tests pass.")],
        [bash('ralphstate criteria set "docs written" true')],
        [text("Recorded the docs.")],
    )
    # --allowedTools takes several values: in arg mode it must not come last, or it
    # takes the appended prompt for one of them.
    flags = (
        ["-p", "--allowedTools", "Bash"] if mode == "stdin" else ["--allowedTools", "Bash", "-p"]
    )
    agent = join_command([str(claude_bin), *flags])
    # The run's default confinement (the tests' own default is off: tests/conftest.py).
    confined = {k: v for k, v in claude_env.items() if k != "RALPHSTATE_RUN_SANDBOX"}

    run = ralphstate(
        project,
        confined,
        "run",
        "--agent",
        agent,
        "--prompt-mode",
        mode,
        "--timeout",
        "60",
        "--json",
        timeout=180,
    )

    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert (out["outcome"], out["iterations"]) == ("complete", 2)
    assert out["sandbox"] == "bubblewrap", run.stderr
    assert [(r["exit"], r["decision"]) for r in out["runs"]] == [(0, "continue"), (0, "complete")]
    assert api.unused_turns() == 0

    first, _, second, _ = api.conversation()
    assert "You are iteration 1 of at most 20 of a ralphstate loop" in user_text(first)
    assert "Spec:\nAdd a CSV export" in user_text(first)
    assert 'ralphstate criteria set "tests pass" true' in user_text(first)
    assert "You are iteration 2 of at most 20" in user_text(second)
    assert "- [x] tests pass\n    note: pytest: 3 passed" in user_text(second)
    for request in (first, second):  # SessionStart restored the loop in each fresh session
        restored = [t for t in texts(request, "system") if CONTEXT in t]
        assert restored and "Spec: Add a CSV export" in restored[0]
    for body in api.conversation():  # the Stop hook never held an iteration open
        assert "Stop hook feedback" not in user_text(body)

    state = json.loads((project / ".loop" / "state.json").read_text())
    assert (state["status"], state["iteration"]) == ("complete", 2)
    assert state["criteriaStatus"] == {"tests pass": True, "docs written": True}
    assert state["sessionId"] is None  # no iteration's session took the loop
    runs = project / ".loop" / "runs"
    assert "Recorded tests pass." in (runs / "0001.log").read_text()
    assert "Recorded the docs." in (runs / "0002.log").read_text()
    assert [e["exit"] for e in history(project, "run_iteration")] == [0, 0]
