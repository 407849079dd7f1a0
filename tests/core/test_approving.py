"""Which shell commands approve (core/approving.py), and the command the person is asked
about, run by a real shell."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ralphstate.core.approving import APPROVAL_ENV, approving, names_approval, with_approval
from ralphstate.hooks.entry import may_approve

APPROVING = [
    ("ralphstate trust", "trust"),
    ("cd sub && ralphstate trust", "trust"),
    ("ralphstate status; ralphstate trust 2>&1 | tail -5", "trust"),
    ("python3 -m ralphstate trust; echo ok", "trust"),
    ("/usr/bin/python3.12 -I -m ralphstate trust", "trust"),
    ("python -mralphstate trust", "trust"),
    ('"C:\\Py\\python.exe" -m ralphstate trust', "trust"),
    ('"C:\\Tools\\RalphState.EXE" trust', "trust"),
    ("/home/me/.venv/bin/ralphstate trust", "trust"),
    ("X=1 Y='a b' ralphstate   trust # read them first", "trust"),
    ("env -i PATH=/bin ralphstate trust", "trust"),
    ("sudo -E timeout 60 nice ralphstate trust", "trust"),
    ("uv run ralphstate trust", "trust"),
    ("uvx ralphstate trust", "trust"),
    ("pipx run ralphstate trust", "trust"),
    ("bash -c 'cd sub && ralphstate trust'", "trust"),
    ('eval "ralphstate trust"', "trust"),
    ("echo $(ralphstate trust)", "trust"),
    ("echo `ralphstate trust`", "trust"),
    ("(cd x; ralphstate trust)", "trust"),
    ("if true; then ralphstate trust; fi", "trust"),
    ("ls\nralphstate trust", "trust"),
    ("ralphstate review --approve", "review --approve"),
    ("ralphstate review --revert", "review --revert"),
    ("ralphstate review --approve=yes", "review --approve"),
    ('echo "unclosed ralphstate trust', "unclear"),  # does not parse: the person is asked
]
NOT_APPROVING = [
    "pytest -q",
    "ralphstate status",
    "ralphstate verify",
    "ralphstate review",
    "ralphstate criteria check x 'ralphstate trust'",
    'echo "ralphstate trust"',
    'git commit -m "docs: ralphstate trust, explained"',
    "grep -r 'ralphstate trust' docs",
    "python script.py -m ralphstate trust",
    "python -m pytest tests/ralphstate trust",
    "ls ralphstate",
    "command -v ralphstate",
    "cat trust.txt > ralphstate.log",
]


@pytest.mark.parametrize(("command", "expected"), APPROVING)
def test_a_command_that_runs_an_approval_is_found(command: str, expected: str) -> None:
    assert approving(command) == expected


@pytest.mark.parametrize(("command", "expected"), APPROVING)
def test_the_hook_entry_lets_no_approval_go_unread(command: str, expected: str) -> None:
    """The entry lets a Bash call go before parsing it unless its bytes hold the words
    every approval holds (hooks/entry.py): none of these is let go."""
    call = {"tool_name": "Bash", "tool_input": {"command": command}}
    assert may_approve(orjson.dumps({"cwd": "/x", **call}))
    assert may_approve(orjson.dumps({**call, "cwd": "/x"}))


def test_the_hook_entry_does_not_count_the_project_s_path() -> None:
    call = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert not may_approve(orjson.dumps({"cwd": "/src/ralphstate/trust", **call}))
    assert not may_approve(orjson.dumps({"tool_input": {"command": "ralphstate status"}}))


@pytest.mark.parametrize("command", NOT_APPROVING)
def test_a_command_that_runs_none_is_not(command: str) -> None:
    assert approving(command) is None


def test_naming_the_approval_variable_is_seen_in_any_case() -> None:
    assert may_approve(orjson.dumps({"tool_input": {"command": f"{APPROVAL_ENV}=1 sh x"}}))
    assert names_approval(f"{APPROVAL_ENV}=abc ralphstate trust")
    assert names_approval("export ralphstate_approval=abc")
    assert names_approval("sh -c 'echo $RALPHSTATE_APPROVAL'")
    assert not names_approval("ralphstate trust")


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
@pytest.mark.parametrize(
    "command",
    [
        "cd sub && {show}",
        "{show} # a trailing comment",
        "cd sub; {show}",
        "cat <<'EOF'\nheredoc\nEOF\n{show}",
    ],
)
def test_the_approved_command_sees_the_token_in_every_part_and_leaves_it_behind(
    command: str, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    show = f"{sys.executable} -c \"import os; print(os.environ.get('{APPROVAL_ENV}'))\""
    script = with_approval(command.format(show=show), "0123abcd") + f"\n{show}"
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    # Inside the subshell the approved command sees it; the next command does not.
    assert done.stdout.splitlines()[-2:] == ["0123abcd", "None"]
