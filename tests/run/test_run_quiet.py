"""What a `ralphstate run` puts on the terminal, through real processes: an agent's
JSON report is one line there (the iteration's log keeps it whole), and a duration
budget stops the iteration that runs it out instead of waiting for its end."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import agentoutput
from tests.helpers import FIXTURES, run_agents
from tests.run.test_run import history, make_loop, plain, run, state

OUTPUTS = FIXTURES / "outputs"


def replayed(agents: Path, script: Path, name: str) -> str:
    run_agents.replay(agents, (OUTPUTS / name).read_bytes())
    return run_agents.command(script, "stdin", "progress+replay")


@pytest.mark.parametrize(
    ("name", "summary"),
    [
        (
            "claude_json_ok.json",
            (
                "  the agent's JSON output (1 object, 1.6 KB) is in .loop/runs/0001.log;"
                ' it said "All done."'
            ),
        ),
        (
            "codex_exec_json_ok.jsonl",
            (
                "  the agent's JSON output (5 objects, 542 bytes) is in .loop/runs/0001.log;"
                ' it said "All done."'
            ),
        ),
        (
            "gemini_json_ok.json",
            (
                "  the agent's JSON output (1 object, 1.6 KB) is in .loop/runs/0001.log;"
                ' it said "All done."'
            ),
        ),
    ],
)
def test_an_agents_json_report_is_one_line_on_the_terminal(
    name: str, summary: str, rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    done = run(project, "--agent", replayed(agents, script, name), "--max", "1")
    assert done.returncode == 0, done.stderr
    shown = done.stdout.decode()
    assert "{" not in shown, shown  # none of the JSON
    lines = plain(shown)
    assert lines[1:3] == ["agent 1: progress+replay", "tests pass: met"]
    assert summary in lines
    # What is not JSON (the clients' warnings on stderr) still comes through.
    text = (OUTPUTS / name).read_text()
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith(("{", "}", '"', "[", "]")):
            if line.startswith((" ", "\t")):
                continue
            assert line in lines
    log = (project / ".loop" / "runs" / "0001.log").read_bytes()
    assert log.endswith((OUTPUTS / name).read_bytes())  # the log keeps every byte
    assert state(project)["usage"]["tokens"] > 0  # and the run still reads it


def test_an_agent_that_prints_no_json_is_shown_as_it_came(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    run_agents.replay(agents, b"{not json} but a line\nplain text\n")
    agent = run_agents.command(script, "stdin", "progress+replay")
    done = run(project, "--agent", agent, "--max", "1")
    lines = plain(done.stdout)
    assert lines[3:5] == ["{not json} but a line", "plain text"]
    assert not [line for line in lines if "JSON output" in line]


def chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("size", [1, 7, 4096])
def test_quiet_holds_back_whole_objects_however_the_output_is_cut(size: int) -> None:
    data = (
        b"warning: no colours\n"
        b'{"type": "item.completed", "item": {"type": "agent_message", "text": "Hi."}}\n'
        b"{\n"
        b'  "response": "Done \\u001b[31mred",\n'
        b'  "stats": {}\n'
        b"}\n"
        b"{ unfinished"
    )
    shown: list[bytes] = []
    quiet = agentoutput.Quiet(shown.append, "runs/0001.log")
    for piece in chunks(data, size):
        quiet(piece)
    quiet.close()
    assert b"".join(shown).decode() == (
        "warning: no colours\n"
        "{ unfinished\n"
        "  the agent's JSON output (2 objects, 131 bytes) is in runs/0001.log;"
        ' it said "Done red"\n'
    )


def test_a_duration_budget_stops_the_iteration_that_runs_it_out(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    hang = run_agents.command(script, "stdin", "hang")
    started = time.monotonic()

    done = run(project, "--agent", hang, "--max-duration", "1s", "--json", timeout=30)

    took = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    assert took < 15  # the agent would hang until the test's timeout
    out = orjson.loads(done.stdout)
    assert (out["reason"], out["iterations"]) == ("budget", 1)
    assert re.fullmatch(
        r"duration 1(\.\d)?s of this run's 1s; iteration 1 was stopped when it ran out",
        out["detail"],
    ), out["detail"]
    [finished] = history(project, "run_finished")
    assert finished["detail"] == out["detail"]
    assert "  the duration budget ran out, so the agent was stopped" in plain(done.stderr)
    assert run_agents.signals(agents) == ["SIGINT"]  # stopped in order, as a timeout is
    assert state(project)["errors"] == []  # not the agent's failure
