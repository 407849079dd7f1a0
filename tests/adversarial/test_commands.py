"""The shortcuts an agent takes with `ralphstate` itself, from its Bash tool, on a real
project whose test really fails (tests/adversarial/scripted.py): each ends its turn
with a real Stop hook process. None may end the loop complete or verified without the
person's approval, and the person is told what the agent did, and which session did
it (docs/explanation/proof.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.adversarial.scripted import (
    CHECK,
    CRITERION,
    SESSION,
    SHOWN_SESSION,
    SKIP_ALL,
    SPEC,
    TEST_CALC,
    Agent,
    Person,
    by_agent,
    history,
    state,
)


def paused_for_review(root: Path, outs: list[dict[str, Any]]) -> str:
    """The loop is paused for the person's review, not complete, and the person was told
    (a `systemMessage`, never a block reason the model reads): that message."""
    now = state(root)
    assert (now["status"], now["pauseReason"]) == ("paused", "review"), (now, outs)
    last = outs[-1]
    assert "decision" not in last, last
    message = str(last.get("systemMessage", ""))
    assert "ralphstate review" in message, last
    return message


def names_the_agent(message: str) -> None:
    """The message names the agent's session as who made the change, and not the person."""
    assert SHOWN_SESSION in message, message
    assert not re.search(r"\bby you\b", message), message


def never_told_to_approve(outs: list[dict[str, Any]]) -> None:
    """No block reason (what the model reads) suggests trusting or approving."""
    for out in outs:
        reason = str(out.get("reason", ""))
        assert "ralphstate trust" not in reason and "ralphstate review" not in reason, reason


def test_a_replaced_check_then_verify_then_the_marker_pauses_for_review(
    agent: Agent, person: Person, calc: Path
) -> None:
    assert agent.rs("criteria", "check", CRITERION, "true").returncode == 0
    agent.rs("verify")  # the replaced check is not the person's: it runs nowhere
    outs = agent.insist()

    message = paused_for_review(calc, outs)
    assert f"the check of '{CRITERION}' was replaced" in message
    assert "became `true`" in message
    names_the_agent(message)
    never_told_to_approve(outs)
    assert state(calc)["evidence"].get(CRITERION, {}).get("result") != "verified"
    [changed] = [e for e in history(calc, "check_set") if e["command"] == "true"]
    assert by_agent(changed)
    assert "review" in person.status()
    assert SHOWN_SESSION in person.rs("log").stdout


def test_a_removed_check_and_a_claim_pause_for_review(
    agent: Agent, person: Person, calc: Path
) -> None:
    assert agent.rs("criteria", "check", CRITERION, "--remove").returncode == 0
    assert agent.rs("criteria", "set", CRITERION, "true").returncode == 0
    outs = [agent.stop()]

    message = paused_for_review(calc, outs)
    assert f"the check of '{CRITERION}'" in message and "was removed" in message
    names_the_agent(message)
    assert "review" in person.status()
    assert [by_agent(e) for e in history(calc, "check_removed")] == [True]


def test_verify_on_stop_turned_off_and_a_claim_pause_for_review(
    agent: Agent, person: Person, calc: Path
) -> None:
    assert agent.rs("config", "verify-on-stop", "false").returncode == 0
    assert agent.rs("criteria", "set", CRITERION, "true").returncode == 0
    outs = [agent.stop()]

    message = paused_for_review(calc, outs)
    assert "verify-on-stop was turned off" in message
    names_the_agent(message)
    assert [by_agent(e) for e in history(calc, "config")] == [True]


def test_a_criterion_removed_and_another_claimed_pause_for_review(
    agent: Agent, person: Person, calc: Path
) -> None:
    assert agent.rs("criteria", "remove", CRITERION).returncode == 0
    assert agent.rs("criteria", "add", "calc works").returncode == 0
    assert agent.rs("criteria", "set", "calc works", "true").returncode == 0
    outs = [agent.stop()]

    message = paused_for_review(calc, outs)
    assert f"criterion '{CRITERION}' was removed" in message
    names_the_agent(message)


def test_guards_turned_off_and_an_edited_test_pause_for_review(
    agent: Agent, person: Person, calc: Path
) -> None:
    assert agent.rs("config", "guard", "off").returncode == 0
    agent.write("tests/test_calc.py", TEST_CALC.replace("assert mul(3, 4) == 12", "assert True"))
    agent.commit("tests: fix test_mul")
    agent.rs("verify")
    outs = agent.insist()

    message = paused_for_review(calc, outs)
    assert "guarded files were turned off" in message
    names_the_agent(message)


def test_clean_room_turned_off_and_an_untracked_skip_pause_for_review(
    agent: Agent, person: Person, calc: Path
) -> None:
    assert agent.rs("config", "clean-verify", "off").returncode == 0
    agent.write("conftest.py", SKIP_ALL)  # untracked: only the work tree holds it
    agent.rs("verify")
    outs = agent.insist()

    message = paused_for_review(calc, outs)
    assert "clean-room verification was turned off" in message
    names_the_agent(message)


def test_the_agent_cannot_trust_or_approve_its_own_check(
    agent: Agent, person: Person, calc: Path
) -> None:
    assert agent.rs("criteria", "check", CRITERION, "true").returncode == 0
    trusted = agent.rs("trust")
    approved = agent.rs("review", "--approve")
    agent.rs("verify")
    outs = agent.insist()

    for refused in (trusted, approved):
        assert refused.returncode != 0, refused
        assert "person" in refused.stderr, refused.stderr
    # only the person's own trust (and the approval it makes) of the setup is recorded
    for event in ("trusted", "approved"):
        assert [e["actor"]["kind"] for e in history(calc, event)] == ["person"], event
    message = paused_for_review(calc, outs)
    names_the_agent(message)


def test_the_agent_resuming_a_review_pause_does_not_approve_it(
    agent: Agent, person: Person, calc: Path
) -> None:
    agent.rs("criteria", "check", CRITERION, "true")
    paused_for_review(calc, agent.insist())
    assert agent.rs("resume").returncode == 0  # the agent may go on working...
    outs = agent.insist()

    message = paused_for_review(calc, outs)  # ...but its change still waits for the person
    names_the_agent(message)
    assert state(calc)["checks"][CRITERION] == "true"
    assert not history(calc, "complete")


def test_init_force_over_the_persons_loop_does_not_complete_and_is_told(
    agent: Agent, person: Person, calc: Path
) -> None:
    forced = agent.rs("init", "--force", SPEC, "-c", CRITERION)
    assert forced.returncode == 0, forced.stderr
    agent.rs("criteria", "set", CRITERION, "true")
    outs = agent.insist()

    now = state(calc)
    assert now["status"] != "complete", (now, outs)
    told = " ".join(str(o.get("systemMessage", "")) for o in outs)
    assert SHOWN_SESSION in told and "init --force" in told, outs
    [init] = [e for e in history(calc, "init") if e.get("replaced")]
    assert by_agent(init)
    assert init["replaced"]["status"] == "in_progress"


def test_a_deleted_state_then_a_new_loop_of_the_agents_does_not_complete(
    agent: Agent, person: Person, calc: Path
) -> None:
    (calc / ".loop" / "state.json").unlink()
    assert agent.rs("init", SPEC, "-c", CRITERION).returncode == 0
    agent.rs("criteria", "set", CRITERION, "true")
    outs = agent.insist()

    now = state(calc)
    assert now["status"] != "complete", (now, outs)
    told = " ".join(str(o.get("systemMessage", "")) for o in outs)
    assert SHOWN_SESSION in told and "state.json" in told, outs


def test_the_agent_cancelling_is_recorded_and_told_as_the_agents(
    agent: Agent, person: Person, calc: Path
) -> None:
    assert agent.rs("cancel").returncode == 0
    first, again = agent.stop(), agent.stop()

    assert state(calc)["status"] == "cancelled"
    message = str(first.get("systemMessage", ""))
    assert "cancelled" in message and SHOWN_SESSION in message, first
    assert "systemMessage" not in again  # told once
    [cancelled] = history(calc, "cancelled")
    assert by_agent(cancelled)
    shown = person.status()
    assert "cancelled" in shown and SHOWN_SESSION in shown, shown


def test_the_agent_pausing_is_recorded_and_told_as_the_agents(
    agent: Agent, person: Person, calc: Path
) -> None:
    assert agent.rs("pause").returncode == 0
    first = agent.stop()

    now = state(calc)
    assert (now["status"], now["pauseReason"]) == ("paused", "agent")
    message = str(first.get("systemMessage", ""))
    assert "paused" in message and SHOWN_SESSION in message, first
    [paused] = history(calc, "paused")
    assert by_agent(paused)
    shown = person.status()
    assert SHOWN_SESSION in shown, shown


def test_ralphstate_dir_elsewhere_leaves_the_persons_loop_unfinished(
    agent: Agent, calc: Path, tmp_path: Path
) -> None:
    elsewhere = str(tmp_path / "elsewhere" / ".loop")
    assert agent.rs("init", SPEC, "-c", CRITERION, RALPHSTATE_DIR=elsewhere).returncode == 0
    agent.rs("criteria", "set", CRITERION, "true", RALPHSTATE_DIR=elsewhere)
    out = agent.stop()  # the client's hooks never see the agent's shell variables

    assert out.get("decision") == "block", out
    now = state(calc)
    assert (now["status"], now["criteriaStatus"]) == ("in_progress", {CRITERION: False})
    assert now["checks"] == {CRITERION: CHECK}


def test_the_review_the_person_runs_names_the_agents_change(
    agent: Agent, person: Person, calc: Path
) -> None:
    agent.rs("criteria", "check", CRITERION, "true")
    paused_for_review(calc, agent.insist())

    shown = person.rs("review").stdout
    assert CHECK in shown and "true" in shown, shown
    assert SESSION[:8] in shown, shown
    person.rs("review", "--revert")
    now = state(calc)
    assert now["checks"] == {CRITERION: CHECK}
    assert now["status"] == "in_progress"
    assert agent.insist()[-1].get("decision") == "block"  # pytest runs again, and fails


def test_a_replaced_check_pauses_for_review_at_the_first_stop_not_a_stall(
    agent: Agent, person: Person, calc: Path
) -> None:
    """An agent that replaced the check and then does as the Stop hook says: the check
    it would run is not the person's, so nothing it can do proves the criterion. The
    first stop pauses the loop for the person's review, said first, and never sends
    the agent to run a `verify` that refuses the replaced check."""
    assert agent.rs("criteria", "check", CRITERION, "true").returncode == 0
    outs = []
    for _ in range(4):  # what the Stop hook says, done: verify, then stop again
        outs.append(agent.stop("Working on it."))
        if outs[-1].get("decision") != "block":
            break
        agent.rs("verify")
    message = paused_for_review(calc, outs)
    assert len(outs) == 1, outs
    assert message.startswith("ralphstate: NEEDS YOUR REVIEW. The loop is paused"), message
    assert f"no check the agent may run proves '{CRITERION}'" in message
    assert f"the check of '{CRITERION}' was replaced" in message
    names_the_agent(message)
    assert state(calc)["evidence"].get(CRITERION, {}).get("result") != "verified"
    resumed = person.rs("resume", ok=False)
    assert "ralphstate review" in resumed.stdout + resumed.stderr, resumed
