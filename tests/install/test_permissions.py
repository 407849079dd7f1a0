"""The `permissions.allow` rules `ralphstate install` writes for the agent's own
commands, and `ralphstate uninstall`, as real processes: added once, never for a
command only the person runs, removed exactly (a rule the person wrote stays), and the
same from `uninstall` as from `install --uninstall`. The client's side, `claude -p`
running them without a prompt, is tests/e2e/test_permissions_e2e.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest

from ralphstate.install.permissions import AGENT_COMMANDS, PERSON_COMMANDS, RULES
from ralphstate.run import prompt
from tests.helpers import REPO, run_process
from tests.helpers.loops import parser_state

NEVER = ("trust", "review", "cancel", "install", "uninstall", "adopt", "config")


def ralphstate(project: Path, *args: str) -> str:
    done = run_process(list(args), cwd=project)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def settings(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((project / ".claude" / "settings.local.json").read_text())
    return data


def test_install_allows_the_agent_s_commands_once(project: Path, home: Path) -> None:
    said = ralphstate(project, "install")
    assert (
        "allowed the agent's own ralphstate commands without a prompt (permissions.allow:"
        " status, show, log, verify, criteria list, criteria set, criteria add, criteria"
        " check, step add, step done, step undo, pause); trust, review, cancel and install"
        " still ask"
    ) in said.splitlines()
    assert settings(project)["permissions"] == {"allow": list(RULES)}
    assert RULES[0] == "Bash(ralphstate status:*)"
    again = ralphstate(project, "install")
    assert "the agent's ralphstate commands are allowed already (permissions.allow)" in again
    assert "unchanged:" in again.splitlines()[-1]


def test_uninstall_removes_exactly_what_install_added(project: Path, home: Path) -> None:
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir()
    mine: dict[str, Any] = {
        "model": "opus",
        "permissions": {
            "allow": ["Bash(npm test:*)", "Bash(ralphstate verify:*)"],
            "deny": ["Read(./.env)"],
        },
    }
    path.write_text(json.dumps(mine))
    ralphstate(project, "install")
    allow = settings(project)["permissions"]["allow"]
    assert allow[:2] == mine["permissions"]["allow"]  # theirs first, and not twice
    assert sorted(allow) == sorted({*mine["permissions"]["allow"], *RULES})
    said = ralphstate(project, "uninstall")
    assert "removed the permissions.allow rules install added: status, show, log" in said
    assert settings(project) == mine


def test_an_object_install_made_goes_with_its_rules(project: Path, home: Path) -> None:
    ralphstate(project, "install", "--allow-only")
    assert settings(project) == {"permissions": {"allow": list(RULES)}}  # no hooks
    ralphstate(project, "uninstall", "--allow-only")
    assert settings(project) == {}


def test_no_allow_writes_the_hooks_alone_and_keeps_the_rules_on_uninstall(
    project: Path, home: Path
) -> None:
    ralphstate(project, "install", "--no-allow")
    assert "permissions" not in settings(project) and "Stop" in settings(project)["hooks"]
    ralphstate(project, "install")
    ralphstate(project, "uninstall", "--no-allow")
    assert settings(project) == {"permissions": {"allow": list(RULES)}}
    ralphstate(project, "uninstall")
    assert settings(project) == {}


@pytest.mark.parametrize(
    "options", [[], ["--tasks"], ["--scope", "project"], ["--statusline"], ["--agent", "codex"]]
)
def test_uninstall_is_install_uninstall(
    tmp_path: Path, home: Path, options: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results = []
    for n, how in enumerate((["uninstall"], ["install", "--uninstall"])):
        project = tmp_path / f"project {n}"
        project.mkdir()
        user = home / ".claude" / "settings.json"
        user.parent.mkdir(exist_ok=True)
        user.write_text(json.dumps({"model": "opus"}))
        before = ralphstate(project, "install", *options)
        after = ralphstate(project, *how, *options)
        files = sorted(p for p in [*project.rglob("*.json"), user] if p.is_file())
        shown = after.replace(str(project), "PROJECT")
        results.append(([p.read_text() for p in files], shown, before != after))
    assert results[0] == results[1]
    assert "removed" in results[0][1]


def test_a_mistyped_uninstall_is_offered_uninstall(project: Path) -> None:
    done = run_process(["uninstal"], cwd=project)
    assert done.returncode == 1
    assert "'uninstall'" in done.stderr.decode()


def test_the_plugin_s_command_writes_the_rules_alone() -> None:
    text = (REPO / "commands" / "allow.md").read_text()
    assert "disable-model-invocation: true" in text  # the person asks for it, not the model
    assert "```!\nralphstate install --allow-only\n```" in text


def test_the_plugin_s_sandbox_command_is_the_persons() -> None:
    text = (REPO / "commands" / "sandbox.md").read_text()
    assert "disable-model-invocation: true" in text
    assert "```!\nralphstate install --sandbox\n```" in text
    assert "`/ralphstate:sandbox`" in (REPO / "commands" / "start.md").read_text()


# -- which commands -------------------------------------------------------------------


def every_command() -> list[str]:
    from ralphstate.cli.app import cli

    cli.load_all()

    def walk(command: click.Command, path: list[str]) -> list[str]:
        if isinstance(command, click.Group):
            return [p for name, sub in command.commands.items() for p in walk(sub, [*path, name])]
        return [" ".join(path)]

    return walk(cli, [])


def test_every_command_is_the_agent_s_or_no_rule_s() -> None:
    assert sorted([*AGENT_COMMANDS, *PERSON_COMMANDS]) == sorted(every_command())
    assert set(NEVER) <= set(PERSON_COMMANDS)


@pytest.mark.parametrize("command", PERSON_COMMANDS)
def test_no_rule_lets_a_command_only_the_person_runs_through(command: str) -> None:
    """Claude Code's prefix rule `Bash(ralphstate X:*)` matches `ralphstate X` and
    `ralphstate X ...`, word for word."""
    for rule in RULES:
        prefix = rule[len("Bash(") : -len(":*)")]
        typed = f"ralphstate {command} --reason x"
        assert not (typed == prefix or typed.startswith(prefix + " ")), (rule, command)


def told(text: str) -> set[str]:
    """The ralphstate commands a text tells its reader to run, as commands of the CLI."""
    known = every_command()
    found = set()
    for words in re.findall(r"ralphstate ((?:[a-z]+)(?: [a-z]+)?)", text):
        first = words.split()[0]
        found.add(words if words in known else first)
    return {f for f in found if f in known}


def test_what_the_agent_is_told_to_run_is_allowed() -> None:
    skill = (REPO / "skills" / "ralphstate" / "SKILL.md").read_text()
    recording = skill.split("## Recording progress", 1)[1].split("## The marker rule", 1)[0]
    assert told(recording) == {"step done", "step add", "verify", "criteria set"}
    for checks in ({"tests pass": "true"}, {}):
        state = parser_state(checks=checks)
        run_prompt = prompt.assemble(state, iteration=1, limit=5)
        assert told(run_prompt) <= set(AGENT_COMMANDS) | {"run"}, run_prompt
    assert told(run_prompt) >= {"step done", "criteria set", "status", "pause"}
    assert told(skill) - set(AGENT_COMMANDS) == {"resume"}  # the person's, it says
