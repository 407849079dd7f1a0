"""`ralphstate run` on a loop whose steps are a markdown task file's boxes: the file is
re-read before and after every iteration, so a box the agent checked is a step done."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import orjson

from ralphstate.run import spawn

TICKER = """
import pathlib
path = pathlib.Path("TASKS.md")
path.write_bytes(path.read_bytes().replace(b"[ ]", b"[x]", 1))  # in place, as agents edit
"""


def test_a_box_the_agent_checks_is_a_step_done(rs: Any, project: Path, tmp_path: Path) -> None:
    (project / "TASKS.md").write_bytes(b"- [ ] a\n- [ ] b\n- [ ] c\n")
    assert rs("init", "x", "-c", "never met", "--task", "TASKS.md", "--stall-limit", "1").code == 0
    agent = tmp_path / "ticker.py"
    agent.write_text(TICKER, encoding="utf-8")
    done = rs("run", "--agent", spawn.join_command([sys.executable, str(agent)]), "--max", "2")
    assert done.code == 3, done
    started = [
        line for line in done.out.splitlines() if re.search(r"this run: \d of \d · next", line)
    ]
    assert [line.split("next step: ")[1] for line in started] == ["a", "b"]
    final = orjson.loads((project / ".loop" / "state.json").read_bytes())
    assert final["completedSteps"] == ["a", "b"]
    assert (final["status"], final["pauseReason"]) == ("paused", "run_max")
    assert (project / "TASKS.md").read_bytes() == b"- [x] a\n- [x] b\n- [ ] c\n"
