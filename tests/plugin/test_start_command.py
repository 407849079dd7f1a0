"""The plugin's `/ralphstate:start` (commands/start.md): the `init` it shows the model
starts, in one command, a loop whose criteria carry their checks, and the steps after
it have the person trust them and see them fail before the work (real processes)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.terminal import at_terminal
from tests.helpers import REPO

START = (REPO / "commands" / "start.md").read_text(encoding="utf-8")
BIN = str(Path(sys.executable).parent)


def example() -> list[str]:
    (line,) = re.findall(r"^ +(ralphstate init .*)$", START, re.MULTILINE)
    return shlex.split(line)


def ralphstate(args: list[str], project: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PATH": BIN + os.pathsep + os.environ["PATH"], **env}
    return subprocess.run(
        [sys.executable, "-m", "ralphstate", *args],
        cwd=project,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_example_init_pairs_each_checked_criterion_with_its_command() -> None:
    args = example()
    assert args[:2] == ["ralphstate", "init"]
    assert args.count("--check") == 2
    assert "criteria check" not in START.split("4. Start the loop", 1)[1].split("If `init`")[0]


def test_the_steps_after_init_trust_the_checks_then_show_them_failing(project: Path) -> None:
    pytest.importorskip("pytest")
    tests = project / "tests"
    tests.mkdir()
    (tests / "test_export.py").write_text("def test_export():\n    assert False\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)

    # The model runs the example from its Bash tool, inside the person's session.
    started = ralphstate(example()[1:], project, CLAUDE_CODE_SESSION_ID="start-session")
    assert started.returncode == 0, started.stderr
    state = json.loads((project / ".loop" / "state.json").read_text(encoding="utf-8"))
    assert state["checks"] == {
        "export tests pass": "python3 -m pytest -q tests/test_export.py",
        "lint is clean": "ruff check .",
    }
    assert "the checks will not run until you review them" in started.stdout
    # Why step 5 trusts them first: an agent's checks do not run before that.
    refused = ralphstate(["verify"], project, CLAUDE_CODE_SESSION_ID="start-session")
    assert refused.returncode == 1 and "not trusted" in refused.stderr
    assert "5. Run `ralphstate trust`" in START

    path = BIN + os.pathsep + os.environ["PATH"]
    trusted = at_terminal(["trust"], cwd=project, env={"PATH": path})  # the person
    assert trusted.code == 0, trusted.screen
    shown = ralphstate(["verify"], project, CLAUDE_CODE_SESSION_ID="start-session")
    assert shown.returncode == 1
    assert "FAIL  export tests pass" in shown.stdout  # a claim now would be sent back
    assert "Then run `ralphstate verify` and show the person what it printed" in START
