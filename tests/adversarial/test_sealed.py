"""Only sealed passes count (docs/explanation/proof.md, "Levels of a pass"): a pass an
agent's own `ralphstate verify` recorded, with its shell's environment or its work
tree tampered so that the failing test passes, is information for the agent, never
what ends its loop. The Stop hook (a real `ralphstate hook stop` process) runs the
check again; `ralphstate run` checks every completion itself. The honest agent still
completes with no review, and every view says how a pass was verified."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.adversarial.scripted import CRITERION, FIXED_CALC, Agent, Person, history, state
from tests.adversarial.test_run_shortcuts import never_complete, run_with

# The agent's shell narrows pytest to the test that passes; the person's does not.
NARROWED = {"PYTEST_ADDOPTS": "-k test_add"}


def tampered_verify(agent: Agent) -> subprocess.CompletedProcess[str]:
    """The agent's own `ralphstate verify --clean` with a narrowed pytest: it passes."""
    done = agent.rs("verify", "--clean", **NARROWED)
    assert done.returncode == 0, (done.stdout, done.stderr)
    evidence = state(agent.root)["evidence"][CRITERION]
    assert evidence["result"] == "verified" and evidence["by"] == "agent", evidence
    return done


def test_an_agents_own_tampered_verify_does_not_end_the_loop(agent: Agent, calc: Path) -> None:
    tampered_verify(agent)

    out = agent.stop()

    assert out.get("decision") == "block", out
    assert state(calc)["status"] == "in_progress"
    assert state(calc)["criteriaStatus"][CRITERION] is False
    [check] = [e for e in history(calc, "check") if e.get("by") == "stop"]
    assert check["result"] == "failing", check


def test_a_tampered_verify_does_not_count_with_verify_on_stop_off(
    person: Person, agent: Agent, calc: Path
) -> None:
    # verify-on-stop off: the Stop hook would take a verified criterion as it stands;
    # the agent's verify ran in its work tree, on the same code, with a narrowed pytest.
    person.rs("config", "verify-on-stop", "false")
    assert agent.rs("verify", **NARROWED).returncode == 0
    assert state(calc)["evidence"][CRITERION]["by"] == "agent"

    out = agent.stop()

    assert out.get("decision") == "block", out
    assert state(calc)["status"] == "in_progress"
    assert state(calc)["evidence"][CRITERION]["by"] == "stop"


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
    assert "verified by its check (sealed): tests pass" in str(out.get("systemMessage")), out
    assert state(calc)["evidence"][CRITERION]["by"] == "stop"


def test_a_completion_written_in_an_iteration_needs_the_runners_check(
    person: Person, calc: Path, tmp_path: Path
) -> None:
    run = run_with(person, tmp_path, "complete-unchecked")

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
    assert "verified by its check (sealed)" in run.said, run.said
    assert run.out["criteria"]["levels"] == {CRITERION: "sealed"}, run.out
    assert state(calc)["evidence"][CRITERION]["by"] == "run"


def test_the_words_say_the_level(person: Person, agent: Agent, calc: Path) -> None:
    assert person.rs("verify", ok=False).returncode == 1  # red first: the work is not done
    tampered_verify(agent)
    told = person.status()
    assert "verified" in told and "sealed, by the agent's own verify: does not count" in told

    agent.write("calc/__init__.py", FIXED_CALC)
    out = agent.stop()
    assert "verified by its check (sealed): tests pass" in str(out.get("systemMessage")), out
    assert "loop complete, verified (sealed)" in str(out.get("terminalSequence")), out
    told = person.status()
    assert "(1 verified by its check (sealed))" in told, told
    assert "does not count" not in told, told
    report = person.rs("report").stdout
    assert "[x] tests pass: verified on " in report and " · sealed · " in report, report
    assert "approved by you" not in told and "approved outside the agent" in told, told
