"""Verify-on-stop through real `ralphstate hook stop` processes: a claimed completion
runs the checks first; failures block with their output; untrusted checks never run."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.core.decide import Checked, StopFacts, decide_stop
from ralphstate.storage.peruser import registry, truststore
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.verify.onecheck import CheckResult
from tests.helpers import run_process
from tests.helpers.checks import (
    FAIL,
    PASS,
    alive,
    py,
    script,
    sleeper,
    terminated_during_check,
    wait_for,
)
from tests.helpers.loops import load
from tests.helpers.person import at_terminal_proof

SID = "session-a"
MARK = "<loop-complete>"
DONE = f"All done. {MARK}"


def make_loop(
    root: Path,
    checks: dict[str, str],
    *,
    met: bool = True,
    trusted: bool = True,
    verify_on_stop: bool = True,
    **kw: Any,
) -> Path:
    """A known loop owned by SID whose criteria are `checks`' keys, all claimed met."""
    names = list(checks)
    state = st.new(
        "Build the parser", names, ["parser"], session_id=SID, now="2026-01-01T00:00:00Z"
    )
    cast(st.Raw, state).update(
        checks=checks,
        verifyOnStop=verify_on_stop,
        criteriaStatus={n: met for n in names},
        evidence={n: {"result": "claimed", "at": "2026-01-01T00:00:00Z"} for n in names if met},
        **kw,
    )
    state = st.normalise(state)
    loop = root / ".loop"
    loop.mkdir(exist_ok=True)
    (loop / "state.json").write_bytes(st.dumps(state))
    paths = LoopPaths(root, loop)
    registry.record(paths, state)
    if trusted:
        truststore.record(paths, state, proof=at_terminal_proof())
    return loop / "state.json"


def stop(root: Path, message: str = DONE) -> tuple[dict[str, Any] | None, str]:
    data = {"session_id": SID, "cwd": str(root), "last_assistant_message": message}
    done = run_process(["hook", "stop"], cwd=root, input=orjson.dumps(data), timeout=60)
    assert done.returncode == 0
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    if out is not None:
        assert done.stdout.count(b"\n") == 1, "exactly one JSON object"
    return out, done.stderr.decode()


def history(root: Path) -> list[dict[str, Any]]:
    path = root / ".loop" / "history.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def touch(path: Path) -> str:
    """A passing check that leaves `path` behind, so a test can tell it ran."""
    return py(f"open({str(path)!r}, 'w').close()")


# -- a claimed completion is verified ---------------------------------------------------


def test_a_failing_check_blocks_the_claim_with_its_output(root: Path) -> None:
    make_loop(root, {"tests pass": PASS, "lint clean": FAIL})
    out, err = stop(root)
    assert err == ""
    assert out is not None and out["decision"] == "block"
    reason = out["reason"]
    assert reason.startswith(
        "You claimed every criterion; ralphstate ran the checks and 1 failed."
        " Their criteria are set back to not verified:\n"
        f"- lint clean: `{FAIL}` exit code 3 ("
    )
    assert "; the end of its output:\n    first line\n    boom: 1 == 2\n" in reason
    assert "ralphstate loop, iteration 1 of 20: 1 of 2 criteria not verified yet:\n" in reason
    assert "- lint clean\n" in reason
    assert "tests pass`" not in reason  # only the failure is reported
    state = load(root)
    assert state["criteriaStatus"] == {"tests pass": True, "lint clean": False}
    assert state["status"] == "in_progress" and state["iteration"] == 1
    assert state["evidence"]["tests pass"]["result"] == "verified"
    assert state["evidence"]["lint clean"]["result"] == "failing"
    events = history(root)
    assert [(e["event"], e.get("criterion"), e.get("by")) for e in events] == [
        ("check", "tests pass", "stop"),
        ("check", "lint clean", "stop"),
        ("unmet", None, None),
    ]
    assert events[-1]["unmet"] == ["lint clean"]


def test_passing_checks_let_the_loop_complete(root: Path) -> None:
    make_loop(root, {"tests pass": PASS, "lint clean": PASS})
    out, _ = stop(root)
    assert out == {
        "systemMessage": "ralphstate: loop complete after 0 iterations; verified by their checks"
        " (checked in the agent's environment): tests pass, lint clean.",
        "terminalSequence": "\x1b]9;ralphstate: loop complete, verified (checked in the agent's"
        " environment) (Build the parser)\x07",
    }
    state = load(root)
    assert state["status"] == "complete"
    assert {n: e["result"] for n, e in state["evidence"].items()} == {
        "tests pass": "verified",
        "lint clean": "verified",
    }
    assert [e["event"] for e in history(root)] == ["check", "check", "complete"]


@pytest.mark.parametrize(
    ("met", "message", "rule"),
    [
        (True, "All done, I think.", "no_marker"),  # no marker: not a claim yet
        (False, DONE, "unmet"),  # the criteria are not claimed
    ],
)
def test_checks_run_only_at_a_claimed_completion(
    root: Path, met: bool, message: str, rule: str
) -> None:
    ran = root / "ran"
    make_loop(root, {"a": touch(ran)}, met=met)
    out, _ = stop(root, message)
    assert out is not None and out["decision"] == "block"
    assert not ran.exists()
    assert [e["event"] for e in history(root)] == [rule]


def test_without_verify_on_stop_the_claim_is_taken(root: Path) -> None:
    ran = root / "ran"
    make_loop(root, {"a": touch(ran)}, verify_on_stop=False)
    out, _ = stop(root)
    assert out is not None and "loop complete" in out["systemMessage"]
    assert not ran.exists()
    assert load(root)["evidence"]["a"]["result"] == "claimed"


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_a_check_that_times_out_fails_and_says_so(root: Path) -> None:
    command, pid_file, _ = sleeper(root)
    make_loop(root, {"slow": command}, checkTimeouts={"slow": 2})
    out, _ = stop(root)
    assert out is not None and out["decision"] == "block"
    assert f"- slow: `{command}` timed out after 2s (" in out["reason"]
    assert "the end of its output:\n    sleeping\n" in out["reason"]
    evidence = load(root)["evidence"]["slow"]
    assert (evidence["result"], evidence["timedOut"]) == ("failing", True)
    assert not alive(int(pid_file.read_text()))


def test_ten_megabytes_of_failure_stay_within_the_reason(root: Path) -> None:
    code = "import sys\nsys.stdout.write(('y' * 99 + '\\n') * 100_000 + 'the last line\\n')\n"
    command = script(root / "loud.py", code + "sys.exit(2)\n")
    make_loop(root, {"loud": command, "also": FAIL})
    out, _ = stop(root)
    assert out is not None
    reason = out["reason"]
    assert len(reason) <= limits.MAX_REASON_CHARS
    assert "    the last line\n" in reason
    assert "    boom: 1 == 2\n" in reason
    assert reason.endswith("only when every criterion is verified.")  # protocol kept


def test_a_check_changed_while_it_ran_is_not_recorded() -> None:
    """The result is applied inside the locked update: a changed command is skipped."""
    state = st.new("s", ["a"], [], now="2026-01-01T00:00:00Z")
    state["checks"] = {"a": "new command"}
    state["criteriaStatus"] = {"a": True}
    from ralphstate.verify.records import apply

    old = CheckResult("a", "old command", passed=False, exit_code=1, duration_ms=5, timeout=9)
    assert apply(state, [old], "stop") == []
    assert state["criteriaStatus"] == {"a": True} and state["evidence"] == {}


# -- trust at the Stop hook -------------------------------------------------------------


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
@pytest.mark.parametrize("then", ["cancel", "pause"])
def test_a_loop_ended_while_its_checks_ran_keeps_what_it_had(root: Path, then: str) -> None:
    """The person cancels or pauses the loop while verify-on-stop runs a check (here the
    check does it). The second decision allows the stop and writes nothing: the check's
    result is not put into a loop that is no longer running, and nothing changes in the
    state without its line in the history."""
    command = (
        f"{sys.executable} -m ralphstate {then} && {sys.executable} -c 'import sys; sys.exit(1)'"
    )
    path = make_loop(root, {"tests pass": command})
    out, err = stop(root)
    assert err == ""
    state = load(root)
    assert state["status"] == ("cancelled" if then == "cancel" else "paused")
    assert state["criteriaStatus"] == {"tests pass": True}
    assert state["evidence"]["tests pass"]["result"] == "claimed"
    events = [e["event"] for e in history(root)]
    assert "check" not in events and events[-1] == ("cancelled" if then == "cancel" else "paused")
    assert out is None
    assert path.exists()


def test_untrusted_checks_never_run_and_the_claim_pauses(root: Path, rs: Any) -> None:
    ran = root / "ran"
    make_loop(root, {"a": touch(ran)}, trusted=False)
    out, _ = stop(root)
    assert out == {
        "systemMessage": "ralphstate: the agent claims every criterion, but the loop's checks"
        " are not trusted on this machine (changed outside ralphstate, or they came with the"
        " repository), so they were not run and the loop is paused. Review them"
        " (`ralphstate status`), run `ralphstate trust`, then `ralphstate resume`.",
        "terminalSequence": "\x1b]9;ralphstate: loop paused: its checks are not trusted on"
        " this machine (Build the parser)\x07",
    }
    assert not ran.exists()
    state = load(root)
    assert (state["status"], state["pauseReason"]) == ("paused", "untrusted_checks")
    # A person trusts and resumes; the next claimed completion runs the check.
    os.chdir(root)
    assert rs("trust").code == 0
    assert rs("resume").code == 0
    out, _ = stop(root)
    assert ran.exists()
    assert out is not None and "loop complete" in out["systemMessage"]


def test_a_hand_edited_check_is_not_run_by_the_hook(root: Path) -> None:
    ran = root / "ran"
    path = make_loop(root, {"a": PASS})
    raw = orjson.loads(path.read_bytes())
    raw["checks"]["a"] = touch(ran)
    path.write_bytes(orjson.dumps(raw))
    out, _ = stop(root)
    assert out is not None and "not trusted" in out["systemMessage"]
    assert not ran.exists()


# -- SIGTERM from the client ------------------------------------------------------------


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM and process groups are POSIX")
def test_a_hook_stopped_by_the_client_kills_its_check(root: Path) -> None:
    command, pid_file, started = sleeper(root)
    make_loop(root, {"slow": command})
    data = orjson.dumps({"session_id": SID, "cwd": str(root), "last_assistant_message": DONE})
    code, out, err = terminated_during_check(root, "stop", data, started)
    assert (code, out) == (0, b"")
    assert err.endswith(
        "ralphstate hook stop: stopped while running the loop's checks; the running check was"
        " killed, and the stop is recorded (`ralphstate status` shows it); allowing.\n"
    )
    wait_for(lambda: not alive(int(pid_file.read_text())), "the check to be killed")
    state = load(root)  # nothing false: the claim stands, the stop is said
    assert state["criteriaStatus"] == {"slow": True}
    assert state["evidence"]["slow"]["result"] == "claimed"
    assert state["verifyInterrupted"] is not None
    assert state["verifyInterrupted"]["criteria"] == ["slow"]
    assert [e["event"] for e in history(root)] == ["verify_interrupted"]


# -- the decision itself stays pure -----------------------------------------------------


def _state(**kw: Any) -> st.State:
    state = st.new("s", ["a", "b"], [], session_id=SID, now="2026-01-01T00:00:00Z")
    cast(st.Raw, state).update(kw)
    return st.normalise(state)


def test_decide_carries_failures_into_the_reason_only() -> None:
    failure = CheckResult(
        "b", "make b", passed=False, exit_code=2, duration_ms=1500, timeout=9, output_tail="oops"
    )
    state = _state(criteriaStatus={"a": True, "b": False})
    with_failure = decide_stop(
        state, StopFacts(SID, DONE, known_here=True, checked=Checked([failure]))
    )
    plain = decide_stop(state, StopFacts(SID, DONE, known_here=True))
    assert with_failure.rule == plain.rule == "unmet"
    assert with_failure.state == plain.state and with_failure.events == plain.events
    assert plain.reason is not None and with_failure.reason is not None
    assert with_failure.reason == (
        "You claimed every criterion; ralphstate ran the checks and 1 failed. Their criteria"
        " are set back to not verified:\n"
        "- b: `make b` exit code 2 (1.5s); the end of its output:\n"
        "    oops\n"
        "Fix what they report; `ralphstate verify` runs the checks again now.\n"
        "\n" + plain.reason
    )


UNTRUSTED = Checked(untrusted=True)  # the checks are not trusted here: none ran


def test_decide_untrusted_pauses_only_a_completion() -> None:
    done = _state(criteriaStatus={"a": True, "b": True})
    decision = decide_stop(done, StopFacts(SID, DONE, known_here=True, checked=UNTRUSTED))
    assert decision.rule == "untrusted_checks" and not decision.block
    assert decision.state is not None
    assert (decision.state["status"], decision.state["pauseReason"]) == (
        "paused",
        "untrusted_checks",
    )
    # The earlier rules keep their order: the cap still wins.
    capped = _state(criteriaStatus={"a": True, "b": True}, iteration=20)
    assert decide_stop(capped, StopFacts(SID, DONE, known_here=True, checked=UNTRUSTED)).rule == (
        "max_iterations"
    )
    unmet = _state()
    assert (
        decide_stop(unmet, StopFacts(SID, DONE, known_here=True, checked=UNTRUSTED)).rule == "unmet"
    )
