"""`ralphstate run` never crashes and leaves the loop in progress, through real
processes: a reset time past any date, a prompt `--prompt-mode arg` cannot pass, an
agent's absurd figures, and an error nobody foresaw. Whatever ends a run is recorded
(`run_finished`) and pauses the loop with its reason (SECURITY.md, promise 20)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import limits
from ralphstate.core.render import clip
from ralphstate.run import spawn
from tests.helpers import FIXTURES, run_agents
from tests.run.test_run import history, make_loop, run, state

CLAUDE_OK: dict[str, Any] = orjson.loads(
    (FIXTURES / "outputs" / "claude_json_ok.json").read_bytes()
)


def ended_paused(project: Path, reason: str) -> dict[str, Any]:
    """The loop is paused for `reason`, and the run's ending is in history."""
    final = state(project)
    assert (final["status"], final["pauseReason"]) == ("paused", reason)
    finished = history(project, "run_finished")
    assert len(finished) == 1
    return finished[0]


# -- reset times ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Error: rate limit reached. Please try again in 3000000 days.",
        "429 Too Many Requests: retry after 99999999999999999999 hours",
    ],
)
def test_a_reset_past_any_date_pauses_the_loop_as_a_far_reset(
    said: str, rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    run_agents.replay(agents, f"{said}\n".encode(), exit_code=1)
    done = run(project, "--agent", run_agents.command(script, "stdin", "replay"), "--json")

    assert done.returncode == 3, done.stderr
    assert b"unexpected error" not in done.stderr
    out = orjson.loads(done.stdout)
    assert (out["outcome"], out["reason"]) == ("paused", "limit")
    assert [r["decision"] for r in out["runs"]] == ["limit"]
    finished = ended_paused(project, "limit")
    assert (finished["outcome"], finished["reason"]) == ("paused", "limit")
    [limit] = history(project, "limit")
    assert limit["wait"] is None  # a reset more than a day away is not waited for
    assert state(project)["iteration"] == 0  # the limited iteration counts toward no cap


# -- text an argument cannot hold ----------------------------------------------------------


def arg_agent(script: Path) -> str:
    return run_agents.command(script, "arg", "progress")


def test_prompt_mode_arg_refuses_a_utf16_context_file_before_the_first_iteration(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs)
    (project / "notes.txt").write_bytes("read me first".encode("utf-16"))
    before = (project / ".loop" / "state.json").read_bytes()
    done = run(
        project, "--agent", arg_agent(script), "--prompt-mode", "arg", "--context", "notes.txt"
    )

    assert done.returncode == 1
    assert done.stderr.decode() == (
        "ralphstate: --prompt-mode arg cannot pass the prompt as an argument: the context file"
        " notes.txt holds a NUL character (is it UTF-16?); save it as UTF-8, or use"
        " --prompt-mode stdin or file.\n"
    )
    assert (project / ".loop" / "state.json").read_bytes() == before
    assert history(project, "run_started", "iteration_started") == []
    assert run_agents.prompts(agents) == []


def test_prompt_mode_arg_refuses_a_nul_in_the_spec_and_a_prompt_too_long(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs)
    path = project / ".loop" / "state.json"
    data = orjson.loads(path.read_bytes())
    data["spec"] = "Build the\x00parser"
    path.write_bytes(orjson.dumps(data))
    done = run(project, "--agent", arg_agent(script), "--prompt-mode", "arg")
    assert done.returncode == 1
    assert done.stderr.decode() == (
        "ralphstate: --prompt-mode arg cannot pass the prompt as an argument: it holds a NUL"
        " character (the loop's spec, criteria, steps or notes); remove it, or use"
        " --prompt-mode stdin or file.\n"
    )
    data["spec"] = "\U0001f600" * limits.RUN_SPEC_CHARS  # 80,000 bytes
    path.write_bytes(orjson.dumps(data))
    for n in (1, 2):
        (project / f"long-{n}.txt").write_text("é" * limits.RUN_CONTEXT_FILE_CHARS)
    context = ["--context", "long-1.txt", "--context", "long-2.txt"]
    done = run(project, "--agent", arg_agent(script), "--prompt-mode", "arg", *context)
    assert done.returncode == 1
    said = done.stderr.decode()
    assert said.startswith(
        "ralphstate: --prompt-mode arg cannot pass the prompt as an argument: it is "
    )
    assert said.endswith(
        f" bytes, more than the {limits.RUN_ARG_PROMPT_BYTES:,} one argument may hold; use"
        " --prompt-mode stdin or file, or give fewer --context files.\n"
    )
    assert history(project, "run_started") == [] and run_agents.prompts(agents) == []
    # stdin takes the same prompt.
    done = run(
        project, "--agent", run_agents.command(script, "stdin", "progress"), *context, "--max", "1"
    )
    assert done.returncode == 3, done.stderr


def test_a_nul_that_comes_during_the_run_ends_it_recorded_and_paused(
    rs: Any, project: Path, tmp_path: Path
) -> None:
    make_loop(rs)
    # The agent leaves a lesson with a NUL in it: the next prompt cannot be passed.
    writes = "open('.loop/lessons.md', 'ab').write(b'use tabs\\x00\\n')"
    agent = spawn.join_command([sys.executable, "-c", writes])
    done = run(project, "--agent", agent, "--prompt-mode", "arg")

    assert done.returncode == 1
    assert done.stderr.decode().splitlines()[-1] == (
        "ralphstate: iteration 2: --prompt-mode arg cannot pass the prompt as an argument:"
        " .loop/lessons.md holds a NUL character; remove it, or use --prompt-mode stdin or"
        " file."
    )
    iterations = [(e["iteration"], e["decision"]) for e in history(project, "run_iteration")]
    assert iterations == [(1, "continue"), (2, "error")]
    finished = history(project, "run_finished")[-1]
    assert finished["outcome"] == "error"
    final = state(project)
    assert final["status"] == "paused"
    assert final["pauseReason"].startswith("ralphstate run stopped: iteration 2: --prompt-mode arg")


# -- an agent's figures --------------------------------------------------------------------


def report(**changes: Any) -> bytes:
    """What Claude Code -p --output-format json prints, with `changes`."""
    reported = {**CLAUDE_OK, **changes}
    return orjson.dumps(reported) + b"\n"


def test_an_absurd_cost_is_not_believed_and_the_token_budget_holds(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("a", "b", "c", "d", "e"))
    usage = {**CLAUDE_OK["usage"], "input_tokens": 1000, "output_tokens": 0}
    run_agents.replay(agents, report(total_cost_usd=1e308, usage=usage))
    agent = run_agents.command(script, "stdin", "progress+replay")
    done = run(project, "--agent", agent, "--max-tokens", "1500", "--json")

    assert done.returncode == 3, done.stderr
    out = orjson.loads(done.stdout)
    assert (out["reason"], out["iterations"]) == ("budget", 2)
    assert out["detail"] == "tokens 2,000 of this run's 1,500"
    assert [(r["tokens"], r["cost"]) for r in out["runs"]] == [(1000, None), (1000, None)]
    doubted = (
        "  the agent reported a cost of more than $1,000,000 for one iteration, which is not"
        " believed: it is not counted"
    )
    assert done.stderr.decode().splitlines().count(doubted) == 2
    spent = state(project)["usage"]
    assert (spent["tokens"], spent["cost"]) == (2000, 0.0)
    ended_paused(project, "budget")


def test_a_total_at_the_edge_of_what_the_file_holds_stops_growing(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("a",))
    path = project / ".loop" / "state.json"
    data = orjson.loads(path.read_bytes())
    data["usage"] = {"tokens": 2**64 - 1, "cost": 1e308, "seconds": 0.0}  # a hand edit
    path.write_bytes(orjson.dumps(data))
    run_agents.replay(agents, report())
    done = run(project, "--agent", run_agents.command(script, "stdin", "progress+replay"))

    assert done.returncode == 0, done.stderr
    spent = state(project)["usage"]
    assert (spent["tokens"], spent["cost"]) == (2**64 - 1, 1e308)
    assert spent["seconds"] > 0  # the iteration's spending was recorded, not dropped


# -- an error nobody foresaw -----------------------------------------------------------------

# ralphstate with one of its steps broken, as a bug would break it.
BROKEN = """
import sys
from ralphstate.run import bookkeeping, usage

if sys.argv[1] == "crash":
    def read(path):
        raise ZeroDivisionError("a bug")

    usage.read = read
else:  # what an iteration spent cannot be written: a total no file can hold
    def spend(state, agent, figures):
        state["usage"] = {"tokens": 1, "cost": float("inf"), "seconds": 1.0}

    bookkeeping.spend = spend
from ralphstate.__main__ import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("fault", ["crash", "unwritable"])
def test_an_error_that_ends_the_run_is_recorded_and_pauses_the_loop(
    fault: str, rs: Any, project: Path, script: Path, agents: Path, isolated: Path
) -> None:
    make_loop(rs)
    agent = run_agents.command(script, "stdin", "progress")
    done = run_process_with(BROKEN, [fault, "run", "--agent", agent], project)

    assert done.returncode == 1
    last = done.stderr.decode().splitlines()[-1]
    if fault == "crash":
        log = isolated / "log" / "ralphstate.log"
        assert last == (
            f"ralphstate: unexpected error (ZeroDivisionError: a bug); details in {log}."
        )
        assert "ZeroDivisionError: a bug" in log.read_text()
    else:
        assert last.startswith(
            "ralphstate: what iteration 1 spent could not be recorded, so the run stops before"
            " its budgets go unheld: "
        )
    iterations = [(e["iteration"], e["decision"]) for e in history(project, "run_iteration")]
    assert iterations == [(1, "error")]
    finished = history(project, "run_finished")
    assert [e["outcome"] for e in finished] == ["error"]
    final = state(project)
    assert final["status"] == "paused"
    said = last[len("ralphstate: ") :]
    assert final["pauseReason"] == clip(f"ralphstate run stopped: {said}", 200)


def run_process_with(script: str, args: list[str], cwd: Path) -> Any:
    """`python -c SCRIPT ARGS...`, as `run_process` runs ralphstate."""
    return subprocess.run(
        [sys.executable, "-c", script, *args], cwd=cwd, capture_output=True, timeout=60, check=False
    )
