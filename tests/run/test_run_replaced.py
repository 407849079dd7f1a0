"""A loop replaced while `ralphstate run` drives it, through real processes: `init`
(with or without --force) is refused while the run holds the loop, and a run whose
loop was replaced all the same (another loop's state file put in its place) writes
nothing of its iteration, spending or ending into the new loop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from ralphstate.run import spawn
from tests.helpers import run_process

REFUSED = (
    "ralphstate: a `ralphstate run` is driving this loop; stop it (Ctrl-C in its terminal)"
    " before you start another.\n"
)
# Tries `init --force` and a plain `init` over the loop the run drives, then (when a
# file is given) puts another loop's state file in its place.
AGENT = r"""
import json, shutil, subprocess, sys
from pathlib import Path

sys.stdin.read()
tried = []
for args in (["init", "--force", "A new loop", "-c", "z"], ["init", "Another", "-c", "y"]):
    command = [sys.executable, "-m", "ralphstate", *args]
    done = subprocess.run(command, capture_output=True, text=True)
    tried.append([done.returncode, done.stderr])
Path(sys.argv[1]).write_text(json.dumps(tried))
if len(sys.argv) > 2:
    shutil.copy(sys.argv[2], ".loop/state.json")
"""


def rs(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_process(list(args), cwd=root, timeout=120)


def state(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((root / ".loop" / "state.json").read_bytes())
    return data


def agent(tmp_path: Path, *args: Path) -> str:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    return spawn.join_command([sys.executable, str(script), *map(str, args)])


def test_init_is_refused_while_a_run_drives_the_loop(project: Path, tmp_path: Path) -> None:
    assert rs(project, "init", "Build the parser", "-c", "tests pass").returncode == 0
    loop_id = state(project)["loopId"]
    tried = tmp_path / "tried.json"

    done = rs(project, "run", "--agent", agent(tmp_path, tried), "--max", "1")

    assert done.returncode == 3, done.stderr
    assert json.loads(tried.read_text()) == [[1, REFUSED], [1, REFUSED]]
    after = state(project)
    assert (after["loopId"], after["spec"], after["iteration"]) == (loop_id, "Build the parser", 1)
    assert not list((project / ".loop").glob("state.json.*.bak"))
    # Once the run has ended, init --force replaces the loop as before.
    assert rs(project, "init", "--force", "A new loop", "-c", "z").returncode == 0


def test_a_run_whose_loop_was_replaced_writes_nothing_into_the_new_one(
    project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert rs(other, "init", "Another project's loop", "-c", "b").returncode == 0
    replacement = (other / ".loop" / "state.json").read_bytes()
    assert rs(project, "init", "Build the parser", "-c", "tests pass").returncode == 0
    old_id = state(project)["loopId"]
    new_id = orjson.loads(replacement)["loopId"]

    command = agent(tmp_path, tmp_path / "tried.json", other / ".loop" / "state.json")
    done = rs(project, "run", "--agent", command, "--json")

    assert done.returncode == 5, done.stderr  # ended_outside
    out = orjson.loads(done.stdout)
    assert (out["outcome"], out["reason"]) == ("ended_outside", "replaced")
    assert out["detail"] == (
        f"the loop this run drove ({old_id[:8]}…) was replaced during the run by loop"
        f" {new_id[:8]}…; nothing of the run was written into it"
    )
    # The new loop is exactly as it was put there: no iteration, spending or pause.
    assert (project / ".loop" / "state.json").read_bytes() == replacement
    lines = (project / ".loop" / "history.jsonl").read_bytes().splitlines()
    assert [e["event"] for e in map(orjson.loads, lines) if e.get("loop") == new_id] == []
