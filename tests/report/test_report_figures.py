"""`ralphstate report` and `log` over a history whose figures no iteration can have: a line from
a clone or a hand edit (two durations of 1e308 once made every format fail with an
unexpected error). Each figure past its bound (core/limits.py) reads as not known."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_process


def absurd_iterations(project: Path, loop_id: str) -> None:
    """Two `run_iteration` lines with figures past every bound, one that is fine."""
    lines = []
    for number, duration, cost, tokens in (
        (1, 1e308, 1e308, 2**63),
        (2, 1e308, -5.0, -1),
        (3, 12.5, 0.25, 1200),
    ):
        lines.append(
            {
                "at": f"2026-03-14T10:0{number}:00Z",
                "event": "run_iteration",
                "iteration": number,
                "loop": loop_id,
                "run": number,
                "exit": 0,
                "result": "exit 0",
                "duration": duration,
                "decision": "continue",
                "cost": cost,
                "tokens": tokens,
            }
        )
    with (project / ".loop" / "history.jsonl").open("ab") as history:
        history.write(b"".join(orjson.dumps(line) + b"\n" for line in lines))


@pytest.mark.parametrize("form", ["text", "--markdown", "--html"])
def test_figures_past_their_bounds_read_as_not_known(rs: Any, project: Path, form: str) -> None:
    assert rs("init", "Build the parser", "-c", "tests pass").code == 0
    loop_id = orjson.loads((project / ".loop" / "state.json").read_bytes())["loopId"]
    absurd_iterations(project, loop_id)
    done = run_process(["report", *([form] if form != "text" else [])], cwd=project)

    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    out = done.stdout.decode()
    if form == "text":
        assert "· 3 iterations in 12.5s · 1,200 tokens · cost $0.2500" in out
        rows = [line for line in out.splitlines() if line.startswith("  #")]
        assert rows[:3] == [
            "  #1    run        ? · exit 0 · continue",
            "  #2    run        ? · exit 0 · continue",
            "  #3    run    12.5s · exit 0 · continue · 1,200 tokens · cost $0.2500",
        ]
    elif form == "--markdown":
        assert "| 1 | run | ? | exit 0 | continue |  |  |" in out
        assert "| 3 | run | 12.5s | exit 0 | continue | $0.2500 |  |" in out
    else:
        assert out == "wrote .loop/report.html\n"
        page = (project / ".loop" / "report.html").read_text()
        assert "3 iterations in 12.5s · 1,200 tokens · cost $0.2500" in page
        assert re.search(r"e\+308|\binf\b|Infinity|NaN", page) is None


def test_log_reads_figures_past_their_bounds_as_not_known(rs: Any, project: Path) -> None:
    assert rs("init", "Build the parser", "-c", "tests pass").code == 0
    loop_id = orjson.loads((project / ".loop" / "state.json").read_bytes())["loopId"]
    absurd_iterations(project, loop_id)
    done = run_process(["log", "-n", "3"], cwd=project)

    assert (done.returncode, done.stderr) == (0, b"")
    said = [line.split("run_iteration", 1)[1].strip() for line in done.stdout.decode().splitlines()]
    assert said == [
        "run 1: exit 0 in ?, then continue",
        "run 2: exit 0 in ?, then continue",
        "run 3: exit 0 in 12s, then continue · 1,200 tokens · $0.2500",
    ]
