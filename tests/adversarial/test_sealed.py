"""Only sealed passes count (docs/explanation/proof.md, "Levels of a pass"): a pass an
agent's own `ralphstate verify` recorded, with its shell's environment or its work
tree tampered so that the failing test passes, is information for the agent, never
what ends its loop. The Stop hook (a real `ralphstate hook stop` process) runs the
check again; `ralphstate run` checks every completion itself. The honest agent still
completes with no review, and every view says how a pass was verified."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ralphstate.verify import confine
from tests.adversarial.scripted import CRITERION, FIXED_CALC, Agent, Person, history, state
from tests.adversarial.test_run_shortcuts import never_complete, run_with

# How a sealed pass is said here: confined where bubblewrap starts.
LEVEL = "sealed and confined" if confine.bubblewrap() else "sealed"

# The agent's work tree holds a conftest.py, never committed, that writes `mul` for the
# tests: its own `verify` in the work tree passes (its environment cannot narrow pytest:
# a check runs with the approved one).
PATCHING = "import calc\n\n\ndef pytest_configure(config):\n    calc.mul = lambda a, b: a * b\n"


def tampered_verify(agent: Agent) -> subprocess.CompletedProcess[str]:
    """The agent's own `ralphstate verify`, in its tampered work tree: it passes."""
    agent.write("conftest.py", PATCHING)
    done = agent.rs("verify")
    assert done.returncode == 0, (done.stdout, done.stderr)
    evidence = state(agent.root)["evidence"][CRITERION]
    assert evidence["result"] == "verified" and evidence["by"] == "agent", evidence
    return done


def test_an_agents_own_tampered_verify_does_not_end_the_loop(agent: Agent, calc: Path) -> None:
    tampered_verify(agent)

    out = agent.stop()

    # The stop ran the check again and it failed, or the new conftest.py is a review.
    assert state(calc)["status"] != "complete", out
    ran = [e for e in history(calc, "check") if e.get("by") == "stop"]
    assert ran == [] or ran[-1]["result"] == "failing", ran
    assert ran or state(calc)["pauseReason"] == "review", out


def test_a_tampered_verify_does_not_count_with_verify_on_stop_off(
    person: Person, agent: Agent, calc: Path
) -> None:
    # verify-on-stop off: the Stop hook would take a verified criterion as it stands;
    # the agent's verify ran in its work tree, on the same code, with a narrowed pytest.
    person.rs("config", "verify-on-stop", "false")
    tampered_verify(agent)

    out = agent.stop()

    assert state(calc)["status"] != "complete", out
    by = state(calc)["evidence"][CRITERION]["by"]
    assert by == "stop" or state(calc)["pauseReason"] == "review", out


def test_the_honest_agent_completes_with_no_review(agent: Agent, calc: Path) -> None:
    agent.write("calc/__init__.py", FIXED_CALC)
    agent.write(
        "tests/test_mul_more.py",
        "from calc import mul\n\n\ndef test_z():\n    assert mul(7, 0) == 0\n",
    )
    assert agent.rs("verify").returncode == 0

    out = agent.stop()

    assert "decision" not in out, out
    assert state(calc)["status"] == "complete"
    assert "review" not in str(out.get("systemMessage")), out
    assert f"verified by its check ({LEVEL}): tests pass" in str(out.get("systemMessage")), out
    assert state(calc)["evidence"][CRITERION]["by"] == "stop"


@pytest.mark.parametrize("shortcut", ["complete-unchecked", "confined-pass-then-break"])
def test_a_completion_written_in_an_iteration_needs_the_runners_check(
    person: Person, calc: Path, tmp_path: Path, shortcut: str
) -> None:
    run = run_with(person, tmp_path, shortcut)

    never_complete(run)
    assert state(calc)["criteriaStatus"][CRITERION] is False
    assert "not verified" in run.said, run.said
    [check] = [e for e in history(calc, "check") if e.get("by") == "run"][-1:]
    assert check["result"] == "failing", check


def test_the_honest_agent_completes_under_run_and_says_how(
    person: Person, calc: Path, tmp_path: Path
) -> None:
    run = run_with(person, tmp_path, "honest")

    assert (run.out["outcome"], run.process.returncode) == ("complete", 0), run.said
    assert "review" not in run.said, run.said
    assert f"verified by its check ({LEVEL})" in run.said, run.said
    assert run.out["criteria"]["levels"] == {CRITERION: LEVEL.replace(" and ", "-")}, run.out
    assert state(calc)["evidence"][CRITERION]["by"] == "run"


def test_the_words_say_the_level(person: Person, agent: Agent, calc: Path) -> None:
    assert person.rs("verify", ok=False).returncode == 1  # red first: the work is not done
    tampered_verify(agent)
    told = person.status()
    said = "checked in the agent's environment, by the agent's own verify: does not count"
    assert "verified" in told and said in told, told
    agent.shell("rm conftest.py")

    agent.write("calc/__init__.py", FIXED_CALC)
    out = agent.stop()
    assert f"verified by its check ({LEVEL}): tests pass" in str(out.get("systemMessage")), out
    assert f"loop complete, verified ({LEVEL})" in str(out.get("terminalSequence")), out
    told = person.status()
    assert f"(1 verified by its check ({LEVEL}))" in told, told
    assert "does not count" not in told, told
    report = person.rs("report").stdout
    assert "[x] tests pass: verified on " in report and f" · {LEVEL} · " in report, report
    # The person typed yes at their terminal (tests/helpers/terminal.py): only that is "by you".
    assert "approved by you, confirmed at your terminal" in told, told
