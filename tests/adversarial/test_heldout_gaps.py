"""Held-out checks against the gaps an agent finds: what an agent reads when it asks
for them, and a held-out check slower than the Stop hook's verification time (the
client kills a hook that runs past its timeout, so the held-out check would never
be decided)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.adversarial.scripted import CRITERION, FIXED_CALC, Agent, Person, history, state


def test_the_agents_heldout_list_is_refused_for_what_it_is(calc: Path, agent: Agent) -> None:
    for what in ("list", "show"):
        done = agent.rs("heldout", what)
        assert done.returncode != 0
        told = done.stderr
        assert "shows the checks the agent must never see" in told, told
        assert "approves what proves this loop done" not in told, told
        assert "Traceback" not in told


def test_a_held_out_check_slower_than_the_hooks_time_is_cut_and_not_passed(
    calc: Path, agent: Agent, person: Person, tmp_path: Path
) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    slow = hidden / "slow_check.py"
    # Fails at once on the start tree (mul not written); on the work, it passes late.
    slow.write_text("from calc import mul\nassert mul(2, 5) == 10\nimport time\ntime.sleep(40)\n")
    command = f'"{sys.executable}" slow_check.py'
    person.rs("heldout", "add", CRITERION, "--command", command, "--file", str(slow))
    person.rs("config", "verify-budget", "8")
    agent.write("calc/__init__.py", FIXED_CALC)
    assert agent.rs("verify").returncode == 0

    started = time.monotonic()
    out = agent.stop()
    took = time.monotonic() - started

    assert took < 30, took  # within the hook's own budget, not the check's 40 seconds
    assert out.get("decision") == "block", out
    assert "a held-out check for criterion" in str(out.get("reason")), out
    assert state(calc)["status"] == "in_progress"
    assert [e["criterion"] for e in history(calc, "heldout_failed")] == [CRITERION]
    told = person.rs("heldout", "show", "h1").stdout
    assert "verifyBudget" in told and "counts as not passed" in told, told
