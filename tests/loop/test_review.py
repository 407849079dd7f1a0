"""The person's review (loop/proofreview.py, `ralphstate review`) and endings outside
ralphstate (hooks/outside.py): loops made as a person makes them, stops through real
`ralphstate hook stop` processes, agents posing through their variables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.storage.peruser import ledger
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.checks import PASS
from tests.helpers.loops import SID, load, own, stop

AGENT = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": SID}


@pytest.fixture
def loop(project: Path, rs: Any) -> Path:
    """A person's loop whose one criterion has a passing check, owned by the session."""
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "tests pass", PASS).code == 0
    own(project)
    return project


def as_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in AGENT.items():
        monkeypatch.setenv(name, value)


def as_person(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AGENT:
        monkeypatch.delenv(name, raising=False)


def test_an_agents_removed_check_pauses_the_claim_and_the_person_approves(
    loop: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_agent(monkeypatch)
    assert rs("criteria", "check", "tests pass", "--remove").code == 0
    assert rs("criteria", "set", "tests pass", "true").code == 0
    refused = rs("review", "--approve")
    assert refused.code == 1 and "only the person" in refused.err
    as_person(monkeypatch)
    out = stop(loop, "Done. <loop-complete>")
    assert out is not None and "decision" not in out
    assert (load(loop)["status"], load(loop)["pauseReason"]) == ("paused", "review")
    said = out["systemMessage"]
    assert "the check of 'tests pass' (`" in said and "was removed" in said
    assert f"claude session {SID[:8]}" in said
    shown = rs("review")
    assert "needs your review" in shown.out and "- 'tests pass': " in shown.out
    assert rs("review", "--approve").code == 0
    assert load(loop)["status"] == "complete"  # every criterion stood met
    assert "Nothing to review" in rs("review").out
    (approval,) = ledger.read(LoopPaths(loop, loop / ".loop"))["approvals"]  # type: ignore[index]
    assert approval["by"] == {"kind": "person", "present": "terminal"}
    assert "was removed" in approval["changes"][0]


def test_revert_puts_the_approved_check_back(
    loop: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_agent(monkeypatch)
    assert rs("criteria", "check", "tests pass", "true").code == 0
    assert rs("criteria", "set", "tests pass", "true").code == 0
    as_person(monkeypatch)
    stop(loop, "<loop-complete>")
    assert load(loop)["pauseReason"] == "review"
    assert rs("review", "--revert").code == 0
    state = load(loop)
    assert (state["status"], state["checks"]["tests pass"]) == ("in_progress", PASS)


def test_a_persons_own_change_needs_no_review(loop: Path, rs: Any) -> None:
    assert rs("criteria", "check", "tests pass", "--remove").code == 0
    assert rs("criteria", "set", "tests pass", "true").code == 0
    stop(loop, "<loop-complete>")
    assert load(loop)["status"] == "complete"


def test_a_hand_edited_completion_is_told_once_and_can_be_resumed(loop: Path, rs: Any) -> None:
    path = loop / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw["status"] = "complete"
    path.write_bytes(orjson.dumps(raw))
    out = stop(loop, "<loop-complete>")
    assert out is not None and "decision" not in out
    assert "ended outside ralphstate" in out["systemMessage"]
    assert stop(loop, "<loop-complete>") is None  # once
    assert "ENDED OUTSIDE RALPHSTATE, NOT VERIFIED" in rs("status").out
    events = [
        orjson.loads(x)["event"]
        for x in (loop / ".loop" / "history.jsonl").read_bytes().splitlines()
    ]
    assert "ended_outside" in events
    assert rs("resume").code == 0
    assert load(loop)["status"] == "in_progress"
    assert not ledger.ended_outside(LoopPaths(loop, loop / ".loop"), load(loop))


def test_an_agents_pause_and_cancel_are_the_agents(
    loop: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_agent(monkeypatch)
    assert rs("pause").code == 0
    assert load(loop)["pauseReason"] == "agent"
    assert rs("resume").code == 0
    assert rs("cancel").code == 0
    as_person(monkeypatch)
    out = stop(loop, "bye")
    assert out is not None
    assert f"the agent itself (claude session {SID[:8]}) cancelled the loop" in out["systemMessage"]
    assert f"[claude session {SID[:8]}]" in rs("log").out


def test_a_pending_review_is_the_first_line_of_status_and_resume(
    loop: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent replaced the check: what the person sees first, in `status` and after
    `resume`, is the review that alone lets the loop complete."""
    as_agent(monkeypatch)
    assert rs("criteria", "check", "tests pass", "true").code == 0
    assert rs("criteria", "set", "tests pass", "true").code == 0
    as_person(monkeypatch)
    out = stop(loop, "Done. <loop-complete>")
    assert out is not None
    assert (load(loop)["status"], load(loop)["pauseReason"]) == ("paused", "review")
    headline = (
        "NEEDS YOUR REVIEW: what proves this loop done changed (1 change by claude session"
        f" {SID[:8]}); it cannot complete until you run `ralphstate review`."
    )
    shown = rs("status")
    assert shown.code == 0 and shown.out.splitlines()[0] == headline, shown.out
    resumed = rs("resume")
    assert resumed.code == 0
    assert resumed.out.splitlines() == ["in progress: iteration 0/20", headline], resumed.out
    assert rs("review", "--approve").code == 0
    assert "NEEDS YOUR REVIEW" not in rs("status").out
