"""The PermissionRequest hook (hooks/permission_request.py) through real `ralphstate hook
permission-request` processes: where nobody can answer the client's prompt (`claude
-p`), a `ralphstate init` the person did not allow is denied with the session
interrupted (the client then exits 1) and one sentence saying how to start the loop;
anywhere a person can answer, and for every other command, it says nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core.approving import starts_loop
from ralphstate.hooks.permission_request import CANNOT_START
from tests.helpers import run_process

ATTENDED = {"CLAUDE_CODE_SESSION_ATTENDED": "1", "CLAUDE_CODE_ENTRYPOINT": "cli"}
HEADLESS = {"CLAUDE_CODE_SESSION_ATTENDED": "0", "CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}
INIT = 'ralphstate init "Add CSV export" --check "tests pass" "python3 -m unittest -q"'


def asked(root: Path, command: str) -> dict[str, Any]:
    return {
        "session_id": "sess-1",
        "cwd": str(root),
        "permission_mode": "default",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Start the loop"},
        "permission_suggestions": [],
    }


def hook(root: Path, command: str, env: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
    data = orjson.dumps(asked(root, command))
    env = {**env, "CLAUDE_PROJECT_DIR": str(root)}
    done = run_process(["hook", "permission-request"], cwd=root, input=data, env=env)
    assert done.returncode == 0, done.stderr
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    return out, done.stderr.decode()


def test_a_loop_that_cannot_start_under_p_is_denied_and_interrupts_the_session(
    root: Path,
) -> None:
    assert not (root / ".loop").exists()  # no loop yet: the hook runs all the same
    out, err = hook(root, f"cd {root} && {INIT}", HEADLESS)
    assert out is not None
    assert out["hookSpecificOutput"] == {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": CANNOT_START, "interrupt": True},
    }
    assert out["systemMessage"] == CANNOT_START
    assert "--allowedTools 'Bash(ralphstate init:*)'" in CANNOT_START
    assert err.startswith("ralphstate hook permission-request: the loop cannot start here")
    assert not (root / ".loop").exists()


@pytest.mark.parametrize(
    ("command", "env"),
    [
        (INIT, ATTENDED),  # a person answers the prompt
        ("ralphstate status", HEADLESS),
        ("rm -rf build", HEADLESS),
        ("echo 'ralphstate init x'", HEADLESS),  # quoted: data, not a command
        ("git commit -m init && ralphstate verify", HEADLESS),
    ],
)
def test_anything_else_is_left_to_the_client(root: Path, command: str, env: dict[str, str]) -> None:
    assert hook(root, command, env) == (None, "")


@pytest.mark.parametrize(
    ("command", "starts"),
    [
        (INIT, True),
        ("cd sub && ralphstate init x -c y", True),
        ("python3 -m ralphstate init x", True),
        ("/usr/local/bin/ralphstate --quiet init x", True),
        ("ralphstate status; echo init", False),
        ("python3 -m other init", False),
        ("ralphstate criteria add init", False),
    ],
)
def test_the_loop_s_start_is_read_from_the_command_s_words(command: str, starts: bool) -> None:
    assert starts_loop(command) is starts
