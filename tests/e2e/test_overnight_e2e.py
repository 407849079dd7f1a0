"""Overnight runs with the real Claude Code client against the scripted API: the cost
`claude -p --output-format json` reports is recorded per iteration, and a turn the API
answers with a rate limit is recorded by the StopFailure hook and told by the next
SessionStart."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Cli, RunClaude, history, ralphstate
from e2e_support import read_state as state
from fake_api import CONTEXT, FakeAnthropicAPI, api_error, bash, text, texts

from ralphstate.run.spawn import join_command

pytestmark = pytest.mark.e2e


def eventually(probe: Callable[[], Any], seconds: float = 20) -> Any:
    """What `probe` returns once it returns something, waiting at most `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        found = probe()
        if found or time.monotonic() > deadline:
            assert found, "nothing came"
            return found
        time.sleep(0.05)


def test_the_cost_claude_reports_in_json_is_recorded_per_iteration(
    cli: Cli, claude_bin: Path, claude_env: dict[str, str], api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    cli("init", "Add a CSV export", "-c", "tests pass")
    api.add_turns(
        [bash('ralphstate criteria set "tests pass" true --note "pytest: 3 passed"')],
        [text("Recorded tests pass.")],
    )
    agent = join_command(
        [str(claude_bin), "-p", "--output-format", "json", "--allowedTools", "Bash"]
    )

    run = ralphstate(
        project, claude_env, "run", "--agent", agent, "--max-cost", "5", "--json", timeout=180
    )

    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["outcome"] == "complete"
    [first] = out["runs"]
    # Two requests of 100 input and 20 output tokens each, priced by the client.
    assert first["tokens"] == 240
    assert first["cost"] is not None and first["cost"] > 0
    assert out["usage"] == {"tokens": 240, "cost": first["cost"]}
    assert history(project, "run_iteration")[0]["cost"] == first["cost"]
    loop = state(project)
    assert loop["usage"]["cost"] == first["cost"]
    assert loop["maxCost"] is None  # --max-cost is this run's budget, not the loop's
    # The rest of the budget went to the client as its own --max-budget-usd.
    assert "--max-budget-usd" not in agent
    log = (project / ".loop" / "runs" / "0001.log").read_text()
    assert '"total_cost_usd"' in log


def test_a_rate_limited_turn_is_recorded_by_stop_failure_and_told_next_session(
    cli: Cli,
    claude_bin: Path,
    claude_env: dict[str, str],
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
) -> None:
    cli("install")
    cli("init", "Add a CSV export", "-c", "tests pass")
    message = "This request would exceed your account's rate limit. Please try again later."
    api.add_turns([api_error(429, "rate_limit_error", message)])

    # A session that stays open after its failed turn, as an interactive one does (a
    # one-shot `claude -p` exits at once and kills its hooks; the hook detaches for
    # that case, best effort): print mode reading its turns from stdin.
    env = {**claude_env, "CLAUDE_CODE_MAX_RETRIES": "0"}
    argv = [str(claude_bin), "-p", "--input-format", "stream-json", "--output-format"]
    argv += ["stream-json", "--verbose"]
    with (project / "client.log").open("w") as log:
        client = subprocess.Popen(
            argv, cwd=project, env=env, stdin=subprocess.PIPE, stdout=log, stderr=log, text=True
        )
        assert client.stdin is not None
        turn = {"type": "user", "message": {"role": "user", "content": "Add a CSV export"}}
        client.stdin.write(json.dumps(turn) + "\n")
        client.stdin.flush()
        try:
            loop = eventually(
                lambda: (lambda now: now if now["lastFailure"] else None)(state(project))
            )
        finally:
            client.stdin.close()
            client.wait(timeout=60)
    result = json.loads((project / "client.log").read_text().strip().splitlines()[-1])
    assert (result["type"], result["is_error"], result["api_error_status"]) == ("result", True, 429)

    failure = loop["lastFailure"]
    assert failure["error"] == "rate_limit"
    assert failure["message"] == f"API Error: Request rejected (429) · {message}"
    [recorded] = history(project, "stop_failure")
    assert recorded["error"] == "rate_limit"
    assert loop["sessionId"] == result["session_id"]

    api.add_turns([text("Back to work.")], [text("Done for now. <loop-complete>")])
    run_claude(project, "Continue", "--resume", result["session_id"])
    restored = [t for body in api.conversation() for t in texts(body, "system") if CONTEXT in t]
    assert any("ended on an API error (rate_limit)" in t for t in restored)
    assert state(project)["lastFailure"] is None
