"""Red before green under `ralphstate run`: a check that passes before it ever failed
never completes the run's loop, whatever the scripted agent does; once it has failed, a
pass completes it as before."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core import redgreen
from ralphstate.run import spawn
from tests.helpers import run_agents

BUILT_CHECK = (
    "import os, sys; ok = os.path.exists('built.txt');"
    " print('built' if ok else 'not built'); sys.exit(0 if ok else 1)"
)


def test_a_run_never_completes_on_a_check_that_never_failed(
    rs: Any, project: Path, script: Path
) -> None:
    (project / "built.txt").write_text("built before the loop")  # green from the start
    assert rs("init", "Build it", "-c", "built", "--expect-fail").code == 0
    check = spawn.join_command([sys.executable, "-c", BUILT_CHECK])
    assert rs("criteria", "check", "built", check).code == 0
    agent = run_agents.command(script, "stdin", "build")
    done = rs("run", "--agent", agent, "--max", "2", "--json")
    assert done.code == 3, done
    assert orjson.loads(done.out)["outcome"] == "paused"
    assert f'check "built": failing ({redgreen.HELD}' in done.err
    data = orjson.loads((project / ".loop" / "state.json").read_bytes())
    assert data["criteriaStatus"] == {"built": False}
    (project / "built.txt").unlink()
    assert rs("verify").code == 1  # red, before the work
    again = rs("run", "--agent", agent, "--max", "1", "--json")
    assert again.code == 0, again
    assert orjson.loads(again.out)["outcome"] == "complete"
