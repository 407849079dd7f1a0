"""`ralphstate install --tasks`: the task hooks and the task tools' switch in Claude
Code's settings, and `--uninstall` taking away exactly what it added."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ralphstate.agents import claude as inst
from ralphstate.core.errors import RalphstateError
from ralphstate.core.limits import STOP_HOOK_TIMEOUT
from ralphstate.install.agents import hook_command, install_agent
from ralphstate.install.settings import InstallResult
from tests.helpers import run_process


def install(scope: str, root: Path, **options: Any) -> InstallResult:
    """`install` for Claude Code, the default agent."""
    return install_agent("claude", scope, root, **options)


POST = hook_command("PostToolUse")
DONE = hook_command("TaskCompleted")


def dump(data: object) -> str:
    return json.dumps(data, indent=2) + "\n"


def write(path: Path, data: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = dump(data).encode()
    path.write_bytes(raw)
    return raw


def read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


PERSON: dict[str, Any] = {
    "model": "opus",
    "hooks": {
        "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]}]
    },
    "env": {"FOO": "1", "BAR": "x"},
}


def test_tasks_adds_the_task_hooks_and_turns_the_tools_on(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(path, PERSON)
    result = install("project", tmp_path, tasks=True)
    assert result.changed is True
    assert result.actions[-3:] == [
        f"added PostToolUse hook: {POST}",
        f"added TaskCompleted hook: {DONE}",
        'turned the task tools on: env.CLAUDE_CODE_ENABLE_TODO_TOOLS = "1"',
    ]
    data = read(path)
    assert data["env"] == {"FOO": "1", "BAR": "x", "CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
    assert data["hooks"]["PostToolUse"] == [
        {"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]},
        {
            "matcher": "TaskCreate|TaskUpdate|TodoWrite",
            "hooks": [{"type": "command", "command": POST, "timeout": 30}],
        },
    ]
    assert data["hooks"]["TaskCompleted"] == [
        {"hooks": [{"type": "command", "command": DONE, "timeout": STOP_HOOK_TIMEOUT}]}
    ]
    assert set(data["hooks"]) == {"PostToolUse", "TaskCompleted", *inst.EVENTS}
    again = install("project", tmp_path, tasks=True)
    assert again.changed is False
    assert (
        again.actions[-1]
        == 'the task tools are on already: env.CLAUDE_CODE_ENABLE_TODO_TOOLS = "1"'
    )


def test_uninstall_takes_away_exactly_what_tasks_added(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    original = write(path, PERSON)
    install("project", tmp_path, tasks=True)
    result = install("project", tmp_path, uninstall=True)
    assert result.actions[-3:] == [
        f"removed PostToolUse hook: {POST}",
        f"removed TaskCompleted hook: {DONE}",
        "removed env.CLAUDE_CODE_ENABLE_TODO_TOOLS",
    ]
    assert path.read_bytes() == original


def test_an_env_object_install_made_goes_with_its_key(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.local.json"
    original = write(path, {"model": "opus"})
    install("local", tmp_path, tasks=True)
    assert read(path)["env"] == {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
    install("local", tmp_path, uninstall=True)
    assert path.read_bytes() == original


@pytest.mark.parametrize("value", ["1", "true", "0", 1])
def test_the_persons_own_setting_is_left_alone_by_install_and_uninstall(
    tmp_path: Path, value: object
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    person = {"env": {"CLAUDE_CODE_ENABLE_TODO_TOOLS": value, "FOO": "1"}}
    write(path, person)
    result = install("project", tmp_path, tasks=True)
    assert read(path)["env"] == person["env"]
    shown = json.dumps(value)
    if value == "0":
        assert result.actions[-1] == (
            f"note: env.CLAUDE_CODE_ENABLE_TODO_TOOLS is {shown} in this file, left as it is;"
            " the task tools are on only when it is 1"
        )
    else:
        assert result.actions[-1] == (
            f"the task tools are on already: env.CLAUDE_CODE_ENABLE_TODO_TOOLS = {shown}"
        )
    install("project", tmp_path, uninstall=True)
    assert read(path) == person


def test_a_value_the_person_changed_after_install_is_theirs(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    install("project", tmp_path, tasks=True)
    data = read(path)
    data["env"]["CLAUDE_CODE_ENABLE_TODO_TOOLS"] = "true"
    write(path, data)
    result = install("project", tmp_path, uninstall=True)
    assert "removed env.CLAUDE_CODE_ENABLE_TODO_TOOLS" not in result.actions
    assert read(path) == {"env": {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "true"}}
    # ... and it is no longer taken for install's: a later --tasks leaves it too.
    install("project", tmp_path, tasks=True)
    install("project", tmp_path, uninstall=True)
    assert read(path) == {"env": {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "true"}}


def test_todowrite_instead_is_said(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(path, {"env": {"CLAUDE_CODE_ENABLE_TASKS": "0"}})
    result = install("project", tmp_path, tasks=True)
    assert result.actions[-1] == (
        'note: env.CLAUDE_CODE_ENABLE_TASKS is "0": Claude Code offers TodoWrite instead of'
        " TaskCreate and TaskUpdate"
    )


def test_an_env_that_is_not_an_object_is_reported_and_the_file_kept(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    original = write(path, {"env": ["CLAUDE_CODE_ENABLE_TODO_TOOLS=1"]})
    with pytest.raises(RalphstateError, match=r'^"env" in .* is not an object; nothing was'):
        install("project", tmp_path, tasks=True)
    assert path.read_bytes() == original


def test_without_tasks_install_is_as_before(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(path, PERSON)
    install("project", tmp_path)
    data = read(path)
    assert data["env"] == PERSON["env"]
    assert data["hooks"]["PostToolUse"] == PERSON["hooks"]["PostToolUse"]
    assert "TaskCompleted" not in data["hooks"]


def test_our_post_tool_use_hook_gets_its_matcher_back(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(
        path,
        {
            "hooks": {
                "PostToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": POST}]}]
            }
        },
    )
    result = install("project", tmp_path, tasks=True)
    assert "set the PostToolUse hook's matcher to TaskCreate|TaskUpdate|TodoWrite (was '')" in (
        result.actions
    )
    assert read(path)["hooks"]["PostToolUse"][0]["matcher"] == "TaskCreate|TaskUpdate|TodoWrite"


def test_the_command_line_round_trip(tmp_path: Path) -> None:
    """`ralphstate install --tasks`, then `--uninstall`, as real processes."""
    path = tmp_path / ".claude" / "settings.local.json"  # the default scope
    original = write(path, PERSON)
    done = run_process(["install", "--tasks"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert 'turned the task tools on: env.CLAUDE_CODE_ENABLE_TODO_TOOLS = "1"\n' in out
    assert out.endswith(f"updated: {path}\n")
    assert read(path)["env"]["CLAUDE_CODE_ENABLE_TODO_TOOLS"] == "1"
    done = run_process(["install", "--uninstall"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == original


@pytest.mark.parametrize("extra", [["--agent", "codex"], ["--statusline"]])
def test_tasks_is_claude_codes_hooks_only(tmp_path: Path, extra: list[str]) -> None:
    done = run_process(["install", "--tasks", *extra], cwd=tmp_path)
    assert done.returncode != 0
    assert "--tasks is Claude Code's hooks'" in done.stderr.decode()
    assert not (tmp_path / ".claude").exists()


# -- doctor --------------------------------------------------------------------------------


def doctor_lines(rs: Any) -> list[str]:
    result = rs("doctor")
    words = ("task tools", "todo tools", "task hooks")
    return [line for line in result.out.splitlines() if any(w in line for w in words)]


NOT_ON = (
    "the task tools are not turned on in this project's configuration (no"
    " CLAUDE_CODE_ENABLE_TODO_TOOLS in the environment or a settings file's env; only older"
    " models have them without it); `ralphstate install --tasks` turns them on"
)
NO_HOOKS = (
    "note no task hooks installed (`ralphstate install --tasks` adds them; the plugin brings"
    " its own)"
)


def test_doctor_without_the_task_tools_or_hooks(rs: Any, project: Path, home: Path) -> None:
    assert doctor_lines(rs) == [f"note {NOT_ON}", NO_HOOKS]


def test_doctor_after_install_tasks(rs: Any, project: Path, home: Path) -> None:
    assert rs("install", "--tasks").code == 0
    settings = project / ".claude" / "settings.local.json"
    assert doctor_lines(rs) == [
        (
            f"ok   the task tools are on (CLAUDE_CODE_ENABLE_TODO_TOOLS=1 in {settings}):"
            " TaskCreate and TaskUpdate"
        ),
        f"ok   the task hooks (PostToolUse, TaskCompleted) are installed in {settings}",
    ]


def test_doctor_reads_the_environment_and_todowrite_instead(
    rs: Any, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_ENABLE_TODO_TOOLS", "true")
    user = home / ".claude" / "settings.json"
    write(user, {"env": {"CLAUDE_CODE_ENABLE_TASKS": "0"}})
    assert doctor_lines(rs)[0] == (
        "ok   the todo tools are on (CLAUDE_CODE_ENABLE_TODO_TOOLS=true in the environment),"
        f" and CLAUDE_CODE_ENABLE_TASKS=0 in {user} gives TodoWrite instead of TaskCreate and"
        " TaskUpdate"
    )


def test_doctor_the_local_settings_win_and_off_with_hooks_is_a_warning(
    rs: Any, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_ENABLE_TODO_TOOLS", "1")
    assert rs("install", "--tasks", "--scope", "project").code == 0  # project: "1"
    local = project / ".claude" / "settings.local.json"
    write(local, {"env": {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "0"}})
    assert doctor_lines(rs)[0] == (
        f"warn the task tools are turned off (CLAUDE_CODE_ENABLE_TODO_TOOLS=0 in {local})"
    )


def test_doctor_one_task_hook_without_the_other(rs: Any, project: Path, home: Path) -> None:
    settings = project / ".claude" / "settings.json"
    write(
        settings, {"hooks": {"TaskCompleted": [{"hooks": [{"type": "command", "command": DONE}]}]}}
    )
    assert doctor_lines(rs) == [
        f"warn {NOT_ON}",
        (
            "warn of the task hooks only TaskCompleted is installed, not PostToolUse; run"
            " `ralphstate install --tasks`"
        ),
    ]
