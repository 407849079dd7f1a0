"""The allow rules `ralphstate install` writes, with the real client in print mode and
no `--allowedTools`: `claude -p` runs the agent's own ralphstate commands (`criteria
set`, `step done`, `status`) without a prompt once they are installed, refuses them
before, still refuses the commands only a person may run (`cancel`, and a compound
command that hides one), and refuses them again after `ralphstate uninstall`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Cli, history, json_result, read_state, run_client
from fake_api import FakeAnthropicAPI, bash, text, tool_results

from ralphstate.install.permissions import RULES

pytestmark = pytest.mark.e2e
ASKS = "This command requires approval"  # what the client gives the model in print mode


@pytest.fixture
def run_print(
    claude_bin: Path, claude_env: dict[str, str], project: Path
) -> Callable[[str], dict[str, Any]]:
    """`run_print(PROMPT)`: `claude -p PROMPT` in the project, with its own permission
    settings and nothing more."""

    def run(prompt: str) -> dict[str, Any]:
        command = [str(claude_bin), "-p", prompt, "--output-format", "json"]
        done = run_client(command, project, claude_env, 60)
        assert done.returncode == 0, done.stderr
        return json_result(done, "claude")

    return run


def ran(api: FakeAnthropicAPI) -> str:
    """What the last Bash call of the conversation gave back to the model."""
    return tool_results(api.conversation()[-1])[-1]


@pytest.fixture
def loop(cli: Cli) -> None:
    cli("init", "Add a CSV export", "-c", "tests pass", "-s", "write the exporter")


def test_without_the_rules_print_mode_refuses_the_agent_s_commands(
    run_print: Callable[[str], dict[str, Any]],
    api: FakeAnthropicAPI,
    project: Path,
    loop: None,
) -> None:
    api.add_turns([bash("ralphstate criteria set 'tests pass' true")], [text("Could not.")])
    run_print("Record it")
    assert ran(api) == ASKS
    assert read_state(project)["criteriaStatus"] == {"tests pass": False}


def test_installed_rules_let_claude_p_record_progress_without_a_prompt(
    run_print: Callable[[str], dict[str, Any]],
    api: FakeAnthropicAPI,
    project: Path,
    cli: Cli,
    loop: None,
) -> None:
    said = cli("install").stdout
    assert "allowed the agent's own ralphstate commands without a prompt" in said
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert settings["permissions"] == {"allow": list(RULES)}
    api.add_turns(
        [bash("ralphstate step done 'write the exporter'")],
        [bash("ralphstate criteria set 'tests pass' true --note 'pytest -q: 3 passed'")],
        [bash("ralphstate status")],
        [text("Done.\n\n<loop-complete>")],
    )
    result = run_print("Record it")
    assert result["result"] == "Done.\n\n<loop-complete>"
    outputs = [r for body in api.conversation() for r in tool_results(body)]
    assert "done: write the exporter" in outputs
    assert "tests pass: met" in outputs
    assert any(o.startswith(f"loop {project}: in progress") for o in outputs), outputs
    state = read_state(project)
    assert state["criteriaStatus"] == {"tests pass": True}
    assert state["status"] == "complete"


@pytest.mark.parametrize("command", ["ralphstate cancel", "ralphstate status && ralphstate cancel"])
def test_a_command_only_the_person_runs_is_still_refused(
    run_print: Callable[[str], dict[str, Any]],
    api: FakeAnthropicAPI,
    project: Path,
    cli: Cli,
    loop: None,
    command: str,
) -> None:
    cli("install")
    api.add_turns([bash(command)], [text("Refused.")])
    run_print("Cancel it")
    # (The Stop hook holds the unfinished loop until it pauses as a stall.)
    assert ran(api) == ASKS or ran(api).endswith("requires approval: ralphstate cancel")
    assert read_state(project)["status"] != "cancelled"
    assert not history(project, "cancelled")


def test_uninstall_takes_the_rules_away_and_leaves_the_person_s(
    run_print: Callable[[str], dict[str, Any]],
    api: FakeAnthropicAPI,
    project: Path,
    cli: Cli,
    loop: None,
) -> None:
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    mine = ["Bash(ralphstate status:*)", "Bash(npm test:*)"]
    settings.write_text(json.dumps({"permissions": {"allow": mine}}))
    cli("install")
    cli("uninstall")
    assert json.loads(settings.read_text()) == {"permissions": {"allow": mine}}
    api.add_turns([bash("ralphstate criteria set 'tests pass' true")], [text("Could not.")])
    run_print("Record it")
    assert ran(api) == ASKS
    assert read_state(project)["criteriaStatus"] == {"tests pass": False}


def test_claude_p_whose_loop_cannot_start_says_so_and_exits_non_zero(
    claude_bin: Path, claude_env: dict[str, str], api: FakeAnthropicAPI, project: Path, cli: Cli
) -> None:
    """`claude -p` whose agent would start the loop: `ralphstate init` needs the
    person's approval, which print mode cannot ask for. The session stops at once (the
    model is not asked again), the client exits 1 ("Execution error"), and ralphstate's
    log says how to start the loop; allowed for the run, the same start works, exit 0."""
    cli("install")
    init = 'ralphstate init "Add a CSV export" -c "tests pass" -s "write the exporter"'
    api.add_turns([bash("ralphstate status")], [bash(init)])  # then "done", unasked
    command = [str(claude_bin), "-p", "Start a loop: add a CSV export", "--output-format"]
    command += ["json"]
    done = run_client(command, project, claude_env, 60)
    assert done.returncode == 1, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["is_error"] is True, result
    assert [d["tool_input"]["command"] for d in result["permission_denials"]] == [init]
    assert not (project / ".loop").exists()
    assert len(api.conversation()) == 2  # interrupted: the model was not asked again
    assert api.unused_turns() == 0
    [log] = list(Path(claude_env["HOME"]).rglob("ralphstate.log"))
    said = log.read_text()
    assert "permission-request: the loop cannot start here" in said, said
    assert "--allowedTools 'Bash(ralphstate init:*)'" in said, said

    api.add_turns([bash(init)], [text("Started.")])
    allowed = [*command, "--allowedTools", "Bash(ralphstate init:*)"]
    assert run_client(allowed, project, claude_env, 60).returncode == 0
    assert read_state(project)["spec"] == "Add a CSV export"
