"""The overnight recipe as root, with the real Claude Code client against the scripted
API: as root, `claude -p --dangerously-skip-permissions` refuses to start unless it is
told it runs in a sandbox (`IS_SANDBOX=1`, a container that is itself the sandbox). A
run that hits the refusal pauses `agent_errors` quoting the client's one line; the
recipes in docs/how-to/overnight.md ("As root, in a container": `IS_SANDBOX=1`, or
no prompt skipped with `--allowedTools Bash`) run to completion.

These tests need this process to be root (containers usually are); elsewhere they are
skipped, since the client's refusal cannot happen.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from e2e_support import Cli, history, ralphstate
from e2e_support import read_state as state
from fake_api import FakeAnthropicAPI, bash, text

from ralphstate.run.result import AS_ROOT
from ralphstate.run.spawn import join_command

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not hasattr(os, "getuid") or os.getuid() != 0,
        reason="the client refuses --dangerously-skip-permissions only as root",
    ),
]

REFUSAL = (
    "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
)


def agent(claude_bin: Path) -> str:
    return join_command([str(claude_bin), "-p", "--dangerously-skip-permissions"])


def test_as_root_the_pause_quotes_the_clients_refusal(
    cli: Cli, claude_bin: Path, claude_env: dict[str, str], api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    cli("init", "Add a CSV export", "-c", "tests pass")
    env = {k: v for k, v in claude_env.items() if k != "IS_SANDBOX"}

    run = ralphstate(project, env, "run", "--no-sandbox", "--agent", agent(claude_bin), timeout=180)

    assert run.returncode == 3, run.stderr
    assert api.requests == []  # the client stopped before it asked the model anything
    *_, summary, hint = run.stdout.splitlines()
    assert summary.startswith(f'paused (agent_errors: exit 1: "{REFUSAL}") · '), summary
    assert hint == AS_ROOT  # the recipe that works
    loop = state(project)
    assert (loop["status"], loop["pauseReason"]) == ("paused", "agent_errors")
    assert [e["message"] for e in loop["errors"]] == [f'agent exit 1: "{REFUSAL}"'] * 3
    status = ralphstate(project, env, "status").stdout
    assert f'last error (iteration 3): agent exit 1: "{REFUSAL}"' in status
    [finished] = history(project, "run_finished")
    assert finished["detail"] == f'exit 1: "{REFUSAL}"'


@pytest.mark.parametrize(
    ("flags", "sandbox"),
    [
        # docs/how-to/overnight.md, "As root, in a container": the container is the sandbox
        (["--dangerously-skip-permissions"], {"IS_SANDBOX": "1"}),
        # ... or no prompt skipped: the tools the agent needs allowed
        (["--permission-mode", "acceptEdits", "--allowedTools", "Bash"], {}),
    ],
    ids=["IS_SANDBOX=1", "allowedTools"],
)
def test_as_root_in_a_container_the_recipes_run_to_completion(
    flags: list[str],
    sandbox: dict[str, str],
    cli: Cli,
    claude_bin: Path,
    claude_env: dict[str, str],
    api: FakeAnthropicAPI,
    project: Path,
) -> None:
    cli("install")
    cli("init", "Add a CSV export", "-c", "tests pass")
    api.add_turns(
        [bash('ralphstate criteria set "tests pass" true --note "pytest: 3 passed"')],
        [text("Recorded tests pass.")],
    )
    command = join_command([str(claude_bin), "-p", "--output-format", "json", *flags])

    run = ralphstate(
        project, {**claude_env, **sandbox}, "run", "--agent", command, "--json", timeout=180
    )

    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert (out["outcome"], out["iterations"]) == ("complete", 1)
    assert REFUSAL not in run.stderr
    assert state(project)["criteriaStatus"] == {"tests pass": True}
    # The JSON report is one line on the terminal (stderr under --json); the log has it.
    assert '"total_cost_usd"' not in run.stderr
    assert "the agent's JSON output (1 object, " in run.stderr
    assert '"total_cost_usd"' in (project / ".loop" / "runs" / "0001.log").read_text()
