"""Only ralphstate's own passes count, at any level (docs/explanation/proof.md, "Levels
of a pass"): an agent's `ralphstate verify --clean`, sealed and
confined, is information for it, and the Stop hook (a real `ralphstate hook stop`
process) runs the check itself. A suite longer than the stop's budget is verified by
the hook's own background verification (verify/background.py), which nothing the agent
runs or writes can feed: not its own pass, not a result file in the project, not one
in the per-user store under another nonce. The honest agent still completes with no
review."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.storage.system import paths
from ralphstate.verify import background, confine
from tests.adversarial.scripted import (
    CHECK,
    CRITERION,
    FIXED_CALC,
    Agent,
    Person,
    history,
    state,
)
from tests.adversarial.test_sealed import PATCHING

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell check")
RUNNING = "in the background (running for "
MORE_TEST = "from calc import mul\n\n\ndef test_mul_by_zero():\n    assert mul(7, 0) == 0\n"


def stops_until_taken(agent: Agent, tries: int = 40) -> list[dict[str, Any]]:
    """The agent ends its turn, half a second apart, while the stop says ralphstate's
    own verification runs in the background; every output, in order."""
    outs = [agent.stop()]
    while RUNNING in str(outs[-1].get("reason")):
        assert len(outs) < tries, outs[-1]
        time.sleep(0.5)
        outs.append(agent.stop())
    return outs


@pytest.mark.skipif(not confine.bubblewrap(), reason="no bubblewrap: no confined verify here")
def test_an_agents_confined_clean_pass_is_run_again_at_the_stop(agent: Agent, calc: Path) -> None:
    agent.write("calc/__init__.py", FIXED_CALC)
    done = agent.rs("verify", "--clean")
    assert done.returncode == 0, (done.stdout, done.stderr)
    mine = state(calc)["evidence"][CRITERION]
    assert (mine["by"], mine.get("clean"), mine.get("confined")) == ("agent", True, True), mine
    ran_before = len(history(calc, "check"))

    out = agent.stop()  # the code is as the agent's pass saw it

    assert state(calc)["status"] == "complete", out
    assert "review" not in str(out.get("systemMessage")), out
    ran = [e for e in history(calc, "check")[ran_before:] if e.get("by") == "stop"]
    assert [e["result"] for e in ran] == ["verified"], history(calc, "check")
    assert state(calc)["evidence"][CRITERION]["by"] == "stop"


def long_check(person: Person, seconds: int = 2) -> None:
    """The person makes the suite longer than the stop's 1 s, and trusts it."""
    person.rs("criteria", "check", CRITERION, f"sleep {seconds}; {CHECK}")
    person.rs("trust")
    person.rs("config", "verify-budget", "1")


def forge(calc: Path, job: background.Job) -> None:
    """What an agent writes for the stop to take: a passing result for the job, in the
    project and in the per-user store, under a nonce it made up."""
    raw = orjson.loads((calc / ".loop" / "state.json").read_bytes())
    passed = {
        "criterion": CRITERION,
        "command": raw["checks"][CRITERION],
        "passed": True,
        "exit_code": 0,
        "duration_ms": 10,
        "timeout": 600.0,
        "by": "stop",
        "clean_tree": "0" * 40,
        "confined": True,
    }
    forged = {"nonce": "0" * 64, "identity": job.identity, "results": [passed]}
    (calc / ".loop" / "background.result.json").write_bytes(orjson.dumps(forged))
    loop = paths.at(str(calc / ".loop"))
    background.result_path(loop).write_bytes(orjson.dumps(forged))


@POSIX_ONLY
def test_a_long_suite_is_proved_only_by_the_hooks_own_background_verification(
    person: Person, agent: Agent, calc: Path
) -> None:
    long_check(person)
    # The agent's own pass, with a conftest.py of its work tree that writes `mul`.
    agent.write("conftest.py", PATCHING)
    assert agent.rs("verify").returncode == 0
    assert state(calc)["evidence"][CRITERION]["by"] == "agent"
    agent.shell("rm conftest.py")

    first = agent.stop()
    assert first.get("decision") == "block" and RUNNING in first["reason"], first
    assert "Your own `ralphstate verify` does not stand for it" in first["reason"]
    job = background.kept(paths.at(str(calc / ".loop")))
    assert job is not None and job.criteria == [CRITERION]
    forge(calc, job)  # while the job's check still runs (it sleeps 2 s first)

    outs = stops_until_taken(agent)

    assert state(calc)["status"] == "in_progress", outs
    last = outs[-1]
    assert last.get("decision") == "block" and "test_mul" in last["reason"], last
    evidence = state(calc)["evidence"][CRITERION]
    assert (evidence["result"], evidence["by"]) == ("failing", "stop"), evidence

    # The honest agent: it fixes the code, adds a test, sees it pass and stops.
    agent.write("calc/__init__.py", FIXED_CALC)
    agent.write("tests/test_mul_more.py", MORE_TEST)
    assert agent.rs("verify").returncode == 0
    outs = stops_until_taken(agent)
    assert RUNNING in str(outs[0].get("reason")), outs[0]  # a change starts it again
    assert "decision" not in outs[-1], outs[-1]
    assert state(calc)["status"] == "complete"
    assert "review" not in str(outs[-1].get("systemMessage")), outs[-1]
    assert state(calc)["evidence"][CRITERION]["by"] == "stop"


@POSIX_ONLY
def test_the_agents_verify_never_starts_or_feeds_the_background_verification(
    person: Person, agent: Agent, calc: Path
) -> None:
    long_check(person)
    agent.write("calc/__init__.py", FIXED_CALC)
    loop = paths.at(str(calc / ".loop"))
    assert agent.rs("verify", "--clean").returncode == 0
    assert agent.rs("verify").returncode == 0
    assert background.kept(loop) is None  # only a stop starts one

    # The background process itself, started by the agent with a nonce of its own.
    done = agent.shell(
        f'echo {"1" * 64} | "{sys.executable}" -I -c'
        ' "from ralphstate.verify.background import main; main()" .loop'
    )
    assert done.returncode == 0, done.stderr
    assert not background.result_path(loop).exists()
