"""The PreToolUse hook (hooks/pre_tool_use.py) through real `ralphstate hook pre-tool-use`
processes: the person answers for an approval the agent's Bash command would make, where
a person can answer; elsewhere it is denied with one sentence; every other command goes
through untouched; a fault is no decision, never an allow."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core.approving import APPROVAL_ENV
from ralphstate.hooks.pre_tool_use import ASK_THE_PERSON, NAMED_ITSELF
from ralphstate.storage.peruser import approvals, home
from ralphstate.storage.system import paths
from tests.helpers import run_process
from tests.helpers.checks import PASS

SESSION = "sess-1"
ATTENDED = {"CLAUDE_CODE_SESSION_ATTENDED": "1", "CLAUDE_CODE_ENTRYPOINT": "cli"}
HEADLESS = {"CLAUDE_CODE_SESSION_ATTENDED": "0", "CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}


@pytest.fixture
def loop(root: Path) -> Path:
    assert run_process(["init", "Build it", "-c", "a"], cwd=root).returncode == 0
    assert run_process(["criteria", "check", "a", PASS], cwd=root).returncode == 0
    return root


def bash_call(root: Path, command: str, **extra: Any) -> dict[str, Any]:
    """The hook's input for the agent's Bash call of `command`, which the client has
    written to the session's transcript (loop/person.py, `asked_at_prompt`)."""
    transcript = root.parent / f"{SESSION}.jsonl"
    call = {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": command}}
    line = {"type": "assistant", "message": {"role": "assistant", "content": [call]}}
    transcript.write_text(orjson.dumps(line).decode() + "\n")
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(root),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run it", **extra},
        "tool_use_id": "toolu_01",
    }


def hook(
    root: Path, data: dict[str, Any], env: dict[str, str] | None = None, *args: str
) -> tuple[dict[str, Any] | None, str]:
    done = run_process(["hook", "pre-tool-use", *args], cwd=root, input=orjson.dumps(data), env=env)
    assert done.returncode == 0
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    return out, done.stderr.decode()


def decision(out: dict[str, Any] | None) -> tuple[str, str]:
    assert out is not None
    said = out["hookSpecificOutput"]
    assert said["hookEventName"] == "PreToolUse"
    return said["permissionDecision"], said["permissionDecisionReason"]


@pytest.mark.parametrize(
    "command", ["pytest -q", "ralphstate status", "echo 'ralphstate trust'", "ls"]
)
def test_any_other_command_goes_through_untouched(loop: Path, command: str) -> None:
    assert hook(loop, bash_call(loop, command), ATTENDED) == (None, "")


def test_an_approval_asks_the_person_and_carries_a_token(loop: Path) -> None:
    out, err = hook(loop, bash_call(loop, "cd . && ralphstate trust", timeout=5000), ATTENDED)
    assert err == ""
    kind, reason = decision(out)
    assert kind == "ask"
    assert reason.startswith("ralphstate: the agent asks to trust 1 check to run on this")
    assert out is not None
    asked = out["hookSpecificOutput"]["updatedInput"]
    assert asked["description"] == "Run it" and asked["timeout"] == 5000
    first, command, last = asked["command"].split("\n")
    assert (command, last) == ("cd . && ralphstate trust", ")")
    assert first.startswith(f"(export {APPROVAL_ENV}=")
    token = first.split("=", 1)[1]
    assert approvals.consume(token, paths.at(str(loop / ".loop")), SESSION) is None


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_the_command_the_person_let_run_trusts_and_only_once(loop: Path) -> None:
    hand_edited(loop)
    out, _ = hook(loop, bash_call(loop, "ralphstate trust"), ATTENDED)
    assert out is not None
    command = out["hookSpecificOutput"]["updatedInput"]["command"]
    ran = run_bash(loop, command)
    assert ran.returncode == 0, ran.stderr
    assert "trusted this check" in ran.stdout
    hand_edited(loop)
    again = run_bash(loop, command)
    assert again.returncode == 1
    assert "so only the person may run it" in again.stderr


def test_where_nobody_can_answer_it_is_denied_in_one_sentence(loop: Path) -> None:
    for env in (HEADLESS, {**ATTENDED, "RALPHSTATE_RUNNER": "1"}, {}):
        kind, reason = decision(hook(loop, bash_call(loop, "ralphstate trust"), env)[0])
        assert kind == "deny"
        assert reason == ASK_THE_PERSON
        assert "ralphstate trust" not in reason
    assert not (home.data_dir() / approvals.APPROVALS_NAME).exists()


def test_a_client_that_does_not_say_is_judged_by_its_entry_point(loop: Path) -> None:
    call = bash_call(loop, "python -m ralphstate trust")
    kind, _ = decision(hook(loop, call, {"CLAUDE_CODE_ENTRYPOINT": "cli"})[0])
    assert kind == "ask"
    kind, _ = decision(hook(loop, call, {"CLAUDE_CODE_ENTRYPOINT": "sdk-py"})[0])
    assert kind == "deny"


def test_a_command_that_names_the_approval_itself_is_denied(loop: Path) -> None:
    call = bash_call(loop, f"{APPROVAL_ENV}=0123 sh ./approve.sh")
    kind, reason = decision(hook(loop, call, ATTENDED)[0])
    assert kind == "deny" and reason == NAMED_ITSELF


def test_review_approve_and_revert_ask_too(loop: Path) -> None:
    for flag, words in (("--approve", "approve the changes"), ("--revert", "put back")):
        call = bash_call(loop, f"ralphstate review {flag}")
        kind, reason = decision(hook(loop, call, ATTENDED)[0])
        assert kind == "ask" and words in reason
        assert reason.endswith("if you have read the changes (`ralphstate review`).")


def test_without_a_loop_or_for_another_tool_or_agent_nothing_is_said(
    root: Path, loop: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert hook(empty, bash_call(empty, "ralphstate trust"), ATTENDED) == (None, "")
    other = {**bash_call(loop, "ralphstate trust"), "tool_name": "Write"}
    assert hook(loop, other, ATTENDED) == (None, "")
    codex = bash_call(loop, "ralphstate trust")
    assert hook(loop, codex, ATTENDED, "--agent", "codex") == (None, "")


def test_a_fault_is_no_decision_never_an_allow(loop: Path) -> None:
    """The approvals file cannot be written: the hook says so and decides nothing, so
    the command runs without an approval, and `trust` refuses it."""
    folder = home.data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / approvals.APPROVALS_NAME).mkdir()  # a directory where the file should be
    out, err = hook(loop, bash_call(loop, "ralphstate trust"), ATTENDED)
    assert out is None
    assert err.startswith("ralphstate hook pre-tool-use: could not write the approvals file")
    assert err.endswith("; no decision.\n")


def hand_edited(root: Path) -> None:
    state = root / ".loop" / "state.json"
    raw = orjson.loads(state.read_bytes())
    raw["checks"]["a"] = PASS + " "
    state.write_bytes(orjson.dumps(raw))


def run_bash(root: Path, command: str) -> subprocess.CompletedProcess[str]:
    """`command` as the agent's Bash tool runs it: in the session's environment."""
    agent = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": SESSION}
    # `ralphstate` as this interpreter's install has it, whether or not its venv is active
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run(
        ["bash", "-c", command],
        cwd=root,
        env={**os.environ, **agent, "PATH": path},
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    "command",
    [
        '"ralph""state" trust',
        "ralph\\state trust",
        "r'alph'state review --approve",
        "x=1 ra\\lphstate trust",
    ],
)
def test_a_name_the_shell_joins_is_asked(loop: Path, command: str) -> None:
    kind, reason = decision(hook(loop, bash_call(loop, command), ATTENDED)[0])
    assert kind == "ask" and "the agent asks to" in reason


@pytest.mark.parametrize(
    "command",
    [
        "r=ralphstate; $r trust",
        "${R} review --approve",
        "$(echo ralphstate) trust",
        "`printf ralphstate` trust",
        'sh -c "$c" trust',
        "echo 'unclosed ralphstate trust",
        "ralphstate status; " + "a " * 60_000 + "&& ralphstate trust",
    ],
)
def test_a_command_it_cannot_tell_about_is_asked(loop: Path, command: str) -> None:
    kind, reason = decision(hook(loop, bash_call(loop, command), ATTENDED)[0])
    assert kind == "ask"
    assert "cannot read word by word" in reason and "say yes if you have read the command" in reason


def test_a_one_megabyte_command_is_answered_at_once(loop: Path) -> None:
    command = "ralphstate review " + " " * 1_000_000 + " --approve"
    kind, _ = decision(hook(loop, bash_call(loop, command), ATTENDED)[0])
    assert kind == "ask"


@pytest.mark.parametrize("command", ["echo $HOME && ralphstate status", "git log | grep trust"])
def test_a_command_that_approves_nothing_still_goes_through(loop: Path, command: str) -> None:
    assert hook(loop, bash_call(loop, command), ATTENDED) == (None, "")
