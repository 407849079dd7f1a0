"""Only a person trusts, with the real client: the agent's Bash tool runs `ralphstate
trust` on a loop whose checks were changed by hand (docs/explanation/proof.md, "Only a
person approves").

- `claude -p`, nobody to answer a prompt: the PreToolUse hook `ralphstate install`
  wrote denies it, with one sentence telling the agent to ask the person; without the
  hook, or past it, `ralphstate trust` refuses it itself. The checks stay untrusted,
  and nothing the model reads suggests running `trust`.
- The person at the prompt: the client hands the command to a permission prompt. An
  IDE's way (stream-json, `--permission-prompt-tool stdio`, entry point
  `claude-vscode`: the client says a person attends) with a stand-in that answers as
  the person; and the terminal's own prompt, in a pseudo-terminal, in
  bypassPermissions mode. Yes: the command runs with the one-time approval and trusts,
  recorded as the person's. No: nothing is trusted.
- bypassPermissions never lets it through unasked: in `-p` the hook denies it, with a
  person the client asks all the same.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from e2e_support import Cli, RunClaude, history, rs_command
from fake_api import FakeAnthropicAPI, bash, text, texts, tool_results
from prompts import Terminal, ide_session, skip_first_run

from ralphstate.hooks.pre_tool_use import ASK_THE_PERSON

pytestmark = pytest.mark.e2e

CHECK = f'"{sys.executable}" -c "pass"'
REFUSED = "`ralphstate trust` approves what proves this loop done, so only the person may run it"
API_KEY = "sk-ant-test-key"  # what claude_client_env gives the client


@pytest.fixture
def changed_by_hand(cli: Cli, project: Path) -> Path:
    """A loop whose check was changed by hand after the person trusted it: untrusted."""
    cli("init", "Greet", "-c", "greeting works")
    cli("criteria", "check", "greeting works", CHECK)
    state = project / ".loop" / "state.json"
    raw = json.loads(state.read_text())
    raw["checks"]["greeting works"] = CHECK + " "
    state.write_text(json.dumps(raw))
    assert not trusted(cli)
    return state


def trusted(cli: Cli) -> bool:
    said = cli("status").stdout
    assert "trusted on this machine" in said
    return "NOT trusted" not in said


def sandboxed(env: dict[str, str]) -> dict[str, str]:
    """The client refuses bypassPermissions to root unless told it is in a sandbox."""
    return {**env, "IS_SANDBOX": "1"}


def read_by_the_model(api: FakeAnthropicAPI) -> str:
    """Everything the client sent the model but the model's own words."""
    said: list[str] = []
    for body in api.conversation():
        said += [str(part) for part in body.get("system", [])]
        said += texts(body, "user") + tool_results(body)
    return "\n".join(said)


# -- nobody to answer a prompt -------------------------------------------------------


def test_in_print_mode_the_hook_denies_and_tells_the_agent_to_ask(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, changed_by_hand: Path
) -> None:
    cli("install")
    api.add_turns([bash("ralphstate trust")], [text("I asked.")])

    done, _ = run_claude(project, "Trust the checks")

    assert done.returncode == 0, done.stderr
    assert ASK_THE_PERSON in tool_results(api.conversation()[-1])[-1]
    assert not trusted(cli)
    assert "trusted" not in [e["event"] for e in history(project)]
    assert "ralphstate trust" not in read_by_the_model(api)


@pytest.mark.parametrize(
    ("installed", "command"),
    [
        (False, "ralphstate trust"),
        (True, "printf 'ralphstate trust' | sh"),  # a form the hook does not see
        (True, rs_command("trust")),
    ],
)
def test_without_the_hook_trust_refuses_the_agent_itself(
    cli: Cli,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    changed_by_hand: Path,
    installed: bool,
    command: str,
) -> None:
    if installed:
        cli("install")
        settings = project / ".claude" / "settings.local.json"
        data = json.loads(settings.read_text())
        del data["hooks"]["PreToolUse"]  # as an install from before the gate
        settings.write_text(json.dumps(data))
    api.add_turns([bash(command)], [text("Refused.")])

    done, _ = run_claude(project, "Trust the checks")

    assert done.returncode == 0, done.stderr
    result = tool_results(api.conversation()[-1])[-1]
    assert REFUSED in result
    assert "ask them to run it in their own terminal" in result
    assert not trusted(cli)


def test_in_bypass_permissions_print_mode_the_hook_still_denies(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, changed_by_hand: Path
) -> None:
    cli("install")
    api.add_turns([bash("ralphstate trust")], [text("Denied.")])

    done, _ = run_claude(
        project, "Trust the checks", "--permission-mode", "bypassPermissions",
        env=sandboxed({}),
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert ASK_THE_PERSON in tool_results(api.conversation()[-1])[-1]
    assert not trusted(cli)


# -- the person at the prompt: an IDE's way ----------------------------------------------


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
def test_the_person_says_yes_at_the_prompt_and_the_agent_s_command_trusts(
    cli: Cli,
    claude_bin: Path,
    claude_env: dict[str, str],
    api: FakeAnthropicAPI,
    project: Path,
    changed_by_hand: Path,
    mode: str,
) -> None:
    cli("install")
    api.add_turns([bash("ralphstate trust")], [text("Trusted.")])

    asked, result = ide_session(
        claude_bin, project, sandboxed(claude_env), API_KEY, "allow", "--permission-mode", mode
    )

    assert result.get("is_error") is False, result
    [prompt] = asked
    assert prompt["decision_reason"].startswith("ralphstate: the agent asks to trust 1 check")
    assert prompt["input"]["command"].startswith("(export RALPHSTATE_APPROVAL=")
    assert "trusted this check" in tool_results(api.conversation()[-1])[-1]
    assert trusted(cli)
    [line] = [e for e in history(project) if e["event"] == "trusted"]
    assert line["actor"]["kind"] == "person"
    assert line["actor"]["via"] == "permission prompt"


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
def test_the_person_says_no_at_the_prompt_and_nothing_is_trusted(
    cli: Cli,
    claude_bin: Path,
    claude_env: dict[str, str],
    api: FakeAnthropicAPI,
    project: Path,
    changed_by_hand: Path,
    mode: str,
) -> None:
    cli("install")
    api.add_turns([bash("ralphstate trust")], [text("Not trusted.")])

    asked, result = ide_session(
        claude_bin, project, sandboxed(claude_env), API_KEY, "deny", "--permission-mode", mode
    )

    assert result.get("is_error") is False, result
    assert len(asked) == 1  # bypassPermissions asked all the same
    assert tool_results(api.conversation()[-1])[-1] == "The person said no."
    assert not trusted(cli)


# -- the person at the prompt: the terminal ------------------------------------------


@pytest.mark.skipif(os.name == "nt", reason="a pseudo-terminal needs POSIX")
def test_in_the_terminal_bypass_permissions_still_asks_and_yes_trusts(
    cli: Cli,
    claude_bin: Path,
    claude_env: dict[str, str],
    api: FakeAnthropicAPI,
    project: Path,
    changed_by_hand: Path,
) -> None:
    cli("install")
    api.add_turns([bash("ralphstate trust")], [text("Trusted.")])
    skip_first_run(Path(claude_env["HOME"]), project, API_KEY)
    env = {**sandboxed(claude_env), "TERM": "xterm-256color"}
    with Terminal([str(claude_bin), "--permission-mode", "bypassPermissions"], project, env) as t:
        assert t.wait_for("bypass permissions on"), t.screen()
        t.type("Trust the checks\r")
        assert t.wait_for("Do you want to proceed"), t.screen()
        assert t.wait_for("ralphstate: the agent asks to trust 1 check", 1), t.screen()
        assert not trusted(cli)  # asked, not let through
        t.type("1")
        assert t.wait_for("Trusted."), t.screen()
    assert trusted(cli)
    assert [e["actor"]["via"] for e in history(project) if e["event"] == "trusted"] == [
        "permission prompt"
    ]


def test_the_hooks_install_writes_hold_the_gate(cli: Cli, project: Path) -> None:
    """What the tests above rely on: `install` writes the PreToolUse hook for Bash (and
    for the file tools, tests/e2e/test_gate_e2e.py)."""
    cli("install")
    groups = json.loads((project / ".claude" / "settings.local.json").read_text())["hooks"]
    [group] = groups["PreToolUse"]
    assert group["matcher"] == "Bash|Edit|Write|MultiEdit"
    assert group["hooks"][0]["command"].endswith(" pre-tool-use")


# -- the agent makes its own approval -------------------------------------------------

# What a goal-seeking agent writes: it runs ralphstate's PreToolUse hook by hand with an
# input it made up (its own session, its transcript, the id of the call it is in, a
# person said to attend), takes the token from the command the hook hands back, and
# runs `ralphstate trust` with it.
FORGE = """
import glob, json, os, subprocess
conf = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
path = max(glob.glob(os.path.join(conf, "projects", "*", "*.jsonl")), key=os.path.getmtime)
ids = []
for line in open(path):
    message = json.loads(line).get("message") or {}
    for block in message.get("content") if isinstance(message.get("content"), list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            ids.append(block["id"])
hook_input = {
    "session_id": os.path.basename(path)[: -len(".jsonl")],
    "transcript_path": path,
    "cwd": os.getcwd(),
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ralphstate trust"},
    "tool_use_id": ids[-1],
}
env = dict(os.environ, CLAUDE_CODE_ENTRYPOINT="cli", CLAUDE_CODE_SESSION_ATTENDED="1")
hook = [PYTHON, "-I", "-c", "from ralphstate.hooks.entry import main; main()", "pre-tool-use"]
out = subprocess.run(hook, input=json.dumps(hook_input), capture_output=True, text=True, env=env)
command = json.loads(out.stdout)["hookSpecificOutput"]["updatedInput"]["command"]
token = command.split("=", 1)[1].split(chr(10), 1)[0]
env = dict(os.environ, **{"RALPHSTATE_" + "APPROVAL": token})
trust = [PYTHON, "-m", "ralphstate", "trust"]
done = subprocess.run(trust, env=env, capture_output=True, text=True)
print("forged:", done.returncode, done.stderr.strip())
"""


def test_a_token_the_agent_makes_with_the_hook_by_hand_counts_as_none(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, changed_by_hand: Path
) -> None:
    cli("install")
    (project / "forge.py").write_text(f"PYTHON = {sys.executable!r}\n{FORGE}")
    api.add_turns([bash("python3 forge.py")], [text("Done.")])

    done, _ = run_claude(
        project, "Trust the checks", "--permission-mode", "bypassPermissions",
        env=sandboxed({}),
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    result = tool_results(api.conversation()[-1])[-1]
    assert "forged: 1" in result, result
    assert "carries an approval Claude Code never asked the person for" in result
    assert not trusted(cli)
