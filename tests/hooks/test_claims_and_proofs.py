"""A claim never passes for a proof: verify-on-stop is the default for criteria with a
check trusted here, turning it off is an explicit setting `status` shows, and every
message tells "verified by its check" from "claimed". Loops are made as a person makes
them (`init`, `criteria add --check`), stops are real `ralphstate hook stop` processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from ralphstate.core import restore
from ralphstate.core import state as st
from ralphstate.storage.peruser import registry, truststore
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.checks import FAIL, PASS
from tests.helpers.loops import SID, load, own, stop
from tests.helpers.person import at_terminal_proof


@pytest.fixture
def claimed(project: Path, rs: Any) -> Path:
    """A loop started the ordinary way: "tests pass" has a check that fails today,
    "docs written" has none; the agent claims both."""
    assert rs("init", "Build it", "-c", "docs written").code == 0
    assert rs("criteria", "add", "tests pass", "--check", FAIL).code == 0
    own(project)
    assert rs("criteria", "set", "tests pass", "true").code == 0
    assert rs("criteria", "set", "docs written", "true").code == 0
    return project


def test_a_claimed_criterion_whose_check_fails_does_not_complete_the_loop(claimed: Path) -> None:
    out = stop(claimed)
    assert out is not None and out["decision"] == "block", out
    assert "1 failed" in out["reason"] and "- tests pass" in out["reason"]
    state = load(claimed)
    assert state["status"] == "in_progress"
    assert state["criteriaStatus"]["tests pass"] is False


def test_the_block_reason_tells_the_model_to_run_the_check(claimed: Path) -> None:
    out = stop(claimed)
    assert out is not None
    assert '  ralphstate verify "tests pass"\n' in out["reason"]
    assert 'criteria set "tests pass"' not in out["reason"]


def test_a_passing_check_completes_and_the_message_tells_proofs_from_claims(
    claimed: Path, rs: Any
) -> None:
    assert rs("criteria", "check", "tests pass", PASS).code == 0
    assert rs("criteria", "set", "tests pass", "true").code == 0
    out = stop(claimed)
    assert out is not None and "decision" not in out, out
    assert out["systemMessage"].startswith("ralphstate: loop complete after ")
    assert out["systemMessage"].endswith(
        "; verified by its check (checked in the agent's environment): tests pass;"
        " claimed, without a check: docs written."
    )
    assert load(claimed)["evidence"]["tests pass"]["result"] == "verified"
    shown = rs("status").out
    assert (
        "criteria 2/2 (1 verified by its check (checked in the agent's environment), 1 claimed):"
        in shown
    )
    assert "verify on stop: on (the default)" in shown


def test_turning_verify_on_stop_off_is_explicit_and_shown(claimed: Path, rs: Any) -> None:
    assert rs("config", "verify-on-stop", "false").out == "verify-on-stop: false\n"
    assert load(claimed)["verifyOnStop"] is False
    shown = rs("status").out
    assert "verify on stop: OFF (ralphstate config verify-on-stop false)" in shown
    out = stop(claimed)
    assert out is not None and "decision" not in out, out
    assert out["systemMessage"].endswith(
        "; claimed, not verified (verify-on-stop is off): tests pass;"
        " claimed, without a check: docs written."
    )


def test_a_new_loop_writes_the_default_as_null(project: Path, rs: Any) -> None:
    rs("init", "x", "-c", "a")
    raw = json.loads((project / ".loop" / "state.json").read_text())
    assert raw["verifyOnStop"] is None
    assert rs("config", "verify-on-stop").out == "default (on)\n"


def test_an_old_default_false_reads_as_the_new_default(project: Path) -> None:
    """A file from before verify-on-stop became the default holds `false` and none of
    the keys that arrived with it (`noCriteria`): that `false` was the old default."""
    old = {"spec": "x", "criteria": ["a"], "verifyOnStop": False}
    assert st.normalise(old)["verifyOnStop"] is None
    assert st.normalise({**old, "noCriteria": False})["verifyOnStop"] is False
    assert st.normalise({**old, "verifyOnStop": True})["verifyOnStop"] is True


def test_an_old_loop_with_a_failing_check_is_verified_on_stop(project: Path) -> None:
    loop = project / ".loop"
    loop.mkdir()
    raw = {
        "spec": "older loop",
        "criteria": ["tests pass"],
        "criteriaStatus": {"tests pass": True},
        "checks": {"tests pass": FAIL},
        "verifyOnStop": False,
        "sessionId": SID,
        "startedAt": "2026-01-01T00:00:00Z",
    }
    (loop / "state.json").write_text(json.dumps(raw))
    state = st.parse((loop / "state.json").read_bytes())
    registry.record(LoopPaths(project, loop), state)
    truststore.record(LoopPaths(project, loop), state, proof=at_terminal_proof())
    out = stop(project)
    assert out is not None and out["decision"] == "block"


def test_untrusted_checks_pause_a_claimed_completion_by_default(claimed: Path, rs: Any) -> None:
    path = claimed / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    # A hand edit that adds a check to a claim-only criterion: the contract only gains,
    # so no review, but the new check is not trusted until a person trusts it.
    raw["checks"]["docs written"] = PASS
    path.write_bytes(orjson.dumps(raw))
    out = stop(claimed)
    assert out is not None and "decision" not in out
    assert (load(claimed)["status"], load(claimed)["pauseReason"]) == (
        "paused",
        "untrusted_checks",
    )


def test_a_hand_edited_check_pauses_for_review_and_runs_nothing(claimed: Path, rs: Any) -> None:
    path = claimed / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw["checks"]["tests pass"] = PASS  # a hand edit replaces the approved check
    path.write_bytes(orjson.dumps(raw))
    out = stop(claimed)
    assert out is not None and "decision" not in out
    assert (load(claimed)["status"], load(claimed)["pauseReason"]) == ("paused", "review")
    assert "the check of 'tests pass' was replaced" in out["systemMessage"]
    assert "a hand edit of state.json" in out["systemMessage"]
    assert "ralphstate review" in out["systemMessage"]


def test_the_restored_context_tells_proofs_from_claims(claimed: Path, rs: Any) -> None:
    assert rs("criteria", "check", "tests pass", PASS).code == 0
    assert rs("verify").code == 0
    context = restore.context(load(claimed), "compact")
    assert "- [x] tests pass (verified by its check)" in context
    assert "- [x] docs written (claimed)" in context
    assert "the Stop hook runs the checks first" in context


def test_the_block_marker_reason_tells_proofs_from_claims(claimed: Path, rs: Any) -> None:
    assert rs("criteria", "check", "tests pass", PASS).code == 0
    assert rs("verify").code == 0
    out = stop(claimed, "Done, I think.")
    assert out is not None and out["decision"] == "block"
    assert (
        "1 verified by its check (checked in the agent's environment), 1 claimed" in out["reason"]
    )
    state = cast(st.Raw, load(claimed))
    assert state["status"] == "in_progress"
