"""PreToolUse on Edit, Write, MultiEdit and Bash (hooks/gatefiles.py) through real `ralphstate
hook pre-tool-use` processes: a tool call that would change what runs ralphstate's hooks
(Claude Code's settings, `disableAllHooks`, `enabledPlugins`, another agent's hook file)
while a loop is on is asked of the person, denied where nobody can answer; every other
call goes through untouched."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_process
from tests.hooks.test_pre_tool_use import ATTENDED, HEADLESS, decision, hook


@pytest.fixture
def loop(root: Path) -> Path:
    assert run_process(["init", "Build it", "-c", "a"], cwd=root).returncode == 0
    return root


def call(root: Path, tool: str, **tool_input: Any) -> dict[str, Any]:
    return {
        "session_id": "sess-1",
        "cwd": str(root),
        "permission_mode": "bypassPermissions",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
    }


def gate_calls(root: Path) -> list[tuple[dict[str, Any], str]]:
    user = Path(os.environ["CLAUDE_CONFIG_DIR"])  # tests/conftest.py gives each its own
    local = root / ".claude" / "settings.local.json"
    return [
        (call(root, "Edit", file_path=str(local), old_string="x", new_string="y"), str(local)),
        (call(root, "Write", file_path=".claude/settings.json", content="{}"), "settings.json"),
        (call(root, "MultiEdit", file_path=str(user / "settings.json"), edits=[]), str(user)),
        (call(root, "Write", file_path=str(root / ".codex" / "hooks.json"), content=""), "hooks"),
        (call(root, "Bash", command="jq '.disableAllHooks=true' a > b"), "disableAllHooks"),
        (call(root, "Bash", command="echo '{\"enabledPlugins\":{}}' > x"), "enabledPlugins"),
        (call(root, "Bash", command="sed -i '/stop/d' .claude/settings.local.json"), "local"),
        (call(root, "Bash", command="rm ~/.gemini/settings.json"), "gemini"),
        (call(root, "Bash", command="rm .github/hooks/ralphstate.json"), "ralphstate.json"),
    ]


def test_a_change_to_what_runs_the_hooks_is_asked_of_the_person(loop: Path) -> None:
    for data, named in gate_calls(loop):
        said, reason = decision(hook(loop, data, ATTENDED)[0])
        assert said == "ask", data
        assert "decides whether ralphstate's hooks run" in reason and named in reason


def test_where_nobody_can_answer_it_is_denied(loop: Path) -> None:
    for data, _ in gate_calls(loop)[:5]:
        said, reason = decision(hook(loop, data, HEADLESS)[0])
        assert said == "deny" and "ask the person" in reason
        said, _ = decision(hook(loop, data, {**ATTENDED, "RALPHSTATE_RUNNER": "1"})[0])
        assert said == "deny"


@pytest.mark.parametrize(
    ("tool", "field", "value"),
    [
        ("Edit", "file_path", "src/settings.py"),
        ("Write", "file_path", "docs/hooks.md"),
        ("Write", "file_path", "config/settings.json"),
        ("Bash", "command", "pytest tests/test_settings.py"),
        ("Bash", "command", "cat config/settings.json"),
        ("Bash", "command", "ls .claude/commands"),
    ],
)
def test_any_other_call_goes_through_untouched(
    loop: Path, tool: str, field: str, value: str
) -> None:
    assert hook(loop, call(loop, tool, **{field: value}), ATTENDED) == (None, "")


def test_without_a_loop_nothing_is_asked(root: Path) -> None:
    data = call(root, "Bash", command="jq '.disableAllHooks=true' .claude/settings.json")
    done = run_process(["hook", "pre-tool-use"], cwd=root, input=orjson.dumps(data), env=ATTENDED)
    assert (done.returncode, done.stdout) == (0, b"")
