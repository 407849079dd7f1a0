"""`ralphstate install --agent NAME`: each agent's own file and format, merged,
idempotent, removable, with absolute quoted command paths; `doctor` reports them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ralphstate.agents import cursor, table
from ralphstate.install.agents import find_installed, hook_command, hooks_path
from ralphstate.install.command import HOOK_CODE, command_target, own_subcommand
from tests.helpers import Result

# The agents with a hook file of their own: every agent of the table but Claude Code,
# whose settings have tests of their own (tests/install/test_install.py), and those whose
# hooks are a plugin of ralphstate's (opencode: tests/install/test_install_opencode.py).
OTHERS = [
    name for name in table.NAMES if name != "claude" and table.get(name).hook_file.shape != "plugin"
]


def cmd(sub: str, agent: str) -> str:
    event = {
        "stop": "Stop",
        "session-start": "SessionStart",
        "pre-compact": "PreCompact",
        "session-end": "SessionEnd",
    }[sub]
    return hook_command(event, agent=agent)


def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def grouped(sub: str, agent: str, timeout: int, matcher: bool | str, name: bool = False) -> Any:
    handler: dict[str, Any] = {"type": "command"}
    if name:
        handler["name"] = f"ralphstate-{sub}"
    handler.update(command=cmd(sub, agent), timeout=timeout)
    group: dict[str, Any] = {}
    if matcher is not False:
        group["matcher"] = "" if matcher is True else matcher
    group["hooks"] = [handler]
    return [group]


def powershell(sub: str, agent: str) -> str:
    program = command_target(cmd(sub, agent))
    assert program is not None
    return f"& '{program}' -I -c '{HOOK_CODE}' {sub} --agent {agent}"


EXPECTED: dict[str, tuple[str, dict[str, Any]]] = {
    "codex": (
        ".codex/hooks.json",
        {
            "hooks": {
                "Stop": grouped("stop", "codex", 180, False),
                "SessionStart": grouped("session-start", "codex", 30, True),
                "PreCompact": grouped("pre-compact", "codex", 30, True),
                "SessionEnd": grouped("session-end", "codex", 3, False),  # Codex allows 3 s,
            }
        },
    ),
    "gemini": (
        ".gemini/settings.json",
        {
            "hooks": {
                "AfterAgent": grouped("stop", "gemini", 180000, False, True),
                "SessionStart": grouped("session-start", "gemini", 30000, True, True),
                # Gemini fires PreCompress `auto` before every model call: only `/compress`.
                "PreCompress": grouped("pre-compact", "gemini", 30000, "manual", True),
                "SessionEnd": grouped("session-end", "gemini", 10000, False, True),
            }
        },
    ),
    "cursor": (
        ".cursor/hooks.json",
        {
            "version": 1,
            "hooks": {
                "stop": [{"command": cmd("stop", "cursor"), "loop_limit": cursor.LOOP_LIMIT}]
            },
        },
    ),
    "copilot": (
        ".github/hooks/ralphstate.json",
        {
            "version": 1,
            "hooks": {
                event: [
                    {
                        "type": "command",
                        "bash": cmd(sub, "copilot"),
                        "powershell": powershell(sub, "copilot"),
                        "timeoutSec": {"stop": 180, "session-end": 10}.get(sub, 30),
                    }
                ]
                for event, sub in (
                    ("agentStop", "stop"),
                    ("sessionStart", "session-start"),
                    ("preCompact", "pre-compact"),
                    ("sessionEnd", "session-end"),
                )
            },
        },
    ),
}


def test_every_agent_of_the_table_has_an_install_target_and_no_other() -> None:
    agents = table.every()
    assert table.NAMES[0] == "claude"  # the default of `install --agent`
    assert all(agents[name].name == name for name in agents)
    for agent in agents.values():  # handlers for a hook file, or a plugin of ours
        hook_file = agent.hook_file
        plugin = hook_file.shape == "plugin"
        assert hook_file.shape in ("grouped", "flat", "plugin")
        assert (hook_file.handler is None, hook_file.plugin is not None) == (plugin, plugin)
    files = [name for name in agents if agents[name].hook_file.shape != "plugin"]
    assert sorted(files) == sorted([*OTHERS, "claude"])
    assert sorted(EXPECTED) == sorted(OTHERS)  # each one's file is pinned below


@pytest.mark.parametrize("agent", table.NAMES)
def test_every_agent_installs_and_uninstalls_through_the_command_line(
    rs: Any, project: Path, home: Path, agent: str
) -> None:
    def stop_hooks() -> list[str]:
        if agent == "claude":
            found = [(h.command, h.path) for h in find_installed(project, home, "claude")]
        else:
            found = [(h.command, h.path) for h in find_installed(project, home) if h.agent == agent]
        return [str(path) for command, path in found if own_subcommand(command) == "stop"]

    first = rs("install", "--agent", agent)
    assert first.code == 0, first.err
    assert stop_hooks() == [first.out.splitlines()[-1].removeprefix("updated: ")]
    removed = rs("install", "--agent", agent, "--uninstall")
    assert removed.code == 0, removed.err
    assert stop_hooks() == []


@pytest.mark.parametrize("agent", OTHERS)
def test_install_writes_the_agents_file_and_a_second_run_changes_nothing(
    rs: Any, project: Path, home: Path, agent: str
) -> None:
    relative, expected = EXPECTED[agent]
    result: Result = rs("install", "--agent", agent)
    assert result.code == 0, result.err
    path = project / relative
    assert result.out.splitlines()[-1] == f"updated: {path}"
    assert read(path) == expected
    for handler in _handlers(read(path)):
        program = command_target(handler.get("command") or handler["bash"])
        assert program is not None and Path(program).is_absolute()
    written = path.read_bytes()
    again = rs("install", "--agent", agent)
    assert again.out.splitlines()[-1] == f"unchanged: {path}"
    assert path.read_bytes() == written


def _handlers(data: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for entries in data["hooks"].values():
        for entry in entries:
            out += entry.get("hooks", [entry])
    return out


FOREIGN: dict[str, dict[str, Any]] = {
    "codex": {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}},
    "gemini": {
        "theme": "dark",
        "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "lint"}]}]},
    },
    "cursor": {"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}]}},
    "copilot": {"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "./a.sh"}]}},
}


def test_gemini_precompress_is_narrowed_to_manual_compression_on_reinstall(
    rs: Any, project: Path, home: Path
) -> None:
    """Gemini CLI fires PreCompress with `trigger: auto` before every model call, whether
    or not it compresses: an entry an older version wrote for every trigger is narrowed
    to `/compress`; a group that also holds the person's hooks keeps their matcher."""
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir()
    mine = grouped("pre-compact", "gemini", 30000, True, True)
    theirs = {"matcher": "", "hooks": [{"type": "command", "command": "their-hook"}]}
    path.write_text(json.dumps({"hooks": {"PreCompress": [*mine, theirs]}}))
    result = rs("install", "--agent", "gemini")
    assert "narrowed PreCompress hook to matcher 'manual' (was '')" in result.out.splitlines()
    assert read(path)["hooks"]["PreCompress"] == [
        grouped("pre-compact", "gemini", 30000, "manual", True)[0],
        theirs,
    ]
    again = rs("install", "--agent", "gemini")
    assert not any("narrowed" in line for line in again.out.splitlines())
    shared = {"matcher": "", "hooks": [*mine[0]["hooks"], theirs["hooks"][0]]}
    path.write_text(json.dumps({"hooks": {"PreCompress": [shared]}}))
    rs("install", "--agent", "gemini")
    assert read(path)["hooks"]["PreCompress"] == [shared]


@pytest.mark.parametrize("agent", OTHERS)
def test_install_keeps_other_hooks_and_uninstall_removes_only_ours(
    rs: Any, project: Path, home: Path, agent: str
) -> None:
    path = project / EXPECTED[agent][0]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(FOREIGN[agent]), encoding="utf-8")
    assert rs("install", "--agent", agent).code == 0
    data = read(path)
    assert all(any(h == theirs for h in _handlers(data)) for theirs in _handlers(FOREIGN[agent]))
    assert rs("install", "--agent", agent, "--uninstall").code == 0
    assert read(path) == FOREIGN[agent]


def test_uninstall_removes_copilots_own_file_when_it_is_left_empty(
    rs: Any, project: Path, home: Path
) -> None:
    assert rs("install", "--agent", "copilot").code == 0
    result = rs("install", "--agent", "copilot", "--uninstall")
    path = project / ".github" / "hooks" / "ralphstate.json"
    assert result.out.splitlines()[-2:] == [f"removed {path}", f"updated: {path}"]
    assert not path.exists()
    again = rs("install", "--agent", "copilot", "--uninstall")
    assert again.out.splitlines() == ["no ralphstate hooks to remove", f"unchanged: {path}"]


@pytest.mark.parametrize(
    "old",
    [
        '"/old/venv/bin/ralphstate" hook stop --agent cursor',
        '"/old/venv/bin/python" -m ralphstate hook stop --agent cursor',
        '"/old/bin/python" "/old/site/ralphstate/hooks/__main__.py" stop --agent cursor',
        '"/old/bin/python" "/old/site/ralphstate/hooks/__main__.py" stop --agent cursor || exit 1',
        f'"/other/bin/python" -I -c "{HOOK_CODE}" stop --agent cursor',
    ],
)
def test_install_updates_a_moved_command_in_place_and_keeps_a_chosen_limit(
    rs: Any, project: Path, home: Path, old: str
) -> None:
    path = project / ".cursor" / "hooks.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps({"version": 1, "hooks": {"stop": [{"command": old, "loop_limit": 5}]}})
    )
    result = rs("install", "--agent", "cursor")
    assert result.out.splitlines()[0] == (
        f"updated stop hook: {cmd('stop', 'cursor')} (was: {old})"
    )
    assert read(path) == {
        "version": 1,
        "hooks": {"stop": [{"command": cmd("stop", "cursor"), "loop_limit": 5}]},
    }


OLD_SH = '"/old/bin/python" "/old/site/ralphstate/hooks/__main__.py" stop --agent {} || exit 1'
OLD_PS = (
    "& 'C:/Py/python.exe' 'C:/Py/Lib/site-packages/ralphstate/hooks/__main__.py' stop"
    " --agent {}; if ($LASTEXITCODE -ne 0) {{ exit 1 }}"
)
OLD_ENTRIES: dict[str, tuple[str, dict[str, Any]]] = {
    # Gemini CLI on Windows: the PowerShell form alone.
    "gemini": (
        OLD_PS.format("gemini"),
        {
            "hooks": {
                "AfterAgent": [
                    {
                        "hooks": [
                            {
                                "type": "command",
                                "name": "ralphstate-stop",
                                "command": OLD_PS.format("gemini"),
                                "timeout": 180000,
                            }
                        ]
                    }
                ]
            }
        },
    ),
    # Copilot CLI: both forms in one entry.
    "copilot": (
        OLD_SH.format("copilot"),
        {
            "version": 1,
            "hooks": {
                "agentStop": [
                    {
                        "type": "command",
                        "bash": OLD_SH.format("copilot"),
                        "powershell": OLD_PS.format("copilot"),
                        "timeoutSec": 180,
                    }
                ]
            },
        },
    ),
}


@pytest.mark.parametrize("agent", sorted(OLD_ENTRIES))
def test_install_upgrades_the_development_builds_forms_with_their_tails_in_place(
    rs: Any, project: Path, home: Path, agent: str
) -> None:
    """The hook script by its path with `|| exit 1` or PowerShell's
    `if ($LASTEXITCODE ...)` after it: recognised, replaced in place, removed."""
    shown, old = OLD_ENTRIES[agent]
    relative, expected = EXPECTED[agent]
    path = project / relative
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old))
    event = next(iter(old["hooks"]))
    result = rs("install", "--agent", agent)
    assert result.code == 0, result.err
    assert f"updated {event} hook: {cmd('stop', agent)} (was: {shown})" in result.out.splitlines()
    assert read(path) == expected
    path.write_text(json.dumps(old))
    assert rs("install", "--agent", agent, "--uninstall").code == 0
    if agent == "copilot":
        assert not path.exists()  # its own file, left empty
    else:
        assert read(path) == {}


@pytest.mark.parametrize(
    ("agent", "content", "problem"),
    [
        ("codex", "{not json", "is not valid JSON"),
        ("gemini", '{"hooks": {"AfterAgent": {}}}', '"hooks.AfterAgent" in'),
        ("cursor", '{"version": 2, "hooks": {}}', 'has "version": 2, not 1'),
        ("copilot", "[]", "does not hold a JSON object"),
    ],
)
def test_a_file_the_agent_would_not_accept_is_reported_and_left_alone(
    rs: Any, project: Path, home: Path, agent: str, content: str, problem: str
) -> None:
    path = project / EXPECTED[agent][0]
    path.parent.mkdir(parents=True)
    path.write_text(content)
    result = rs("install", "--agent", agent)
    assert result.code == 1
    assert result.err.startswith("ralphstate: ") and problem in result.err
    assert result.err.count("\n") == 1
    assert path.read_text() == content


def test_local_scope_is_claude_codes_only(rs: Any, project: Path, home: Path) -> None:
    result = rs("install", "--agent", "gemini", "--scope", "local")
    assert (result.code, result.err) == (
        1,
        "ralphstate: gemini has no 'local' scope; use --scope project or --scope user.\n",
    )


def test_user_scope_follows_codex_home_and_copilot_home(
    project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert hooks_path("codex", "user", project) == home / ".codex" / "hooks.json"
    assert hooks_path("copilot", "user", project) == home / ".copilot" / "hooks" / (
        "ralphstate.json"
    )
    assert hooks_path("gemini", "user", project) == home / ".gemini" / "settings.json"
    assert hooks_path("cursor", "user", project) == home / ".cursor" / "hooks.json"
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "cp"))
    assert hooks_path("codex", "user", project) == tmp_path / "ch" / "hooks.json"
    assert hooks_path("copilot", "user", project) == tmp_path / "cp" / "hooks" / "ralphstate.json"


def test_doctor_reports_every_configured_agent(rs: Any, project: Path, home: Path) -> None:
    assert rs("install", "--agent", "codex").code == 0
    assert rs("install", "--agent", "copilot", "--scope", "user").code == 0
    result = rs("doctor")
    assert result.code == 0, result.out
    lines = result.out.splitlines()
    assert "note no Claude Code hooks installed (`ralphstate install` adds them)" in lines
    program = command_target(cmd("stop", "codex"))
    codex = project / ".codex" / "hooks.json"
    copilot = home / ".copilot" / "hooks" / "ralphstate.json"
    for event in ("Stop", "SessionStart", "PreCompact"):
        assert f"ok   codex {event} hook in {codex} runs {program}" in lines
    for event in ("agentStop", "sessionStart", "preCompact"):
        assert f"ok   copilot {event} hook in {copilot} runs {program}" in lines
    assert not any("gemini" in line or "cursor" in line for line in lines)


COPILOT_TRUST = (
    "warn Copilot CLI runs the hooks in {path} in `copilot -p` only in a trusted folder"
    " (--trust-folder, a folder trusted in its interactive session, or"
    " GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true); elsewhere it runs without them and the"
    " loop is not enforced. Hooks installed with `--scope user` run in every folder."
)


@pytest.mark.parametrize(
    ("env", "user_scope", "warned"),
    [
        ({}, False, True),
        ({"GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS": "true"}, False, False),
        ({"COPILOT_ALLOW_ALL": "true"}, False, False),
        ({}, True, False),
    ],
)
def test_doctor_says_copilot_runs_project_hooks_in_prompt_mode_only_in_a_trusted_folder(
    rs: Any,
    project: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    user_scope: bool,
    warned: bool,
) -> None:
    for name in ("GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS", "COPILOT_ALLOW_ALL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert rs("install", "--agent", "copilot").code == 0
    if user_scope:
        assert rs("install", "--agent", "copilot", "--scope", "user").code == 0
    lines = rs("doctor").out.splitlines()
    line = COPILOT_TRUST.format(path=project / ".github" / "hooks" / "ralphstate.json")
    assert (line in lines) == warned, lines


def test_doctor_fails_an_agent_hook_whose_program_is_gone(
    rs: Any, project: Path, home: Path
) -> None:
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir()
    gone = '"/nowhere/ralphstate" hook stop --agent gemini'
    path.write_text(json.dumps({"hooks": {"AfterAgent": [{"hooks": [{"command": gone}]}]}}))
    result = rs("doctor")
    assert result.code == 1
    assert (
        f"fail gemini AfterAgent hook in {path} runs /nowhere/ralphstate, which is missing or"
        " not executable; run `ralphstate install --agent gemini` again"
    ) in result.out.splitlines()
