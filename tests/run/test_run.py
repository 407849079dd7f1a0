"""`ralphstate run` driving small fake agents (tests/helpers/run_agents.py) through real
processes: outcomes, history, logs, exit codes, prompt delivery and Ctrl-C."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import spawn
from tests.helpers import run_agents, run_process

POSIX_SIGNALS = pytest.mark.skipif(
    sys.platform == "win32", reason="POSIX signals; Windows stops agents with CTRL_BREAK_EVENT"
)
MODES = ("stdin", "arg", "file")
DURATION = re.compile(r"\b\d+(\.\d)?s\b")


def make_loop(
    rs: Any, *extra: str, criteria: tuple[str, ...] = ("tests pass", "docs written")
) -> None:
    args = ["init", "Build the parser"]
    for name in criteria:
        args += ["-c", name]
    result = rs(*args, "-s", "write it", *extra)
    assert result.code == 0, result


def state(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((project / ".loop" / "state.json").read_bytes())
    return data


def history(project: Path, *names: str) -> list[dict[str, Any]]:
    lines = (project / ".loop" / "history.jsonl").read_bytes().splitlines()
    entries = [orjson.loads(line) for line in lines]
    return [e for e in entries if not names or e["event"] in names]


def run(project: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return run_process(["run", *args], cwd=project, timeout=timeout)


# The line and the summary's part that say these tests' runs are unconfined (the tests'
# default, tests/conftest.py); tests/sandbox read them.
UNCONFINED_LINE = "sandbox: off; the agent runs unconfined, with all your user's rights."
UNCONFINED_PART = " · sandbox: unconfined"


def plain(text: bytes | str) -> list[str]:
    """Output lines with durations made comparable, without the unconfined notes."""
    if isinstance(text, bytes):
        text = text.decode()
    lines = [line.replace(UNCONFINED_PART, "") for line in text.splitlines()]
    return [DURATION.sub("T", line) for line in lines if line != UNCONFINED_LINE]


# -- completing --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_that_makes_progress_completes_the_loop(
    mode: str, rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs)
    agent = run_agents.command(script, mode, "progress")
    done = run(project, "--agent", agent, "--prompt-mode", mode, "--json")

    assert done.returncode == 0, done.stderr
    out = orjson.loads(done.stdout)  # stdout holds the one JSON object and nothing else
    assert out["outcome"] == "complete"
    assert out["reason"] is None
    assert out["exitCode"] == 0
    assert out["iterations"] == 2
    assert out["criteria"] == {
        "met": 2,
        "total": 2,
        "unmet": [],
        "verified": [],
        "graded": [],
        "claimed": ["tests pass", "docs written"],
        "alreadyTrue": [],
        "levels": {},
    }
    assert out["steps"] == {"done": 0, "total": 1}
    assert len(out["durations"]["iterations"]) == 2
    assert [r["log"] for r in out["runs"]] == [
        str(Path(".loop", "runs", "0001.log")),
        str(Path(".loop", "runs", "0002.log")),
    ]
    assert [(r["exit"], r["decision"]) for r in out["runs"]] == [(0, "continue"), (0, "complete")]
    assert plain(done.stderr) == [
        "[1/20] this run: 1 of 20 · next step: write it",
        "agent 1: progress",
        "tests pass: met",
        "[1/20] 1/2 criteria · 0/1 step · T · exit 0",
        "[2/20] this run: 2 of 20 · next step: write it",
        "agent 2: progress",
        "docs written: met",
        "[2/20] 2/2 criteria · 0/1 step · T · exit 0",
        "complete · 2/2 criteria (2 claimed) · 0/1 step · 2 iterations · T",
    ]

    final = state(project)
    assert (final["status"], final["pauseReason"], final["iteration"]) == ("complete", None, 2)
    runs = project / ".loop" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [".gitignore", "0001.log", "0002.log"]
    assert (runs / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (runs / "0001.log").read_bytes() == b"agent 1: progress\ntests pass: met\n"
    assert (runs / "0002.log").read_bytes() == b"agent 2: progress\ndocs written: met\n"

    prompts = run_agents.prompts(agents)
    assert len(prompts) == 2
    assert "Spec:\nBuild the parser\n" in prompts[0]
    assert "- [ ] tests pass\n- [ ] docs written\n" in prompts[0]
    assert "- [x] tests pass\n    note: proved by agent 1\n- [ ] docs written\n" in prompts[1]
    assert (agents / "runner-1.txt").read_text() == "1"  # the Stop hook lets the agent stop
    if mode == "file":
        used = Path((agents / "argv-1.txt").read_text().splitlines()[2])
        assert used.name.startswith("ralphstate-prompt-")
        assert not used.exists()  # the temporary prompt file is gone

    events = [(e["event"], e["iteration"]) for e in history(project)]
    assert events == [
        ("init", 0),
        ("run_started", 0),
        ("iteration_started", 1),
        ("criterion_set", 1),
        ("run_iteration", 1),
        ("iteration_started", 2),
        ("criterion_set", 2),
        ("run_iteration", 2),
        ("run_finished", 2),
    ]
    started = history(project, "run_started")[0]
    assert started["agent"] == agent
    assert (started["promptMode"], started["limit"], started["timeout"]) == (mode, 20, None)
    first = history(project, "run_iteration")[0]
    assert {k: first[k] for k in ("run", "exit", "result", "decision", "log", "noProgress")} == {
        "run": 1,
        "exit": 0,
        "result": "exit 0",
        "decision": "continue",
        "log": str(Path(".loop", "runs", "0001.log")),
        "noProgress": 0,
    }
    assert isinstance(first["duration"], float)
    finished = history(project, "run_finished")[0]
    assert (finished["outcome"], finished["reason"], finished["iterations"]) == (
        "complete",
        None,
        2,
    )


def test_without_json_progress_and_agent_output_go_to_stdout(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    done = rs("run", "--agent", run_agents.command(script, "stdin", "progress"))
    assert done.code == 0, done
    assert plain(done.out) == [
        "[1/20] this run: 1 of 20 · next step: write it",
        "agent 1: progress",
        "tests pass: met",
        "[1/20] 1/1 criterion · 0/1 step · T · exit 0",
        "complete · 1/1 criterion (1 claimed) · 0/1 step · 1 iteration · T",
    ]
    assert done.err == ""


def test_a_loop_whose_criteria_are_all_met_completes_without_running_the_agent(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    rs("criteria", "set", "tests pass", "true")
    done = rs("run", "--agent", run_agents.command(script, "stdin", "crash"))
    assert done.code == 0
    assert plain(done.out) == ["complete · 1/1 criterion (1 claimed) · 0/1 step · 0 iterations · T"]
    assert run_agents.prompts(agents) == []
    assert state(project)["status"] == "complete"
    again = rs("run", "--agent", run_agents.command(script, "stdin", "crash"), "--json")
    assert again.code == 0
    assert orjson.loads(again.out)["outcome"] == "complete"


# -- pausing: max, stall, from outside -----------------------------------------------------


def test_an_idle_agent_stalls_after_stall_limit_iterations(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, "--stall-limit", "2")
    done = rs("run", "--agent", run_agents.command(script, "stdin", "idle"), "--max", "10")
    assert done.code == 3
    assert plain(done.out) == [
        "[1/20] this run: 1 of 10 · next step: write it",
        "agent 1: idle",
        "[1/20] 0/2 criteria · 0/1 step · T · exit 0 · no progress (1 of 2)",
        "[2/20] this run: 2 of 10 · next step: write it",
        "agent 2: idle",
        "[2/20] 0/2 criteria · 0/1 step · T · exit 0",
        "paused (stall) · 0/2 criteria · 0/1 step · 2 iterations · T",
        (
            "No progress in the last iterations: look at `ralphstate status` and .loop/runs/,"
            " then `ralphstate run` again."
        ),
    ]
    final = state(project)
    assert (final["status"], final["pauseReason"], final["maxIterations"]) == (
        "paused",
        "stall",
        20,  # --max 10 limited the run; the loop's cap stays its own
    )
    decisions = [(e["decision"], e["noProgress"]) for e in history(project, "run_iteration")]
    assert decisions == [("continue", 1), ("stall", 2)]


def test_max_limits_the_run_and_a_new_run_resumes_it(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("a", "b", "c"))
    agent = run_agents.command(script, "stdin", "progress")
    first = rs("run", "--agent", agent, "--max", "1", "--json")
    assert first.code == 3
    out = orjson.loads(first.out)
    assert (out["outcome"], out["reason"], out["iterations"]) == ("paused", "run_max", 1)
    assert "This run's --max is spent; run `ralphstate run` again to continue." in first.err
    paused = state(project)
    assert (paused["status"], paused["pauseReason"]) == ("paused", "run_max")
    assert (paused["iteration"], paused["maxIterations"]) == (1, 20)  # the cap is the loop's

    again = rs("run", "--agent", agent)
    assert again.code == 0, again
    resumed = history(project, "resumed")
    assert [(e["by"], e["from"]) for e in resumed] == [("run", "run_max")]
    final = state(project)
    assert (final["status"], final["iteration"], final["maxIterations"]) == ("complete", 3, 20)


def test_max_never_shrinks_the_loops_cap(rs: Any, project: Path, script: Path) -> None:
    make_loop(rs, criteria=("a", "b", "c"))
    path = project / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw.update(iteration=3, maxIterations=10)
    path.write_bytes(orjson.dumps(raw))
    agent = run_agents.command(script, "stdin", "progress")
    kept = rs("run", "--agent", agent, "--max", "1")
    assert kept.code == 3 and "cap grows" not in kept.out + kept.err
    after = state(project)
    assert (after["iteration"], after["maxIterations"]) == (4, 10)


def test_max_beyond_the_cap_grows_it(rs: Any, project: Path, script: Path, agents: Path) -> None:
    make_loop(rs, "--max-iterations", "1", criteria=("a", "b", "c", "d"))
    agent = run_agents.command(script, "stdin", "progress")
    first = rs("run", "--agent", agent)
    assert first.code == 3
    assert (state(project)["pauseReason"], state(project)["maxIterations"]) == (
        "max_iterations",
        1,
    )
    spent = rs("run", "--agent", agent)  # the loop's own cap is spent: nothing runs
    assert spent.code == 3
    assert len(run_agents.prompts(agents)) == 1
    again = rs("run", "--agent", agent, "--max", "5")
    assert again.code == 0, again
    # Said, not silent: the cap is the person's choice.
    grows = "the loop's cap grows from 1 to 6 iterations to fit --max 5"
    assert grows in again.out + again.err, again
    final = state(project)
    assert (final["status"], final["iteration"], final["maxIterations"]) == ("complete", 4, 6)


def test_the_loop_paused_from_outside_ends_the_run(rs: Any, project: Path, script: Path) -> None:
    make_loop(rs)
    done = rs("run", "--agent", run_agents.command(script, "stdin", "pause"))
    assert done.code == 3
    assert plain(done.out)[-2:] == [
        "paused (agent asked) · 0/2 criteria · 0/1 step · 1 iteration · T",
        "The loop was paused from outside the run; run `ralphstate run` again to continue.",
    ]
    last = history(project)[-1]
    assert (last["event"], last["outcome"], last["reason"], last["by"]) == (
        "run_finished",
        "paused",
        "agent asked",
        "outside",
    )
    assert history(project, "run_iteration")[0]["decision"] == "paused"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_new_git_commit_counts_as_progress(
    rs: Any, project: Path, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }.items():
        monkeypatch.setenv(key, value)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    make_loop(rs, "--stall-limit", "1")
    committing = rs("run", "--agent", run_agents.command(script, "stdin", "commit"), "--max", "3")
    assert committing.code == 3
    assert [e["decision"] for e in history(project, "run_iteration")] == [
        "continue",
        "continue",
        "run_max",  # the run's --max, not the loop's cap of 20
    ]
    idle = rs("run", "--agent", run_agents.command(script, "stdin", "idle"), "--max", "3")
    assert idle.code == 3
    assert history(project, "run_finished")[-1]["reason"] == "stall"
    assert [e["decision"] for e in history(project, "run_iteration")][3:] == ["stall"]


# -- agents that fail ----------------------------------------------------------------------


def test_a_crashing_agent_is_recorded_and_the_loop_goes_on_until_it_stalls(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs, "--stall-limit", "2")
    done = rs("run", "--agent", run_agents.command(script, "arg", "crash"), "--prompt-mode", "arg")
    assert done.code == 3
    assert "[1/20] 0/2 criteria · 0/1 step · T · exit 7 · no progress (1 of 2)" in plain(done.out)
    runs = history(project, "run_iteration")
    assert [(r["exit"], r["result"]) for r in runs] == [(7, "exit 7"), (7, "exit 7")]
    log = (project / ".loop" / "runs" / "0001.log").read_bytes()
    assert log == b"agent 1: crash\nboom\n"  # stderr is in the log too
    errors = orjson.loads((project / ".loop" / "state.json").read_bytes())["errors"]
    assert [(e["iteration"], e["message"], e["run"]) for e in errors] == [
        (1, 'agent exit 7: "boom"', True),
        (2, 'agent exit 7: "boom"', True),
    ]


def test_an_agent_that_corrupts_the_state_ends_the_run_with_an_error(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs)
    done = rs("run", "--agent", run_agents.command(script, "stdin", "corrupt"), "--json")
    assert done.code == 1
    out = orjson.loads(done.out)
    assert out["outcome"] == "error"
    assert out["error"].startswith("after iteration 1: .loop")
    assert "not valid JSON" in out["error"]
    assert done.err.splitlines()[-2].startswith("ralphstate: after iteration 1: ")
    assert (project / ".loop" / "state.json").read_text() == "{not json"  # left untouched
    last = history(project)[-1]
    assert (last["event"], last["outcome"]) == ("run_finished", "error")


@POSIX_SIGNALS
def test_an_agent_that_hangs_past_the_timeout_is_stopped(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs)
    agent = run_agents.command(script, "file", "hang")
    done = rs("run", "--agent", agent, "--timeout", "0.5", "--max", "1", "--json")
    assert done.code == 3
    out = orjson.loads(done.out)
    (only,) = out["runs"]
    assert (only["timedOut"], only["interrupted"], only["exit"], only["result"]) == (
        True,
        False,
        130,
        "exit 130",
    )
    assert run_agents.signals(agents) == ["SIGINT"]
    assert history(project, "run_iteration")[0]["stops"] == ["interrupt"]
    assert "· exit 130 · timed out after 0.5s" in done.err


# -- Ctrl-C, with real signals -------------------------------------------------------------


@pytest.fixture
def start_run(project: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(
            [sys.executable, "-m", "ralphstate", "run", *args],
            cwd=project,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
        )
        started.append(child)
        return child

    yield start
    for child in started:
        if child.poll() is None:
            child.kill()
            child.wait()


def wait_for(check: Callable[[], bool], what: str, limit: float = 20) -> None:
    """Wait until `check()` holds; `limit` only bounds a test that went wrong."""
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def grace(project: Path, seconds: float) -> None:
    (project / ".loop" / "config.toml").write_text(f"[run]\ngrace = {seconds}\n")


@POSIX_SIGNALS
@pytest.mark.parametrize("mode", MODES)
def test_ctrl_c_interrupts_the_agent_and_pauses_the_loop(
    mode: str, rs: Any, project: Path, script: Path, agents: Path, start_run: Any
) -> None:
    make_loop(rs)
    child = start_run(
        "--agent", run_agents.command(script, mode, "hang"), "--prompt-mode", mode, "--json"
    )
    wait_for((agents / "pid").exists, "the agent to start")
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)

    assert child.returncode == 3, err
    result = orjson.loads(out)
    assert (result["outcome"], result["reason"], result["iterations"]) == ("paused", "user", 1)
    (only,) = result["runs"]
    assert (only["interrupted"], only["exit"], only["decision"]) == (True, 130, "user")
    assert run_agents.signals(agents) == ["SIGINT"]
    final = state(project)
    assert (final["status"], final["pauseReason"]) == ("paused", "user")
    assert history(project, "run_iteration")[0]["stops"] == ["interrupt"]
    assert plain(err)[-1] == "Stopped by Ctrl-C; run `ralphstate run` again to continue."
    assert b"Traceback" not in err


@POSIX_SIGNALS
def test_an_agent_that_ignores_ctrl_c_is_terminated_then_killed(
    rs: Any, project: Path, script: Path, agents: Path, start_run: Any
) -> None:
    make_loop(rs)
    grace(project, 0.3)
    child = start_run("--agent", run_agents.command(script, "stdin", "stubborn"), "--json")
    wait_for((agents / "pid").exists, "the agent to start")
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)

    assert child.returncode == 3, err
    (only,) = orjson.loads(out)["runs"]
    assert (only["exit"], only["result"]) == (-signal.SIGKILL, "signal SIGKILL")
    assert run_agents.signals(agents) == ["SIGINT", "SIGTERM"]
    assert history(project, "run_iteration")[0]["stops"] == ["interrupt", "terminate", "kill"]
    assert not run_agents.alive(int((agents / "pid").read_text()))
    assert state(project)["pauseReason"] == "user"


@POSIX_SIGNALS
def test_a_second_ctrl_c_exits_at_once(
    rs: Any, project: Path, script: Path, agents: Path, start_run: Any
) -> None:
    make_loop(rs)
    grace(project, 600)  # without the second Ctrl-C, the run would wait this long
    child = start_run("--agent", run_agents.command(script, "stdin", "stubborn"))
    wait_for((agents / "pid").exists, "the agent to start")
    child.send_signal(signal.SIGINT)
    wait_for(lambda: run_agents.signals(agents) == ["SIGINT"], "the agent to see Ctrl-C")
    child.send_signal(signal.SIGINT)
    _out, err = child.communicate(timeout=30)

    assert child.returncode == 3, err
    pid = int((agents / "pid").read_text())
    wait_for(lambda: not run_agents.alive(pid), "the agent to be gone")
    assert run_agents.signals(agents) == ["SIGINT"]  # no SIGTERM: it was killed at once
    final = state(project)
    assert (final["status"], final["pauseReason"]) == ("paused", "user")
    assert b"Traceback" not in err


# -- dry run -------------------------------------------------------------------------------


def test_dry_run_prints_the_command_and_the_prompt_and_runs_nothing(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs)
    before = (project / ".loop" / "state.json").read_bytes()
    done = rs("run", "--agent", "claude -p --max-turns 30", "--prompt-mode", "arg", "--dry-run")
    assert done.code == 0, done
    lines = done.out.splitlines()
    assert lines[:3] == [
        f"would run, in {project} with RALPHSTATE_RUNNER=1:",
        "  claude -p --max-turns 30 PROMPT",
        "the prompt is appended as its last argument; at most 20 iterations; no time limit.",
    ]
    assert lines[-1] == "----- end of prompt -----"
    assert "Spec:" in lines
    assert (project / ".loop" / "state.json").read_bytes() == before
    assert not (project / ".loop" / "runs").exists()
    assert [e["event"] for e in history(project)] == ["init"]

    shown = rs("run", "--agent", "my-agent {prompt_file}", "--dry-run", "--json", "--max", "4")
    data = orjson.loads(shown.out)
    assert (data["promptMode"], data["limit"], data["command"]) == (
        "file",
        4,
        ["my-agent", "{prompt_file}"],
    )
    assert data["prompt"].startswith("You are iteration 1 of at most 4 of a ralphstate loop")
    assert data["found"] is False
    assert state(project)["maxIterations"] == 20  # a dry run changes nothing


# -- configuration ---------------------------------------------------------------------------


def test_the_agent_comes_from_pyproject_and_loop_config_wins(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, criteria=("tests pass",))
    crash = run_agents.command(script, "arg", "crash").replace("\\", "\\\\")
    progress = run_agents.command(script, "file", "progress").replace("\\", "\\\\")
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "x"\n\n[tool.ralphstate.run]\nagent = "{crash}"\n'
        'prompt-mode = "arg"\nmax = 7\n'
    )
    shown = orjson.loads(rs("run", "--dry-run", "--json").out)
    assert (shown["promptMode"], shown["limit"]) == ("arg", 7)
    assert shown["config"] == ["pyproject.toml [tool.ralphstate.run]"]
    (project / ".loop" / "config.toml").write_text(
        f'[run]\nagent = "{progress}"\nprompt-mode = "file"\n'
    )
    assert rs("trust").code == 0  # the agent command comes from a file: reviewed first
    done = rs("run")
    assert done.code == 0, done
    assert plain(done.out)[0] == "[1/20] this run: 1 of 7 · next step: write it"
    assert state(project)["maxIterations"] == 20  # a configured max limits each run only


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[run]\nagnet = 'x'\n",
            (
                "{cfg} [run]: unknown key 'agnet' (known: agent, prompt-mode, max, timeout,"
                " context, grace, max-cost, max-tokens, max-duration, on-limit, agent-errors,"
                " step-retries, idle-timeout, notify, keep-awake, keep-logs, sandbox,"
                " sandbox-network, shell, strict, check-in)."
            ),
        ),
        ("[run]\nmax = 0\n", "{cfg} [run]: 'max' must be a whole number from 1 to 10000, not 0."),
        (
            "[run]\nprompt-mode = 'pipe'\n",
            "{cfg} [run]: 'prompt-mode' must be stdin or arg or file, not 'pipe'.",
        ),
        (
            "[run]\ntimeout = 0\n",
            "{cfg} [run]: 'timeout' must be a number of seconds above 0, not 0.",
        ),
        (
            "[run]\ncontext = 3\n",
            "{cfg} [run]: 'context' must be a file name or a list of file names, not 3.",
        ),
        ("run = 3\n", "{abs}: [run] must be a table."),
    ],
)
def test_a_bad_config_is_one_line(rs: Any, project: Path, text: str, message: str) -> None:
    make_loop(rs)
    config = project / ".loop" / "config.toml"
    config.write_text(text)
    done = rs("run", "--agent", "x")
    assert done.code == 1
    shown = message.format(cfg=Path(".loop", "config.toml"), abs=config)
    assert done.err == f"ralphstate: {shown}\n"


def test_invalid_toml_is_one_line(rs: Any, project: Path) -> None:
    make_loop(rs)
    (project / "pyproject.toml").write_text("[tool.ralphstate.run\n")
    done = rs("run", "--agent", "x")
    assert done.code == 1
    assert done.err.startswith(f"ralphstate: {project / 'pyproject.toml'} is not valid TOML: ")
    assert done.err.count("\n") == 1


# -- mistakes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [],
            (
                'no agent command: give one with --agent "CMD", or set `agent` in the'
                " [tool.ralphstate.run] table of pyproject.toml or the [run] table of"
                " .loop/config.toml; for Claude Code overnight: ralphstate run --agent"
                ' "claude -p --output-format json --dangerously-skip-permissions" --max 40'
                " (docs/how-to/overnight.md)."
            ),
        ),
        (
            ["--agent", "surely-no-such-agent-program -p"],
            "the agent program 'surely-no-such-agent-program' was not found on PATH.",
        ),
        (
            ["--agent", "claude -p", "--prompt-mode", "file"],
            (
                "--prompt-mode file needs {prompt_file} in the agent command, where the prompt"
                " file's path goes."
            ),
        ),
        (
            ["--agent", "agent {prompt_file}", "--prompt-mode", "stdin"],
            (
                "the agent command holds {prompt_file}, which only --prompt-mode file fills"
                " (the prompt mode is stdin)."
            ),
        ),
        (
            ["--agent", "claude -p 'unclosed"],
            'the agent command "claude -p \'unclosed" cannot be read (No closing quotation).',
        ),
        (["--agent", "x", "--context", "missing.md"], "the context file {missing} does not exist."),
    ],
)
def test_mistakes_are_one_line(rs: Any, project: Path, args: list[str], message: str) -> None:
    make_loop(rs)
    done = rs("run", *args)
    assert done.code == 1
    expected = message.replace("{missing}", str(project / "missing.md"))
    assert done.err == f"ralphstate: {expected}\n"
    assert done.out == ""


def test_a_loop_without_criteria_or_cancelled_is_refused(rs: Any, project: Path) -> None:
    make_loop(rs, criteria=())
    done = rs("run", "--agent", sys.executable)
    assert done.err == (
        "ralphstate: the loop has no criteria, so a run could never tell that it is done;"
        ' add one with `ralphstate criteria add "NAME"`.\n'
    )
    rs("criteria", "add", "x")
    rs("cancel")
    done = rs("run", "--agent", sys.executable)
    assert done.code == 1
    assert done.err == (
        "ralphstate: the loop was cancelled; start a new one with `ralphstate init`.\n"
    )


def test_a_second_run_on_the_same_loop_is_refused(rs: Any, project: Path) -> None:
    import filelock

    make_loop(rs)
    with filelock.FileLock(str(project / ".loop" / "run.lock"), timeout=0):
        done = rs("run", "--agent", sys.executable)
    assert done.code == 1
    assert done.err == (
        "ralphstate: another `ralphstate run` is already driving this loop"
        f" ({Path('.loop', 'run.lock')} is held).\n"
    )


def test_no_loop_is_one_line(rs: Any, project: Path) -> None:
    done = rs("run", "--agent", "x")
    assert done.code == 1
    assert done.err.startswith("ralphstate: no loop here")


# -- criteria that prove themselves ------------------------------------------------------------

BUILT_CHECK = (
    "import os, sys; ok = os.path.exists('built.txt');"
    " print('built' if ok else 'not built'); sys.exit(0 if ok else 1)"
)


def add_built_check(rs: Any) -> None:
    check = spawn.join_command([sys.executable, "-c", BUILT_CHECK])
    assert rs("criteria", "add", "built", "--check", check).code == 0


def test_a_check_verifies_a_criterion_after_the_iteration(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs, criteria=())
    add_built_check(rs)
    done = rs("run", "--agent", run_agents.command(script, "stdin", "build"), "--json")
    assert done.code == 0, done
    out = orjson.loads(done.out)
    assert (out["outcome"], out["iterations"]) == ("complete", 1)
    assert plain(done.err)[2] == '  check "built": verified (exit code 0, T)'
    checks = history(project, "check")
    assert [(c["criterion"], c["by"], c["result"]) for c in checks] == [
        ("built", "run", "verified")
    ]
    assert state(project)["evidence"]["built"]["result"] == "verified"


def test_a_claim_that_its_check_refutes_does_not_complete_the_loop(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, "--stall-limit", "2", criteria=())
    add_built_check(rs)
    done = rs("run", "--agent", run_agents.command(script, "stdin", "progress"))
    assert done.code == 3
    assert plain(done.out)[3] == '  check "built": failing (exit code 1, T)'
    assert history(project, "run_finished")[0]["reason"] == "stall"
    second = run_agents.prompts(agents)[1]
    assert "- [ ] built\n    check failing: exit code 1\n    check: " in second
    assert "    last output of the check:\n      | not built\n" in second
    assert state(project)["criteriaStatus"] == {"built": False}


def test_checks_that_are_not_trusted_here_stop_the_run_before_it_starts(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs)
    path = project / ".loop" / "state.json"
    data = state(project)
    data["checks"] = {"tests pass": "echo hello"}  # a hand edit: not trusted
    path.write_bytes(orjson.dumps(data))
    done = rs("run", "--agent", run_agents.command(script, "stdin", "idle"))
    assert done.code == 1
    assert done.err.startswith("ralphstate: the checks in .loop")
    assert "`ralphstate trust`" in done.err
    assert run_agents.prompts(agents) == []


# -- the hooks inside an iteration ------------------------------------------------------------


def hook(project: Path, event: str, runner: bool, **data: Any) -> dict[str, Any] | None:
    env = {"RALPHSTATE_RUNNER": "1"} if runner else {}
    payload = {"cwd": str(project), "session_id": "iteration-session", **data}
    done = run_process(["hook", event], cwd=project, input=orjson.dumps(payload), env=env)
    assert done.returncode == 0
    return orjson.loads(done.stdout) if done.stdout.strip() else None


def test_inside_a_run_the_stop_hook_allows(rs: Any, project: Path) -> None:
    make_loop(rs)  # unowned and known here: outside a run, a Stop would adopt it and block
    before = (project / ".loop" / "state.json").read_bytes()
    assert hook(project, "stop", runner=True, last_assistant_message="done") is None
    assert (project / ".loop" / "state.json").read_bytes() == before
    blocked = hook(project, "stop", runner=False, last_assistant_message="done")
    assert blocked is not None and blocked["decision"] == "block"


def test_inside_a_run_session_start_restores_a_loop_another_session_owns(
    rs: Any, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "the-person-session")
    make_loop(rs)
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID")
    before = (project / ".loop" / "state.json").read_bytes()

    out = hook(project, "session-start", runner=True, source="startup")
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "Spec: Build the parser" in context
    assert "belongs to another session" not in context
    assert (project / ".loop" / "state.json").read_bytes() == before  # nothing taken

    outside = hook(project, "session-start", runner=False, source="startup")
    assert outside is not None
    assert "belongs to another session" in outside["hookSpecificOutput"]["additionalContext"]


def test_inside_a_run_a_loop_this_machine_never_saw_is_not_restored(
    rs: Any, project: Path, isolated: Path
) -> None:
    make_loop(rs)
    for path in isolated.rglob("loops.json"):
        path.unlink()  # as if the repository had been cloned here
    out = hook(project, "session-start", runner=True, source="startup")
    assert out is not None
    assert "hookSpecificOutput" not in out
    assert "not started on this machine" in out["systemMessage"]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_a_runs_directory_leading_out_of_the_project_is_refused(
    rs: Any, project: Path, script: Path, tmp_path: Path
) -> None:
    make_loop(rs)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / ".loop" / "runs").symlink_to(outside, target_is_directory=True)
    done = rs("run", "--agent", run_agents.command(script, "stdin", "progress"))
    assert done.code == 1
    assert done.err.count("\n") == 1
    assert done.err.startswith("ralphstate: .loop/runs leads outside the project")
    assert list(outside.iterdir()) == []


# -- closing the terminal; an agent left from an earlier run ----------------------------------


@POSIX_SIGNALS
def test_closing_the_terminal_stops_the_agent_and_pauses_the_loop(
    rs: Any, project: Path, script: Path, agents: Path, start_run: Any
) -> None:
    make_loop(rs)
    child = start_run("--agent", run_agents.command(script, "stdin", "hang"), "--json")
    wait_for((agents / "pid").exists, "the agent to start")
    pid = int((agents / "pid").read_text())
    child.send_signal(signal.SIGHUP)
    try:
        out, err = child.communicate(timeout=30)
    finally:
        if run_agents.alive(pid):  # never leave it behind, even when the test fails
            os.killpg(pid, signal.SIGKILL)

    assert child.returncode == 3, err
    assert (orjson.loads(out)["outcome"], orjson.loads(out)["reason"]) == ("paused", "user")
    wait_for(lambda: not run_agents.alive(pid), "the agent to be gone")
    assert run_agents.signals(agents) == ["SIGINT"]
    final = state(project)
    assert (final["status"], final["pauseReason"]) == ("paused", "user")
    (finished,) = history(project, "run_finished")
    assert finished["signal"] == "SIGHUP"
    assert not (project / ".loop" / "runs" / "agent.json").exists()
    assert b"Traceback" not in err


@POSIX_SIGNALS
def test_no_run_starts_while_an_earlier_runs_agent_is_alive(
    rs: Any, project: Path, script: Path, agents: Path, start_run: Any
) -> None:
    make_loop(rs, criteria=("tests pass",))
    child = start_run("--agent", run_agents.command(script, "stdin", "hang"))
    wait_for((agents / "pid").exists, "the agent to start")
    pid = int((agents / "pid").read_text())
    child.kill()  # the runner is gone at once; its agent, in its own session, lives on
    child.communicate(timeout=30)
    try:
        assert run_agents.alive(pid)
        before = state(project)
        again = rs("run", "--agent", run_agents.command(script, "stdin", "progress"))
        assert again.code == 1
        assert again.err == (
            f"ralphstate: the agent an earlier `ralphstate run` started (process {pid}) is"
            f" still running; end it (kill -- -{pid}) and run again.\n"
        )
        assert state(project) == before
    finally:
        os.killpg(pid, signal.SIGKILL)
    wait_for(lambda: not run_agents.alive(pid), "the agent to be gone")
    done = rs("run", "--agent", run_agents.command(script, "stdin", "progress"))
    assert done.code == 0, done
    assert not (project / ".loop" / "runs" / "agent.json").exists()


def test_an_agent_record_whose_process_is_someone_else_is_not_an_agent(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    """A process id the system gave to another process since (or a record that came
    with a clone) does not stop the run."""
    make_loop(rs, criteria=("tests pass",))
    runs = project / ".loop" / "runs"
    runs.mkdir()
    (runs / "agent.json").write_bytes(
        orjson.dumps({"pid": os.getpid(), "pgid": os.getpgid(0), "started": "not this one"})
    )
    done = rs("run", "--agent", run_agents.command(script, "stdin", "progress"))
    assert done.code == 0, done
