"""`ralphstate run` checks before every iteration that the agent's hook files still run
ralphstate's hooks as they did when the run started (run/hookwatch.py): an iteration's
agent that removes them from Claude Code's settings or sets `disableAllHooks` stops the
run before the next one, with one sentence, and the loop pauses saying why. Real
`ralphstate install`, `init` and `run` processes, the agent a Python script."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import orjson
import pytest

from tests.helpers import run_process

AGENT = """
import json, sys
from pathlib import Path
sys.stdin.read()
how = sys.argv[1]
local = Path(".claude/settings.local.json")
settings = json.loads(local.read_text())
if how == "disable":
    settings["disableAllHooks"] = True
elif how == "remove":
    del settings["hooks"]
if how != "nothing":
    local.write_text(json.dumps(settings))
count = Path("iterations.txt")
count.write_text(str(int(count.read_text()) + 1 if count.exists() else 1))
print("agent ran", how)
"""


@pytest.fixture
def project(root: Path) -> Path:
    (root / "agent.py").write_text(AGENT)
    for args in (["install"], ["init", "Build it", "-c", "a", "-s", "write it"]):
        done = run_process(args, cwd=root)
        assert done.returncode == 0, done.stderr
    return root


def run(project: Path, how: str) -> tuple[str, dict[str, object]]:
    agent = f"{shlex.quote(sys.executable)} agent.py {how}"
    done = run_process(["run", "--agent", agent, "--max", "3"], cwd=project, timeout=120)
    said = (done.stdout + done.stderr).decode()
    state = orjson.loads((project / ".loop" / "state.json").read_bytes())
    return said, state


@pytest.mark.parametrize(
    ("how", "what"),
    [("disable", "sets `disableAllHooks`"), ("remove", "no longer runs ralphstate's hooks")],
)
def test_an_agent_that_switches_the_hooks_off_stops_the_run_before_the_next(
    project: Path, how: str, what: str
) -> None:
    said, state = run(project, how)
    assert (project / "iterations.txt").read_text() == "1", said
    local = project / ".claude" / "settings.local.json"
    assert f"{local} {what}" in said and "not by ralphstate" in said, said
    assert state["status"] == "paused"
    assert str(state["pauseReason"]).startswith("ralphstate run stopped:"), state


def test_hooks_left_as_they_were_let_the_run_go_on(project: Path) -> None:
    said, _ = run(project, "nothing")
    assert (project / "iterations.txt").read_text() == "3", said
    assert "ralphstate's hooks" not in said
    assert json.loads((project / ".claude" / "settings.local.json").read_text())["hooks"]
