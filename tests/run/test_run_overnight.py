"""`ralphstate run` left alone: what iterations cost, budgets, usage limits, breakers.

The scripted agent (tests/helpers/run_agents.py) prints the real clients' recorded
outputs (tests/fixtures/outputs/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import FIXTURES, run_agents
from tests.run.test_run import history, make_loop, run, state

OUTPUTS = FIXTURES / "outputs"


@pytest.fixture
def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "agent record"
    directory.mkdir()
    for key, value in run_agents.env(directory).items():
        monkeypatch.setenv(key, value)
    return directory


@pytest.fixture
def script(agents: Path, tmp_path: Path) -> Path:
    return run_agents.write(tmp_path / "agents")


def output(name: str) -> bytes:
    return (OUTPUTS / name).read_bytes()


# -- what each iteration cost ------------------------------------------------------------


def test_each_iteration_records_the_cost_and_tokens_the_agent_reported(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs)
    run_agents.replay(agents, output("claude_json_ok.json"))
    agent = run_agents.command(script, "stdin", "progress+replay")
    done = run(project, "--agent", agent, "--json")

    assert done.returncode == 0, done.stderr
    out = orjson.loads(done.stdout)
    assert [(r["tokens"], r["cost"]) for r in out["runs"]] == [(240, 0.0016), (240, 0.0016)]
    assert out["usage"] == {"tokens": 480, "cost": 0.0032}
    assert [(e["tokens"], e["cost"]) for e in history(project, "run_iteration")] == [
        (240, 0.0016),
        (240, 0.0016),
    ]
    lines = done.stderr.decode().splitlines()
    first = next(line for line in lines if line.startswith("[1/20] 1/2 criteria"))
    assert " · 240 tokens · $0.0016 · " in first
    assert lines[-1].endswith("· 480 tokens · $0.0032")
    spent = state(project)["usage"]
    assert (spent["tokens"], spent["cost"]) == (480, 0.0032)
    assert spent["seconds"] > 0
    shown = rs("status")
    assert "spent: 480 tokens · $0.0032 · " in shown.out


def test_an_agent_that_reports_nothing_gets_a_duration_only(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    done = run(project, "--agent", run_agents.command(script, "stdin", "progress"), "--json")
    out = orjson.loads(done.stdout)
    assert [(r["tokens"], r["cost"]) for r in out["runs"]] == [(None, None)]
    assert out["usage"] == {"tokens": None, "cost": None}
    spent = state(project)["usage"]
    assert (spent["tokens"], spent["cost"]) == (0, 0.0)
    assert spent["seconds"] > 0


def test_codex_tokens_are_recorded_without_a_cost(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    run_agents.replay(agents, output("codex_exec_json_ok.jsonl"))
    agent = run_agents.command(script, "stdin", "progress+replay")
    out = orjson.loads(run(project, "--agent", agent, "--json").stdout)
    assert [(r["tokens"], r["cost"]) for r in out["runs"]] == [(15, None)]
    assert out["usage"] == {"tokens": 15, "cost": None}
