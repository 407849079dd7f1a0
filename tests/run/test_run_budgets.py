"""Budgets, through real `ralphstate run` processes: a run's own budget (`--max-cost`,
`--max-tokens`, `--max-duration`, or the config file's), measured from what that run
spent and never written into the state, and the loop's budget (`maxCost`, `maxTokens`,
`maxDuration`), set and cleared with `ralphstate config`, measured from the loop's
totals. Each pause says which budget it was."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import FIXTURES, run_agents
from tests.run.test_run import history, make_loop, run, state

CLAUDE_OK = (FIXTURES / "outputs" / "claude_json_ok.json").read_bytes()  # $0.0016, 240 tokens


@pytest.fixture
def paying(agents: Path, tmp_path: Path) -> str:
    """An agent that makes progress and reports $0.0016 and 240 tokens an iteration."""
    run_agents.replay(agents, CLAUDE_OK)
    return run_agents.command(run_agents.write(tmp_path / "agents"), "stdin", "progress+replay")


def result(done: Any) -> dict[str, Any]:
    out: dict[str, Any] = orjson.loads(done.stdout)
    return out


def test_a_runs_budget_is_its_own_and_never_the_loops(rs: Any, project: Path, paying: str) -> None:
    make_loop(rs, criteria=("a", "b", "c", "d", "e", "f"))
    first = run(project, "--agent", paying, "--max-cost", "0.003", "--json")
    assert first.returncode == 3, first.stderr
    out = result(first)
    assert (out["reason"], out["iterations"]) == ("budget", 2)
    assert out["detail"] == "cost $0.0032 of this run's $0.0030"
    assert "This run's budget is spent" in first.stderr.decode()
    assert state(project)["maxCost"] is None
    assert history(project, "run_started")[-1]["budget"] == {"cost": 0.003}
    # The next run has a budget of its own, counted from what it spends itself.
    second = run(project, "--agent", paying, "--max-cost", "0.003", "--json")
    out = result(second)
    assert (out["reason"], out["iterations"]) == ("budget", 2)
    assert out["detail"] == "cost $0.0032 of this run's $0.0030"
    summary = second.stderr.decode().splitlines()[-2]
    assert summary.endswith("· 480 tokens · $0.0032 · sandbox: unconfined"), summary
    # A run without one has none: it is not held by an earlier run's.
    assert rs("resume").code == 0
    third = run(project, "--agent", paying, "--json")
    assert (result(third)["outcome"], result(third)["iterations"]) == ("complete", 2)
    assert state(project)["usage"]["cost"] == pytest.approx(0.0096)


def test_a_runs_duration_budget_goes_with_the_run(rs: Any, project: Path, agents: Path) -> None:
    make_loop(rs, criteria=("a", "b", "c"))
    agent = run_agents.command(run_agents.write(agents.parent / "agents"), "stdin", "progress+slow")
    out = result(run(project, "--agent", agent, "--max-duration", "0.1s", "--json"))
    assert (out["reason"], out["iterations"]) == ("budget", 1)
    assert out["detail"].startswith("duration ") and " of this run's 0.1s" in out["detail"]
    assert state(project)["maxDuration"] is None
    out = result(run(project, "--agent", agent, "--max", "1", "--json"))
    assert (out["reason"], out["iterations"]) == ("run_max", 1)


def test_the_loops_budget_is_set_and_cleared_with_config(
    rs: Any, project: Path, paying: str
) -> None:
    make_loop(rs, criteria=("a", "b", "c", "d"))
    assert rs("config", "max-cost", "0.003").out == "max-cost: $0.003\n"
    assert state(project)["maxCost"] == 0.003
    done = run(project, "--agent", paying, "--json")
    assert done.returncode == 3, done.stderr
    out = result(done)
    assert (out["reason"], out["iterations"]) == ("budget", 2)
    assert out["detail"] == "cost $0.0032 of the loop's $0.0030"
    hint = done.stderr.decode().splitlines()[-1]
    assert hint == (
        "The loop's budget is spent (`ralphstate status` shows what it has spent): raise or"
        " clear it with `ralphstate config max-cost USD|none` (or max-tokens, max-duration),"
        " then run `ralphstate run` again."
    )
    assert "(the loop's budget: $0.0030)" in rs("status").out
    # It holds for every run until it is changed.
    assert result(run(project, "--agent", paying, "--json"))["iterations"] == 0
    assert rs("config", "max-cost", "none").out == "max-cost: none\n"
    assert state(project)["maxCost"] is None
    changes = [(e["key"], e["value"], e["from"]) for e in history(project, "config")]
    assert changes == [("maxCost", 0.003, None), ("maxCost", None, 0.003)]
    assert result(run(project, "--agent", paying, "--json"))["outcome"] == "complete"


def test_budget_settings_take_their_units_and_refuse_the_rest(rs: Any, project: Path) -> None:
    make_loop(rs)
    assert rs("config", "max-duration", "8h").out == "max-duration: 8h\n"
    assert state(project)["maxDuration"] == 28800
    assert rs("config", "max-duration", "1h30m").out == "max-duration: 1h30m\n"
    assert rs("config", "max-tokens", "5000000").out == "max-tokens: 5000000\n"
    assert state(project)["maxTokens"] == 5000000
    listed = rs("config").out.splitlines()
    at = listed.index("max-cost: none")
    assert listed[at : at + 3] == ["max-cost: none", "max-tokens: 5000000", "max-duration: 1h30m"]
    for key, value, said in [
        ("max-cost", "0", "max-cost must be US dollars above 0, or none, not '0'."),
        ("max-cost", "nan", "max-cost must be US dollars above 0, or none, not 'nan'."),
        (
            "max-duration",
            "soon",
            "max-duration must be a duration such as 8h, 90m or 1h30m, or none, not 'soon'.",
        ),
        (
            "max-tokens",
            "0",
            (
                "max-tokens must be a whole number from 1 to 1,000,000,000,000,000, or none,"
                " not '0'."
            ),
        ),
    ]:
        refused = rs("config", key, value)
        assert (refused.code, refused.err) == (1, f"ralphstate: {said}\n")
    assert state(project)["maxTokens"] == 5000000


def test_claude_gets_the_smallest_remainder_and_nothing_without_a_budget(
    rs: Any, project: Path, tmp_path: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("a",))
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "open(os.path.join(os.environ['FAKE_AGENT_DIR'], 'claude-argv.txt'), 'w')"
        ".write(' '.join(sys.argv[1:]))\n"
    )
    claude.chmod(0o755)

    def passed(*args: str) -> str:
        run(project, "--agent", f"{claude} -p", "--max", "1", *args)
        return (agents / "claude-argv.txt").read_text()

    assert passed("--max-cost", "2.5") == "-p --max-budget-usd 2.50"
    assert passed() == "-p"  # the earlier run's budget went with it
    assert rs("config", "max-cost", "1.2").code == 0
    assert passed("--max-cost", "2.5") == "-p --max-budget-usd 1.20"
    assert passed() == "-p --max-budget-usd 1.20"
    assert rs("config", "max-cost", "5").code == 0
    assert passed("--max-cost", "0.5") == "-p --max-budget-usd 0.50"
