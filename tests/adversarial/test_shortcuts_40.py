"""Round four, from the agent's side: other spellings of a person-only command, each
through a real `ralphstate hook pre-tool-use` process, and each refused by ralphstate
itself when run by the agent's shell without the person's approval."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphstate.hooks.pre_tool_use import NAMED_ITSELF
from tests.helpers import run_process
from tests.helpers.checks import PASS
from tests.hooks.test_pre_tool_use import (
    ATTENDED,
    bash_call,
    decision,
    hand_edited,
    hook,
    run_bash,
)

# What the shell runs as `ralphstate trust` or `ralphstate review --approve`, spelled
# so that the approving word itself is joined, substituted, or the program reached
# through a wrapper, a runner, a shell's input or another program's arguments.
SPELLINGS = [
    'ralphstate "tr"ust',
    "ralphstate tr''ust",
    "ralphstate tru\\\nst",
    "ralphstate review --ap''prove",
    "ralphstate review --approv\\e",
    "ralphstate $'trust'",
    "ralphstate $'\\x74rust'",
    "python3 -m ralphstate.cli trust",
    "python -m ralphstate.__main__ trust",
    "bash -lc 'ralphstate trust'",
    "sh -ec 'ralphstate trust'",
    "bash <<< 'ralphstate trust'",
    "echo 'ralphstate trust' | sh",
    "printf 'ralphstate trust' | bash -s",
    "echo trust | xargs ralphstate",
    "find . -maxdepth 0 -exec ralphstate trust \\;",
    "find . -maxdepth 0 -exec sh -c 'ralphstate trust' \\;",
    "timeout -s KILL 60 ralphstate trust",
    "setsid ralphstate trust",
    "env -S 'ralphstate trust'",
    "env -u X ralphstate trust",
]


@pytest.fixture
def loop(root: Path) -> Path:
    assert run_process(["init", "Build it", "-c", "a"], cwd=root).returncode == 0
    assert run_process(["criteria", "check", "a", PASS], cwd=root).returncode == 0
    return root


@pytest.mark.parametrize("command", SPELLINGS)
def test_another_spelling_of_a_person_only_command_is_asked(loop: Path, command: str) -> None:
    kind, reason = decision(hook(loop, bash_call(loop, command), ATTENDED)[0])
    assert kind == "ask", reason
    assert "the agent asks" in reason


def test_a_script_the_agent_writes_then_runs_is_refused_by_ralphstate(loop: Path) -> None:
    """A script file cannot be read by the hook (`./approve.sh` names nothing): the
    person-only rule in ralphstate itself refuses what it runs."""
    hand_edited(loop)
    (loop / "approve.sh").write_text("#!/bin/sh\nralphstate trust\n")
    (loop / "approve.sh").chmod(0o755)
    assert hook(loop, bash_call(loop, "./approve.sh"), ATTENDED) == (None, "")
    done = run_bash(loop, "./approve.sh")
    assert done.returncode != 0
    assert "only the person may run it" in done.stderr
    assert "trusted this check" not in done.stdout


@pytest.mark.parametrize(
    "command",
    [
        "RALPHSTATE_APPR''OVAL=1 ralphstate status",
        'export "RALPHSTATE_"APPROVAL=1; ralphstate status',
        "RALPHSTATE_APPR\\OVAL=1 sh x",
    ],
)
def test_the_approval_variable_joined_by_the_shell_is_denied(loop: Path, command: str) -> None:
    kind, reason = decision(hook(loop, bash_call(loop, command), ATTENDED)[0])
    assert kind == "deny" and reason == NAMED_ITSELF
