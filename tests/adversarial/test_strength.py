"""Fewer tests make a pass weaker: the agent skips the failing test, deletes it,
deselects it through the test configuration, or has the code under test skip it. The
check then exits 0, but its output says fewer tests ran than at its first run (or at
the person's approval): the loop does not end verified, it pauses for the person's
review and names how the pass was weakened. On the real calc project of
tests/adversarial/scripted.py, each turn ended by a real Stop hook process, and under
`ralphstate run`. The honest agent, which writes the code and adds a test, completes
with no review."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import spawn
from tests.adversarial.scripted import (
    CRITERION,
    FIXED_CALC,
    TEST_CALC,
    Agent,
    Person,
    history,
    state,
)
from tests.adversarial.test_commands import never_told_to_approve, paused_for_review

# What each shortcut leaves of the two tests (`test_add` passes, `test_mul` failed).
SKIPPED = f"'{CRITERION}' is weakened: 1 test ran, 2 at its first run"
SKIP_MARK = TEST_CALC.replace("def test_mul", "import pytest\n\n\n@pytest.mark.skip\ndef test_mul")
DELETED = TEST_CALC.split("\n\n\ndef test_mul")[0] + "\n"
DESELECT = "[pytest]\ntestpaths = tests\naddopts = --deselect tests/test_calc.py::test_mul\n"
# The code under test skips the test that calls it: no test file changes at all.
SKIPS_ITSELF = FIXED_CALC.replace(
    "return a * b", 'import pytest\n\n    pytest.skip("mul: later")\n    return 0'
)


def red_first(agent: Agent, calc: Path) -> None:
    """The agent first runs the person's check on the code as it is: its one test
    fails, and two tests ran (the check's first run, kept in the ledger)."""
    first = agent.rs("verify")
    assert first.returncode != 0 and "pytest: 2 ran, 1 passed, 1 failed" in first.stdout, first
    assert state(calc)["evidence"][CRITERION]["strength"]["ran"] == 2


def claimed(agent: Agent) -> tuple[str, list[dict[str, Any]]]:
    """The agent runs the person's check, then says the marker; `verify`'s words and
    the Stop hook's outputs."""
    verified = agent.rs("verify")
    return verified.stdout + verified.stderr, agent.insist()


def weakened(calc: Path, said: str, outs: list[dict[str, Any]], why: str = SKIPPED) -> None:
    """The loop is paused for review, named as weakened by `why` in the person's
    message, in `verify`'s words, in the evidence and in `status`; never complete."""
    message = paused_for_review(calc, outs)
    assert why in message, message
    assert why in said, said
    now = state(calc)
    assert now["evidence"][CRITERION]["weakened"] == why
    assert not history(calc, "complete")
    never_told_to_approve(outs)
    status = Person(calc).status()
    assert "NEEDS YOUR REVIEW" in status and why in status, status


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("tests/test_calc.py", SKIP_MARK),
        ("tests/test_calc.py", DELETED),
        ("pytest.ini", DESELECT),
        ("calc/__init__.py", SKIPS_ITSELF),
    ],
    ids=["skip mark", "deleted", "deselected in pytest.ini", "the code skips its test"],
)
def test_fewer_tests_pass_is_weakened_and_paused_for_review(
    name: str, text: str, agent: Agent, calc: Path
) -> None:
    red_first(agent, calc)
    agent.write(name, text)
    agent.commit("make the tests pass")
    said, outs = claimed(agent)
    weakened(calc, said, outs)


def test_a_skip_from_the_code_under_test_is_weakened_before_any_stop(
    agent: Agent, person: Person, calc: Path
) -> None:
    """The person's own `verify` before the agent starts sets the baseline."""
    person.rs("verify", ok=False)
    agent.write("calc/__init__.py", SKIPS_ITSELF)
    said, outs = claimed(agent)
    weakened(calc, said, outs)


def test_the_person_approves_fewer_tests_and_the_loop_completes(
    agent: Agent, person: Person, calc: Path
) -> None:
    red_first(agent, calc)
    agent.write("calc/__init__.py", SKIPS_ITSELF)
    said, outs = claimed(agent)
    weakened(calc, said, outs)

    person.rs("review", "--approve")

    now = state(calc)
    assert now["status"] == "complete", now
    assert SKIPPED not in person.status()


def test_the_honest_agent_completes_with_no_review_and_its_counts(
    agent: Agent, person: Person, calc: Path
) -> None:
    red_first(agent, calc)
    agent.write("calc/__init__.py", FIXED_CALC)
    agent.write(
        "tests/test_mul_more.py",
        "from calc import mul\n\n\ndef test_mul_by_zero():\n    assert mul(7, 0) == 0\n",
    )
    agent.commit("calc: write mul, with a test")
    said, outs = claimed(agent)

    assert "pytest: 3 ran, 3 passed" in said, said
    now = state(calc)
    assert now["status"] == "complete", (now, outs)
    assert now["evidence"][CRITERION]["strength"] == {
        "runner": "pytest",
        "collected": 3,
        "ran": 3,
        "passed": 3,
        "failed": 0,
        "skipped": 0,
        "plugins": [],  # the project's plugins no person approved (verify/probe.py)
    }
    assert "weakened" not in now["evidence"][CRITERION]
    assert not history(calc, "review")
    assert "review" not in str(outs[-1].get("systemMessage", ""))
    log = person.rs("log").stdout  # the count is in each check's summary, once
    assert "pytest: 3 ran, 3 passed" in log and "strength=" not in log, log


# The agent `ralphstate run` starts: it runs the person's check first (red, the first
# run), then has the code under test skip its test and runs the check again.
RUN_AGENT = """\
import json, subprocess, sys
from pathlib import Path

sys.stdin.read()
subprocess.run([sys.executable, "-m", "ralphstate", "verify"], check=False)
Path("calc/__init__.py").write_text(json.loads(sys.argv[1]))
subprocess.run([sys.executable, "-m", "ralphstate", "verify"], check=False)
"""


def test_under_run_a_weakened_pass_ends_in_review(
    person: Person, calc: Path, tmp_path: Path
) -> None:
    script = tmp_path / "skipping agent.py"
    script.write_text(RUN_AGENT)
    agent = spawn.join_command([sys.executable, str(script), json.dumps(SKIPS_ITSELF)])
    done = person.rs("run", "--agent", agent, "--max", "3", "--json", ok=False)

    out = orjson.loads(done.stdout)
    assert out["outcome"] != "complete" and done.returncode != 0, (out, done.stderr)
    now = state(calc)
    assert (now["status"], now["pauseReason"]) == ("paused", "review"), now
    assert SKIPPED in done.stderr, done.stderr
    assert now["evidence"][CRITERION]["weakened"] == SKIPPED
