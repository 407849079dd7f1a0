"""The design notes' run workflows, each as its note writes it, through real
`ralphstate` processes and a scripted agent that does, iteration by iteration, what the
test tells it:

- `003_*` ("awa loop"): `check-strict = true` stops the loop on a check failure; the
  agent command is the person's own string, which `VAR=x cmd` and `a && b` are too.
- `004_*` (execute/verify loops): each gap a verification finds becomes a fix task,
  executed, then re-verified; `task_retries` are kept in the loop's state, so a pause
  does not give a step a fresh set of retries.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_process
from tests.helpers.person import trust

# The scripted agent: its iteration's actions from actions.json beside it (a list per
# iteration; the last list repeats): `touch:F`, `rm:F`, `step:NAME` (marks a step done
# with the real command line), `env:F` (writes $MARK into F).
AGENT = r"""
import json, os, subprocess, sys
from pathlib import Path

here = Path(sys.argv[1])
sys.stdin.read()
count = here / "count"
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
plan = json.loads((here / "actions.json").read_text())
for action in plan[min(n, len(plan)) - 1]:
    verb, _, arg = action.partition(":")
    if verb == "touch":
        Path(arg).write_text("made\n")
    elif verb == "rm":
        Path(arg).unlink()
    elif verb == "step":
        subprocess.run([sys.executable, "-m", "ralphstate", "step", "done", arg], check=True)
    elif verb == "env":
        Path(arg).write_text(os.environ.get("MARK", "unset"))
print(f"agent iteration {n}: {plan[min(n, len(plan)) - 1]}", flush=True)
"""


def agent(tmp_path: Path, *iterations: list[str]) -> str:
    """The agent command that does `iterations` in turn."""
    here = tmp_path / "agent"
    here.mkdir(exist_ok=True)
    (here / "agent.py").write_text(AGENT, encoding="utf-8")
    (here / "actions.json").write_text(orjson.dumps(list(iterations)).decode())
    return shlex.join([sys.executable, str(here / "agent.py"), str(here)])


def rs(root: Path, *args: str, ok: bool = True) -> Any:
    """`ralphstate ARGS` as a real process; an `init` with checks is then trusted by
    the person (the test, tests/helpers/person.py): the process had no terminal."""
    done = run_process(list(args), cwd=root, timeout=120)
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    if args[0] == "init" and "--check" in args and done.returncode == 0:
        trust(root)
    return done


def run(root: Path, command: str, *args: str) -> tuple[int, dict[str, Any], str]:
    """`ralphstate run --json`: its exit code, its JSON result and its stderr."""
    done = run_process(["run", "--agent", command, "--json", *args], cwd=root, timeout=120)
    result = orjson.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, result, done.stderr.decode()


def state(root: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads((root / ".loop" / "state.json").read_bytes())
    return loaded


# -- 003: check-strict ----------------------------------------------------------------


def start_strict(root: Path) -> None:
    """A build that passes, and a feature still to do; one verification recorded."""
    (root / "build.ok").write_text("ok\n")
    rs(
        root,
        *("init", "Add the loop command", "--stall-limit", "10"),
        *("--check", "build passes", "test -f build.ok"),
        *("--check", "loop command exists", "test -f loop.txt"),
    )
    rs(root, "verify", ok=False)  # the feature's check fails: exit 1
    assert state(root)["criteriaStatus"] == {"build passes": True, "loop command exists": False}


@pytest.mark.parametrize("how", ["--strict", "config"])
def test_check_strict_stops_the_loop_when_an_iteration_breaks_a_check(
    project: Path, tmp_path: Path, how: str
) -> None:
    start_strict(project)
    if how == "config":
        (project / ".loop" / "config.toml").write_text("[run]\nstrict = true\n")
    command = agent(tmp_path, ["rm:build.ok"], [])

    code, result, err = run(project, command, "--max", "3", *([how] if how != "config" else []))

    assert (code, result["outcome"], result["reason"]) == (3, "paused", "check_failed"), err
    assert result["iterations"] == 1
    assert "build passes" in result["detail"] and "iteration 1" in result["detail"]
    assert (state(project)["status"], state(project)["pauseReason"]) == ("paused", "check_failed")


def test_without_strict_a_broken_check_only_warns_and_the_loop_goes_on(
    project: Path, tmp_path: Path
) -> None:
    start_strict(project)
    command = agent(tmp_path, ["rm:build.ok"], [])

    code, result, err = run(project, command, "--max", "2")

    assert (code, result["reason"], result["iterations"]) == (3, "run_max", 2), err


def test_strict_does_not_stop_on_work_not_done_yet(project: Path, tmp_path: Path) -> None:
    """The feature's check fails until the second iteration: that is the work, not a
    failure, and the loop completes."""
    start_strict(project)
    command = agent(tmp_path, [], ["touch:loop.txt"])

    code, result, err = run(project, command, "--max", "3", "--strict")

    assert (code, result["outcome"], result["iterations"]) == (0, "complete", 2), err


# -- 003: the agent command is the person's string --------------------------------------


def start_marked(root: Path) -> None:
    rs(root, "init", "Run the agent", "--check", "agent saw MARK", "grep -q set marked.txt")


def test_shell_syntax_in_the_agent_command_is_refused_in_one_sentence(
    project: Path, tmp_path: Path
) -> None:
    start_marked(project)
    command = "MARK=set " + agent(tmp_path, ["env:marked.txt"])

    code, result, err = run(project, command, "--max", "1")

    assert code == 1 and result == {}, err
    assert err.count("\n") == 1 and "--shell" in err and "MARK=" in err, err
    assert not (tmp_path / "agent" / "count").exists()
    assert state(project)["iteration"] == 0
    code, _, err = run(project, agent(tmp_path, []) + " && echo after", "--max", "1")
    assert code == 1 and "'&&'" in err and "--shell" in err, err


def test_with_shell_a_variable_and_an_and_list_run_as_a_shell_runs_them(
    project: Path, tmp_path: Path
) -> None:
    start_marked(project)
    command = "MARK=set " + agent(tmp_path, ["env:marked.txt"]) + " && echo after-the-agent"

    code, result, err = run(project, command, "--max", "2", "--shell")

    assert (code, result["outcome"], result["iterations"]) == (0, "complete", 1), err
    assert (project / "marked.txt").read_text() == "set"
    log = (project / ".loop" / "runs" / "0001.log").read_text()
    assert "after-the-agent" in log


# -- 004: gaps become fix steps -------------------------------------------------------

GAPS = ("StatsCard.tsx is used", "Dashboard links StatsAPI")


def start_gaps(root: Path) -> None:
    rs(
        root,
        *("init", "Add the stats dashboard", "-s", "build the dashboard", "--stall-limit", "10"),
        *("--check", GAPS[0], "test -f used.txt"),
        *("--check", GAPS[1], "test -f linked.txt"),
    )


def fix(name: str) -> str:
    return f"Fix: {name} (added by verification)"


def test_each_gap_a_verification_finds_becomes_a_fix_step_until_it_passes(
    project: Path, tmp_path: Path
) -> None:
    start_gaps(project)
    command = agent(
        tmp_path, ["step:build the dashboard"], ["touch:used.txt"], ["touch:linked.txt"]
    )

    code, result, err = run(project, command, "--max", "1")

    assert (code, result["reason"]) == (3, "run_max"), err
    now = state(project)
    assert now["steps"] == ["build the dashboard", fix(GAPS[0]), fix(GAPS[1])]
    assert now["remainingSteps"] == [fix(GAPS[0]), fix(GAPS[1])]
    assert now["fixSteps"] == [fix(GAPS[0]), fix(GAPS[1])]
    shown = rs(project, "status").stdout.decode()
    assert f"[>] {fix(GAPS[0])}" in shown and f"[ ] {fix(GAPS[1])}" in shown, shown

    code, result, err = run(project, command, "--max", "1")
    now = state(project)
    assert now["remainingSteps"] == [fix(GAPS[1])], now["steps"]  # once: not added again
    assert now["steps"].count(fix(GAPS[0])) == 1

    code, result, err = run(project, command, "--max", "1")
    assert (code, result["outcome"]) == (0, "complete"), err
    assert state(project)["remainingSteps"] == []
    report = rs(project, "report").stdout.decode()
    assert fix(GAPS[0]) in report and fix(GAPS[1]) in report, report


def test_no_fix_step_while_the_plan_still_has_open_steps(project: Path, tmp_path: Path) -> None:
    """A check that fails while planned steps are open is the work still to do."""
    start_gaps(project)

    code, _, err = run(project, agent(tmp_path, []), "--max", "1")

    assert code == 3, err
    assert state(project)["steps"] == ["build the dashboard"]
    assert state(project)["fixSteps"] == []


# -- 004: retries per step persist --------------------------------------------------------


def test_a_steps_retries_are_kept_in_the_state_across_runs(project: Path, tmp_path: Path) -> None:
    rs(
        project,
        *("init", "Fix T03", "-s", "T03", "--stall-limit", "10"),
        *("--check", "T03 passes", "test -f t03.txt"),
    )
    (project / ".loop" / "config.toml").write_text("[run]\nstep-retries = 3\n")
    command = agent(tmp_path, [])

    code, result, err = run(project, command, "--max", "2")
    assert (code, result["reason"], result["iterations"]) == (3, "run_max", 2), err
    assert state(project)["stepRetries"] == {"T03": 2}

    code, result, err = run(project, command, "--max", "5")

    assert (code, result["reason"], result["iterations"]) == (3, "step_retries", 1), err
    assert result["detail"] == '"T03" stayed next for 3 iterations'
    assert state(project)["stepRetries"] == {"T03": 3}


def test_with_shell_the_prompt_file_and_the_prompt_argument_reach_the_command(
    project: Path,
) -> None:
    rs(project, "init", "Run the agent", "--check", "agent saw the spec", "grep -q agent seen.txt")

    code, result, err = run(project, "X=1 cp {prompt_file} seen.txt", "--max", "1", "--shell")
    assert (code, result["outcome"]) == (0, "complete"), err

    (project / "seen.txt").unlink()
    rs(project, "init", "--force", "Run the agent", "--check", "agent saw it", "test -s seen.txt")
    command = 'X=1 printf %s "$1" > seen.txt'
    code, result, err = run(project, command, "--max", "1", "--shell", "--prompt-mode", "arg")
    assert (code, result["outcome"]) == (0, "complete"), err
    assert "Run the agent" in (project / "seen.txt").read_text()
