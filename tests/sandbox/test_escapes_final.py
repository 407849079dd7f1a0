"""Shortcuts out of `ralphstate run`'s default bubblewrap sandbox, tried as a
goal-seeking agent would from inside it, each with the real `run` and a scripted agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ralphstate.run.spawn import join_command
from tests.adversarial.scripted import Person
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap

# The agent moves the project's `.git` aside and puts a repository of its own in its
# place, whose configuration runs a program at the person's next `git status`.
REPLACE_GIT = r"""
import json, os, subprocess, sys
from pathlib import Path

sys.stdin.read()
said = {}
try:
    os.rename(".git", ".git-aside")
    said["moved"] = "done"
except OSError as exc:
    said["moved"] = f"refused: {exc.strerror}"
if said["moved"] == "done":
    subprocess.run(["git", "init", "-q"], check=True)
    with open(".git/config", "a") as handle:
        handle.write("[core]\n\tfsmonitor = touch ran-outside; echo\n")
print(json.dumps(said), flush=True)
"""


def test_the_agent_cannot_move_git_aside_for_a_repository_of_its_own(
    calc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPHSTATE_RUN_SANDBOX")  # the default: confined
    script = tmp_path / "agent" / "replace git.py"
    script.parent.mkdir()
    script.write_text(REPLACE_GIT, encoding="utf-8")
    config = (calc / ".git" / "config").read_bytes()
    command = join_command([sys.executable, str(script)])
    done = Person(calc).rs("run", "--agent", command, "--max", "1", ok=False)
    assert "sandbox: bubblewrap" in done.stdout + done.stderr, done.stderr
    log = (calc / ".loop" / "runs" / "0001.log").read_text()
    said = [json.loads(line) for line in log.splitlines() if line.startswith('{"moved"')]
    assert said and said[0]["moved"].startswith("refused"), log
    assert not (calc / ".git-aside").exists()
    assert (calc / ".git" / "HEAD").is_file()
    assert (calc / ".git" / "config").read_bytes() == config


# The agent writes `.git/commondir`, pointing git at a directory of its own whose
# configuration runs a program at the person's next `git status`.
WRITE_COMMONDIR = r"""
import shutil, sys
from pathlib import Path

sys.stdin.read()
evil = Path(".loop/elsewhere")
shutil.copytree(".git", evil, ignore=shutil.ignore_patterns("config", "hooks", "info"))
(evil / "config").write_text(
    "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch ran-outside; echo\n"
)
Path(".git/commondir").write_text("../.loop/elsewhere\n")
print('{"commondir": "written"}', flush=True)
"""


def test_a_commondir_the_agent_writes_is_moved_aside_before_the_person_s_git(
    calc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPHSTATE_RUN_SANDBOX")  # the default: confined
    script = tmp_path / "agent" / "write commondir.py"
    script.parent.mkdir()
    script.write_text(WRITE_COMMONDIR, encoding="utf-8")
    command = join_command([sys.executable, str(script)])
    done = Person(calc).rs("run", "--agent", command, "--max", "1", ok=False)
    out = done.stdout + done.stderr
    assert "sandbox: bubblewrap" in out, out
    assert '{"commondir": "written"}' in (calc / ".loop" / "runs" / "0001.log").read_text()
    assert "commondir.agent-" in out, out
    assert not (calc / ".git" / "commondir").exists()
    assert list((calc / ".git").glob("commondir.agent-*")), "the agent's file is kept aside"
    # The person's own git, after the run, runs nothing of the agent's.
    subprocess.run(["git", "status", "--short"], cwd=calc, capture_output=True, check=False)
    assert not (calc / "ran-outside").exists()


# The agent turns the run's log directory into a link to a directory outside the
# project (hidden from it, but there on the host): the runner, unconfined, would write
# the next iteration's log, the agent's own output, there.
LINK_RUNS = r"""
import os, shutil, sys
from pathlib import Path

sys.stdin.read()
runs = Path(".loop/runs")
if not runs.is_symlink():
    shutil.rmtree(runs)
    os.symlink(sys.argv[1], runs)
print("export PLANTED=1  # written by the agent", flush=True)
"""


def test_the_runs_directory_made_a_link_out_of_the_project_is_never_written_through(
    calc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPHSTATE_RUN_SANDBOX")  # the default: confined
    outside = tmp_path / "the person's bashrc.d"
    outside.mkdir()
    script = tmp_path / "agent" / "link runs.py"
    script.parent.mkdir()
    script.write_text(LINK_RUNS, encoding="utf-8")
    command = join_command([sys.executable, str(script), str(outside)])
    done = Person(calc).rs("run", "--agent", command, "--max", "2", ok=False)
    out = done.stdout + done.stderr
    assert "sandbox: bubblewrap" in out, out
    assert list(outside.iterdir()) == [], out
    assert "writes no log through it" in out, out
    assert "Traceback" not in out
