"""`ralphstate run` left alone: what iterations cost, budgets, usage limits, breakers.

The scripted agent (tests/helpers/run_agents.py) prints the real clients' recorded
outputs (tests/fixtures/outputs/)."""

from __future__ import annotations

import datetime as dt
import re
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import spawn
from tests.helpers import FIXTURES, run_agents
from tests.run.test_run import history, make_loop, run, state

OUTPUTS = FIXTURES / "outputs"


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
    # the tests run their agents unconfined (tests/conftest.py), and the summary says so
    assert lines[-1].endswith("· 480 tokens · $0.0032 · sandbox: unconfined")
    spent = state(project)["usage"]
    assert (spent["tokens"], spent["cost"]) == (480, 0.0032)
    assert spent["seconds"] > 0
    shown = rs("status")
    assert "spent: 480 tokens · $0.0032 · " in shown.out
    watched = rs("watch", "--once")  # the total, and each iteration's in the recent history
    assert "spent: 480 tokens · $0.0032 · " in watched.out
    lines = [line for line in watched.out.splitlines() if " run_iteration " in line]
    assert len(lines) == 2 and all("· 240 tokens · $0.0016 ·" in line for line in lines)


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


# -- budgets -------------------------------------------------------------------------------


def test_a_cost_budget_pauses_the_loop_and_says_which(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("a", "b", "c", "d"))
    run_agents.replay(agents, output("claude_json_ok.json"))  # $0.0016 an iteration
    agent = run_agents.command(script, "stdin", "progress+replay")
    done = run(project, "--agent", agent, "--max-cost", "0.003", "--json")

    assert done.returncode == 3, done.stderr
    out = orjson.loads(done.stdout)
    assert (out["outcome"], out["reason"], out["iterations"]) == ("paused", "budget", 2)
    assert out["detail"] == "cost $0.0032 of this run's $0.0030"
    assert [r["decision"] for r in out["runs"]] == ["continue", "budget"]
    final = state(project)
    assert (final["status"], final["pauseReason"], final["maxCost"]) == ("paused", "budget", None)
    assert history(project, "run_started")[0]["budget"] == {"cost": 0.003}
    finished = history(project, "run_finished")[0]
    assert (finished["reason"], finished["detail"]) == (
        "budget",
        "cost $0.0032 of this run's $0.0030",
    )
    assert "budget reached" not in done.stderr.decode()
    assert "This run's budget is spent" in done.stderr.decode()

    more = run(project, "--agent", agent, "--max-cost", "0.01", "--json")
    assert orjson.loads(more.stdout)["outcome"] == "complete"
    assert state(project)["maxCost"] is None


def test_a_token_budget(rs: Any, project: Path, script: Path, agents: Path) -> None:
    make_loop(rs, criteria=("a", "b", "c"))
    run_agents.replay(agents, output("codex_exec_json_ok.jsonl"))  # 15 tokens an iteration
    agent = run_agents.command(script, "stdin", "progress+replay")
    out = orjson.loads(run(project, "--agent", agent, "--max-tokens", "15", "--json").stdout)
    assert (out["reason"], out["iterations"], out["detail"]) == (
        "budget",
        1,
        "tokens 15 of this run's 15",
    )


def test_a_duration_budget_from_the_config(rs: Any, project: Path, script: Path) -> None:
    make_loop(rs, criteria=("a", "b", "c"))
    (project / ".loop" / "config.toml").write_text('[run]\nmax-duration = "0.001s"\n')
    agent = run_agents.command(script, "stdin", "progress")
    out = orjson.loads(run(project, "--agent", agent, "--json").stdout)
    assert (out["reason"], out["iterations"]) == ("budget", 1)
    assert out["detail"].startswith("duration ")


def test_claude_in_print_mode_gets_the_rest_of_the_cost_budget(
    rs: Any, project: Path, tmp_path: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("a",))
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "open(os.path.join(os.environ['FAKE_AGENT_DIR'], 'claude-argv.txt'), 'w')"
        ".write('\\n'.join(sys.argv[1:]))\n"
    )
    claude.chmod(0o755)
    run(project, "--agent", f"{claude} -p", "--max-cost", "2.5", "--max", "1")
    assert (agents / "claude-argv.txt").read_text().splitlines() == [
        "-p",
        "--max-budget-usd",
        "2.50",
    ]
    run(project, "--agent", f"{claude} -p --max-budget-usd 1", "--max-cost", "2.5", "--max", "1")
    assert (agents / "claude-argv.txt").read_text().split() == ["-p", "--max-budget-usd", "1"]


def test_the_dry_run_shows_the_budget_flag_the_run_adds(rs: Any, project: Path) -> None:
    make_loop(rs, criteria=("a",))
    shown = run(project, "--agent", "claude -p", "--max-cost", "2.5", "--dry-run", "--json")
    preview = orjson.loads(shown.stdout)
    assert preview["command"] == ["claude", "-p", "--max-budget-usd", "2.50"]
    assert preview["commandLine"] == "claude -p --max-budget-usd 2.50"
    # Without --max-cost the loop's own budget, less what it has spent, as the run does.
    assert state(project)["maxCost"] is None  # a dry run changes nothing
    plain = orjson.loads(run(project, "--agent", "claude -p", "--dry-run", "--json").stdout)
    assert plain["command"] == ["claude", "-p"]
    # Both budgets: the smaller remainder, as the first iteration gets it (1.20, not 2.50).
    assert rs("config", "max-cost", "1.2").code == 0
    both = run(project, "--agent", "claude -p", "--max-cost", "2.5", "--dry-run", "--json")
    assert orjson.loads(both.stdout)["command"] == ["claude", "-p", "--max-budget-usd", "1.20"]
    assert orjson.loads(run(project, "--agent", "claude -p", "--dry-run", "--json").stdout)[
        "command"
    ] == ["claude", "-p", "--max-budget-usd", "1.20"]


def test_budget_options_and_keys_are_checked(rs: Any, project: Path) -> None:
    make_loop(rs)
    bad = rs("run", "--agent", "x", "--max-duration", "soon")
    assert bad.code == 1 and "is not a duration such as 8h" in bad.err
    (project / ".loop" / "config.toml").write_text("[run]\nmax-cost = -1\n")
    bad = rs("run", "--agent", "x")
    assert bad.code == 1
    assert "'max-cost' must be US dollars above 0, not -1." in bad.err


# -- usage and rate limits -----------------------------------------------------------------


class FakeClock:
    """The clock seam: `clock.now` moves only when `clock.sleep` is called."""

    def __init__(self, start: dt.datetime) -> None:
        self.at = start
        self.slept: list[float] = []

    def now(self) -> dt.datetime:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.at += dt.timedelta(seconds=seconds)


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    from ralphstate.core import clock

    fake = FakeClock(dt.datetime(2026, 12, 31, 22, 0, tzinfo=dt.timezone.utc))
    monkeypatch.setattr(clock, "now", fake.now)
    monkeypatch.setattr(clock, "sleep", fake.sleep)
    return fake


def test_a_usage_limit_is_waited_out_and_the_same_iteration_retried(
    rs: Any, project: Path, script: Path, agents: Path, fake_clock: FakeClock
) -> None:
    make_loop(rs, criteria=("tests pass",))
    limit = output("codex_exec_json_usage_limit.jsonl")  # try again at Jan 1st, 2027 10:00 AM
    run_agents.replay(agents, limit, exit_code=1, n=1)
    agent = run_agents.command(script, "stdin", "progress+replay")
    agent_limited = run_agents.command(script, "stdin", "replay")
    # The first process hits the limit (it only replays), the second makes progress.
    done = rs("run", "--agent", agent_limited, "--agent", agent, "--on-limit", "wait", "--json")
    assert done.code == 0, done
    out = orjson.loads(done.out)
    assert out["iterations"] == 2
    assert [(r["iteration"], r["decision"]) for r in out["runs"]] == [(1, "retry"), (1, "complete")]


def test_waiting_until_the_reset_uses_the_clock_and_counts_no_iteration(
    rs: Any, project: Path, script: Path, agents: Path, fake_clock: FakeClock
) -> None:
    make_loop(rs, "--stall-limit", "1", criteria=("tests pass",))
    limit = output("codex_exec_json_usage_limit.jsonl")
    run_agents.replay(agents, limit, exit_code=1, n=1)
    run_agents.replay(agents, limit, exit_code=1, n=2)
    agent = run_agents.command(script, "stdin", "replay+progress")
    done = rs("run", "--agent", agent, "--max", "1", "--json")

    assert done.code == 0, done
    out = orjson.loads(done.out)
    assert [(r["iteration"], r["decision"]) for r in out["runs"]] == [
        (1, "retry"),
        (1, "retry"),
        (1, "complete"),
    ]
    reset = dt.datetime(2027, 1, 1, 10, 0).astimezone(dt.timezone.utc)
    assert fake_clock.at >= reset + dt.timedelta(seconds=30)
    # Until the reset and 30 s more; the second limit, past its reset, waits 30 s.
    start = dt.datetime(2026, 12, 31, 22, 0, tzinfo=dt.timezone.utc)
    assert sum(fake_clock.slept) == (reset - start).total_seconds() + 30 + 30
    assert max(fake_clock.slept) <= 900
    lines = done.err.splitlines()
    waits = [line for line in lines if "usage limit: waiting until" in line]
    assert waits and "left); Ctrl-C pauses" in waits[0]
    final = state(project)
    assert (final["status"], final["iteration"]) == ("complete", 1)
    limits_seen = history(project, "limit")
    assert [e["kind"] for e in limits_seen] == ["usage_limit", "usage_limit"]
    assert limits_seen[0]["resetsAt"] == reset.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert "hit your usage limit" in final["errors"][0]["message"]
    logs = sorted(p.name for p in (project / ".loop" / "runs").glob("*.log"))
    assert logs == ["0001.2.log", "0001.3.log", "0001.log"]


def test_an_overload_backs_off_then_retries(
    rs: Any, project: Path, script: Path, agents: Path, fake_clock: FakeClock
) -> None:
    make_loop(rs, criteria=("tests pass",))
    run_agents.replay(agents, output("claude_json_529.json"), exit_code=1, n=1)
    run_agents.replay(agents, output("claude_json_429.json"), exit_code=1, n=2)
    agent = run_agents.command(script, "stdin", "replay+progress")
    done = rs("run", "--agent", agent, "--json")
    assert done.code == 0, done
    assert sum(fake_clock.slept) == 60 + 120
    seen = history(project, "limit")
    assert [(e["kind"], e["wait"]) for e in seen] == [("overloaded", 60), ("rate_limit", 120)]
    prompts = run_agents.prompts(agents)
    assert (
        "The previous iteration failed:\nIteration 1 stopped on an overloaded API: " in (prompts[1])
    )
    assert "Iteration 1 stopped on a rate limit: " in prompts[2]
    assert state(project)["errors"][0]["message"].startswith("agent hit an overloaded API: ")


def test_gemini_and_codex_recorded_limits_are_waited_out(
    rs: Any, project: Path, script: Path, agents: Path, fake_clock: FakeClock
) -> None:
    """Gemini CLI's per-minute quota (exit 173: it exits with the HTTP status) says when
    to retry; Codex's overloaded stream does not, so the run backs off."""
    make_loop(rs, criteria=("tests pass",))
    run_agents.replay(agents, output("gemini_json_quota.json"), exit_code=173, n=1)
    run_agents.replay(agents, output("codex_exec_json_overloaded.jsonl"), exit_code=1, n=2)
    agent = run_agents.command(script, "stdin", "replay+progress")
    done = rs("run", "--agent", agent, "--json")
    assert done.code == 0, done
    out = orjson.loads(done.out)
    assert [r["decision"] for r in out["runs"]] == ["retry", "retry", "complete"]
    seen = history(project, "limit")
    assert [e["kind"] for e in seen] == ["rate_limit", "overloaded"]
    assert [e["wait"] for e in seen] == [69, 120]  # whole seconds in history
    assert sum(fake_clock.slept) == pytest.approx(39.033478657 + 30 + 120, abs=0.001)


def test_a_gemini_daily_quota_moves_to_the_next_agent_at_once(
    rs: Any, project: Path, script: Path, agents: Path, fake_clock: FakeClock
) -> None:
    make_loop(rs, criteria=("tests pass",))
    run_agents.replay(agents, output("gemini_json_daily_quota.json"), exit_code=173, n=1)
    limited = run_agents.command(script, "stdin", "replay")
    agent = run_agents.command(script, "stdin", "progress")
    done = rs("run", "--agent", limited, "--agent", agent, "--json")
    assert done.code == 0, done
    assert fake_clock.slept == []
    [seen] = history(project, "limit")
    assert (seen["kind"], seen.get("resetsAt")) == ("usage_limit", None)
    assert history(project, "agent_switched")[0]["agent"] == agent


def test_on_limit_pause_and_a_billing_problem_pause_at_once(
    rs: Any, project: Path, script: Path, agents: Path, fake_clock: FakeClock
) -> None:
    make_loop(rs, criteria=("tests pass",))
    run_agents.replay(agents, output("claude_json_429.json"), exit_code=1)
    agent = run_agents.command(script, "stdin", "replay")
    done = rs("run", "--agent", agent, "--on-limit", "pause", "--json")
    assert done.code == 3
    out = orjson.loads(done.out)
    assert (out["reason"], [r["decision"] for r in out["runs"]]) == ("limit", ["limit"])
    assert out["detail"].startswith("rate limit: ")
    assert fake_clock.slept == []
    final = state(project)
    assert (final["pauseReason"], final["iteration"]) == ("limit", 0)

    run_agents.replay(agents, output("claude_json_credit.json"), exit_code=1)
    done = rs("run", "--agent", agent, "--json")
    out = orjson.loads(done.out)
    assert (done.code, out["reason"]) == (3, "limit")
    assert out["detail"].startswith("billing: ")
    assert fake_clock.slept == []


def test_a_wait_that_would_pass_the_duration_budget_pauses_at_once(
    rs: Any, project: Path, script: Path, agents: Path, tmp_path: Path, fake_clock: FakeClock
) -> None:
    """The reset is twelve hours away, the budget one hour: the loop pauses on the budget
    without waiting, and the notifier hears one event, not a wait that never happens."""
    make_loop(rs, criteria=("tests pass",))
    command, seen = notifier(tmp_path)
    run_agents.replay(agents, output("codex_exec_json_usage_limit.jsonl"), exit_code=1)
    agent = run_agents.command(script, "stdin", "replay")
    done = rs("run", "--agent", agent, "--max-duration", "1h", "--notify", command, "--json")
    assert done.code == 3, done
    out = orjson.loads(done.out)
    assert (out["reason"], out["detail"]) == (
        "budget",
        "waiting out a usage limit would pass this run's duration budget",
    )
    assert fake_clock.slept == []
    assert [e["event"] for e in events(seen)] == ["budget"]
    final = state(project)
    assert (final["pauseReason"], final["iteration"]) == ("budget", 0)


def test_a_reset_more_than_a_day_away_pauses_instead_of_waiting(
    rs: Any, project: Path, script: Path, agents: Path, fake_clock: FakeClock
) -> None:
    make_loop(rs, criteria=("tests pass",))
    later = int((fake_clock.at + dt.timedelta(days=3)).timestamp())
    run_agents.replay(agents, f"Claude AI usage limit reached|{later}\n".encode(), exit_code=1)
    done = rs("run", "--agent", run_agents.command(script, "stdin", "replay"), "--json")
    assert done.code == 3, done
    out = orjson.loads(done.out)
    assert (out["reason"], [r["decision"] for r in out["runs"]]) == ("limit", ["limit"])
    assert fake_clock.slept == []
    [seen] = history(project, "limit")
    assert seen["resetsAt"] == (fake_clock.at + dt.timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_after_eight_waits_in_a_row_the_loop_pauses(
    rs: Any, project: Path, script: Path, agents: Path, fake_clock: FakeClock
) -> None:
    make_loop(rs, criteria=("tests pass",))
    run_agents.replay(agents, output("gemini_json_503.json"), exit_code=247)
    done = rs("run", "--agent", run_agents.command(script, "stdin", "replay"), "--json")
    assert done.code == 3, done
    out = orjson.loads(done.out)
    assert [r["decision"] for r in out["runs"]] == ["retry"] * 8 + ["limit"]
    assert out["reason"] == "limit"
    waits = [e["wait"] for e in history(project, "limit")]
    assert waits == [60, 120, 240, 480, 960, 1800, 1800, 1800, None]
    assert sum(fake_clock.slept) == sum(waits[:-1])
    final = state(project)
    assert (final["pauseReason"], final["iteration"]) == ("limit", 0)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a process")
def test_ctrl_c_during_a_wait_pauses_the_loop(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    import signal
    import subprocess

    make_loop(rs, criteria=("tests pass",))
    run_agents.replay(agents, output("claude_json_529.json"), exit_code=1)
    agent = run_agents.command(script, "stdin", "replay")
    runner = subprocess.Popen(
        [sys.executable, "-m", "ralphstate", "run", "--agent", agent],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert runner.stdout is not None
    seen = b""
    for line in runner.stdout:  # the first wait is a minute: Ctrl-C comes during it
        seen += line
        if b"overloaded: waiting until" in line:
            runner.send_signal(signal.SIGINT)
            break
    rest, _ = runner.communicate(timeout=60)
    assert runner.returncode == 3, seen + rest
    final = state(project)
    assert (final["status"], final["pauseReason"], final["iteration"]) == ("paused", "user", 0)
    assert history(project, "run_finished")[0]["reason"] == "user"


# -- breakers ------------------------------------------------------------------------------


def test_consecutive_crashes_pause_the_loop_with_the_errors(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs)
    done = run(project, "--agent", run_agents.command(script, "stdin", "crash"), "--json")
    assert done.returncode == 3
    out = orjson.loads(done.stdout)
    assert (out["reason"], out["iterations"]) == ("agent_errors", 3)
    assert out["detail"] == 'exit 7: "boom"'  # the agent's last line, said once
    final = state(project)
    assert final["pauseReason"] == "agent_errors"
    assert [e["message"] for e in final["errors"]] == ['agent exit 7: "boom"'] * 3


def test_timeouts_count_toward_the_failures_breaker(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs)  # stallLimit 5: the breaker's 3 come first
    hang = run_agents.command(script, "stdin", "hang")
    done = run(project, "--agent", hang, "--timeout", "0.3", "--json")
    assert done.returncode == 3, done.stderr
    out = orjson.loads(done.stdout)
    assert (out["reason"], out["iterations"]) == ("agent_errors", 3)
    assert [r["timedOut"] for r in out["runs"]] == [True] * 3
    assert state(project)["pauseReason"] == "agent_errors"


def test_a_crash_moves_to_the_next_agent_of_the_chain(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("a", "b", "c"))
    (project / ".loop" / "config.toml").write_text(
        "[run]\nagent-errors = 2\nagent = "
        + repr([run_agents.command(script, "stdin", "crash")])
        + "\n"
    )
    crash = run_agents.command(script, "stdin", "crash")
    good = run_agents.command(script, "stdin", "progress")
    done = run(project, "--agent", crash, "--agent", good, "--json")
    assert done.returncode == 0, done.stderr
    out = orjson.loads(done.stdout)
    assert [r["result"] for r in out["runs"]] == ["exit 7", "exit 7", "exit 0", "exit 0", "exit 0"]
    assert history(project, "agent_switched")[0]["agent"] == good
    assert "switching to the next agent" in done.stderr.decode()


def test_a_step_that_stays_next_pauses_the_loop_naming_it(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs, criteria=("a", "b", "c", "d"))
    (project / ".loop" / "config.toml").write_text("[run]\nstep-retries = 3\n")
    done = run(project, "--agent", run_agents.command(script, "stdin", "progress"), "--json")
    assert done.returncode == 3
    out = orjson.loads(done.stdout)
    assert (out["reason"], out["iterations"]) == ("step_retries", 3)
    assert out["detail"] == '"write it" stayed next for 3 iterations'
    assert state(project)["pauseReason"] == "step_retries"


# -- what the next iteration learns --------------------------------------------------------


def test_the_previous_failure_and_the_lessons_go_into_the_next_prompt(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs)
    (project / ".loop" / "lessons.md").write_text("- the tests need `make fixtures` first\n")
    crash = run_agents.command(script, "stdin", "crash")
    good = run_agents.command(script, "stdin", "progress")
    (project / ".loop" / "config.toml").write_text("[run]\nagent-errors = 1\n")
    run(project, "--agent", crash, "--agent", good)
    first, second = run_agents.prompts(agents)[:2]
    assert "The previous iteration failed" not in first
    assert "The previous iteration failed:\nIteration 1 ended with exit 7" in second
    for text in (first, second):
        assert (
            '<lessons path=".loop/lessons.md">\n- the tests need `make fixtures` first\n</lessons>'
            in text
        )
        assert 'ralphstate pause --blocked "what you need"' in text


def test_lessons_are_bounded_to_their_newest_end(tmp_path: Path) -> None:
    from ralphstate.core import limits
    from ralphstate.storage.loopdir import lessons

    (tmp_path / "lessons.md").write_text("old\n" + "x" * 100_000 + "\nnewest lesson\n")
    text = lessons.read(tmp_path)
    assert text is not None and len(text) <= limits.LESSONS_CHARS + 40
    assert text.startswith("[… earlier lessons left out]\n")
    assert text.endswith("newest lesson\n")
    assert lessons.read(tmp_path / "missing") is None


def test_an_agent_blocked_on_a_person_ends_the_run_with_exit_4(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs)
    blocked = rs("pause", "--blocked", "needs  the staging\npassword")
    assert blocked.code == 0
    assert state(project)["pauseReason"] == "blocked: needs the staging password"
    rs("resume")
    done = run(project, "--agent", run_agents.command(script, "stdin", "block"), "--json")
    assert done.returncode == 4, done.stderr
    out = orjson.loads(done.stdout)
    assert (out["reason"], out["detail"]) == ("blocked", "agent needs a key")
    assert "Blocked on a person" in done.stderr.decode()


def test_an_agent_that_prints_nothing_for_idle_timeout_is_stopped(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, "--stall-limit", "1")
    hang = run_agents.command(script, "stdin", "hang")
    done = run(project, "--agent", hang, "--idle-timeout", "0.5", "--json")
    assert done.returncode == 3, done.stderr
    out = orjson.loads(done.stdout)
    assert [(r["timedOut"], r["decision"]) for r in out["runs"]] == [(True, "stall")]
    [iteration] = history(project, "run_iteration")
    assert (iteration["idle"], iteration["stops"][0]) == (True, "interrupt")
    assert "printed nothing for 0.5s" in done.stderr.decode()
    assert run_agents.signals(agents) == ["SIGINT"]


# -- notifications -------------------------------------------------------------------------

NOTIFIER = (
    "import json, os, sys\n"
    "event = json.loads(sys.stdin.read())\n"
    "event['env'] = [os.environ['RALPHSTATE_EVENT'], os.environ['RALPHSTATE_SUMMARY']]\n"
    "with open(sys.argv[1], 'a') as out:\n"
    "    out.write(json.dumps(event) + '\\n')\n"
)


def notifier(tmp_path: Path, body: str = NOTIFIER) -> tuple[str, Path]:
    script = tmp_path / "notifier.py"
    script.write_text(body)
    seen = tmp_path / "events.jsonl"
    return spawn.join_command([sys.executable, str(script), str(seen)]), seen


def events(seen: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in seen.read_bytes().splitlines()]


def test_the_notifier_hears_the_completion_with_the_event_on_stdin(
    rs: Any, project: Path, script: Path, tmp_path: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    command, seen = notifier(tmp_path)
    done = run(
        project, "--agent", run_agents.command(script, "stdin", "progress"), "--notify", command
    )
    assert done.returncode == 0, done.stderr
    [event] = events(seen)
    assert (event["event"], event["outcome"], event["iterations"]) == ("complete", "complete", 1)
    assert event["criteria"] == {"met": 1, "total": 1}
    assert event["spec"] == "Build the parser"
    assert event["summary"].startswith("complete · 1/1 criterion (1 claimed) · 0/1 step")
    assert event["env"] == ["complete", event["summary"]]


def test_a_budget_pause_is_a_budget_event_from_the_config(
    rs: Any, project: Path, script: Path, agents: Path, tmp_path: Path
) -> None:
    make_loop(rs, criteria=("a", "b"))
    command, seen = notifier(tmp_path)
    (project / ".loop" / "config.toml").write_text(f"[run]\nnotify = {command!r}\n")
    assert rs("trust").code == 0  # a notifier a configuration file names is reviewed first
    run_agents.replay(agents, output("claude_json_ok.json"))
    agent = run_agents.command(script, "stdin", "progress+replay")
    assert run(project, "--agent", agent, "--max-cost", "0.001").returncode == 3
    [event] = events(seen)
    assert (event["event"], event["reason"], event["detail"]) == (
        "budget",
        "budget",
        "cost $0.0016 of this run's $0.0010",
    )


def test_a_failing_or_hanging_notifier_never_stops_the_loop(
    rs: Any, project: Path, script: Path, tmp_path: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    failing = spawn.join_command([sys.executable, "-c", "import sys; sys.exit(3)"])
    agent = run_agents.command(script, "stdin", "progress")
    done = run(project, "--agent", agent, "--notify", failing, "--json")
    assert (done.returncode, orjson.loads(done.stdout)["outcome"]) == (0, "complete")
    assert "notify: " in done.stderr.decode() and "exited with 3." in done.stderr.decode()

    from ralphstate.run import notifier

    said: list[str] = []
    hang = spawn.join_command([sys.executable, "-c", "import time; time.sleep(60)"])
    started = time.monotonic()
    assert not notifier.send(hang, {"event": "pause"}, "x", said.append, str(tmp_path), 0.5)
    assert time.monotonic() - started < 30
    assert said and said[0].endswith("took longer than 0.5s and was stopped.")
    assert not notifier.send("no-such-notifier-program", {}, "x", said.append, str(tmp_path))
    assert "could not start 'no-such-notifier-program'" in said[-1]


@pytest.mark.parametrize(
    ("behaviour", "reason", "detail"),
    [("pause", "agent asked", None), ("block", "blocked", "agent needs a key")],
)
def test_an_agent_that_pauses_the_loop_is_a_pause_event(
    behaviour: str,
    reason: str,
    detail: str | None,
    rs: Any,
    project: Path,
    script: Path,
    tmp_path: Path,
) -> None:
    """`ralphstate pause --reason` (or `--blocked`) run by the agent inside the run."""
    make_loop(rs)
    command, seen = notifier(tmp_path)
    agent = run_agents.command(script, "stdin", behaviour)
    done = run(project, "--agent", agent, "--notify", command)
    assert done.returncode in (3, 4), done.stderr
    [event] = events(seen)
    assert (event["event"], event["outcome"], event["reason"]) == ("pause", "paused", reason)
    assert event.get("detail") == detail
    assert event["env"][0] == "pause"


def test_a_limit_wait_is_a_limit_event_and_the_failures_breaker_an_error_event(
    rs: Any, project: Path, script: Path, agents: Path, tmp_path: Path, fake_clock: FakeClock
) -> None:
    make_loop(rs, criteria=("tests pass",))
    command, seen = notifier(tmp_path)
    run_agents.replay(agents, output("codex_exec_json_usage_limit.jsonl"), exit_code=1, n=1)
    agent = run_agents.command(script, "stdin", "replay+progress")
    assert rs("run", "--agent", agent, "--notify", command).code == 0
    limit, complete = events(seen)
    assert (limit["event"], limit["limit"]) == ("limit", "usage_limit")
    assert limit["resetsAt"] == dt.datetime(2027, 1, 1, 10, 0).astimezone(dt.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert "hit your usage limit" in limit["message"]
    assert limit["env"] == ["limit", " ".join(limit["summary"].split())]
    assert complete["event"] == "complete"

    make_loop(rs, criteria=("tests pass",))  # a new loop in the same project
    seen.unlink()
    crash = run_agents.command(script, "stdin", "crash")
    assert rs("run", "--agent", crash, "--notify", command).code == 3
    [error] = events(seen)
    assert (error["event"], error["reason"], error["detail"]) == (
        "error",
        "agent_errors",
        'exit 7: "boom"',
    )


RECIPE = re.compile(r'^notify = "(.*)"$', re.MULTILINE)
FAKE_PROGRAM = """\
import json, os, sys
with open(os.environ["FAKE_NOTIFIER_RECORD"], "a") as out:
    out.write(json.dumps({"argv": [os.path.basename(sys.argv[0]), *sys.argv[1:]],
                          "stdin": sys.stdin.read()}) + "\\n")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="the recipes run sh")
def test_the_documented_notify_recipes_get_the_summary_and_the_event(
    rs: Any, project: Path, script: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/how-to/overnight.md's recipes, as written, with notify-send, terminal-notifier and curl
    replaced by programs that record what they were given."""
    import os

    docs = (Path(__file__).resolve().parents[2] / "docs" / "how-to" / "overnight.md").read_text(
        "utf-8"
    )
    recipes = [bytes(r, "utf-8").decode("unicode_escape") for r in RECIPE.findall(docs)]
    assert [r.split()[0] for r in recipes] == ["sh", "sh", "curl"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("notify-send", "terminal-notifier", "curl"):
        (bin_dir / name).write_text(f"#!{sys.executable}\n" + FAKE_PROGRAM)
        (bin_dir / name).chmod(0o755)
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NOTIFIER_RECORD", str(record))
    agent = run_agents.command(script, "stdin", "progress")
    for recipe in recipes:
        make_loop(rs, criteria=("tests pass",))
        done = run(project, "--agent", agent, "--notify", recipe)
        assert done.returncode == 0, done.stderr
        assert "notify:" not in done.stderr.decode()
    desktop, mac, phone = [orjson.loads(line) for line in record.read_bytes().splitlines()]
    said = "complete · 1/1 criterion (1 claimed) · 0/1 step · 1 iteration · "
    assert desktop["argv"][:2] == ["notify-send", "ralphstate"]
    assert desktop["argv"][2].startswith(said) and len(desktop["argv"]) == 3
    assert mac["argv"][:4] == ["terminal-notifier", "-title", "ralphstate", "-message"]
    assert mac["argv"][4].startswith(said) and len(mac["argv"]) == 5
    assert phone["argv"] == [
        "curl",
        "-s",
        "-m",
        "8",
        "-H",
        "Title: ralphstate",
        "--data-binary",
        "@-",
        "https://ntfy.sh/YOUR-TOPIC",
    ]
    event = orjson.loads(phone["stdin"])
    assert (event["event"], event["outcome"]) == ("complete", "complete")
    assert event["summary"].startswith(said)
    assert {"at", "project", "spec", "iteration", "iterations", "criteria", "usage"} <= set(event)


# -- keeping the machine awake -------------------------------------------------------------

FAKE_INHIBIT = """\
import os, sys
with open(os.environ["FAKE_INHIBIT_RECORD"], "a") as out:
    out.write(" ".join([str(os.getpid()), *sys.argv[1:]]) + "\\n")
rest = sys.argv[sys.argv.index("--mode=block") + 1 :]
os.execv(rest[0], rest)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd-inhibit is Linux's")
@pytest.mark.parametrize("on", [True, False])
def test_systemd_inhibit_keeps_the_machine_awake_for_the_run_unless_turned_off(
    on: bool, rs: Any, project: Path, script: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import shutil

    if shutil.which("tail") is None:
        pytest.skip("no tail")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "systemd-inhibit"
    fake.write_text(f"#!{sys.executable}\n" + FAKE_INHIBIT)
    fake.chmod(0o755)
    record = tmp_path / "inhibit.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_INHIBIT_RECORD", str(record))
    make_loop(rs, criteria=("tests pass",))
    if not on:
        (project / ".loop" / "config.toml").write_text("[run]\nkeep-awake = false\n")
    done = run(project, "--agent", run_agents.command(script, "stdin", "progress"))
    assert done.returncode == 0, done.stderr
    if not on:
        assert not record.exists()
        return
    [line] = record.read_text().splitlines()
    pid, *argv = line.split()
    assert argv[:2] == ["--what=sleep:idle", "--who=ralphstate"]
    assert argv[-3].startswith("--pid=")
    assert not run_agents.alive(int(pid)) or _zombie(int(pid))


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True
