"""The rules of red before green (core/redgreen.py), on states and ledger entries made
by hand: which first result is kept, when a criterion was already true before any work,
and when a pass counts."""

from __future__ import annotations

from typing import Any, cast

from ralphstate.core import redgreen
from ralphstate.core import state as st
from ralphstate.core.redgreen import Outcome

AT = "2026-01-01T00:00:00Z"


def loop(**changes: Any) -> st.State:
    state = st.new("x", ["a", "b"], ["one", "two"], now=AT)
    cast(st.Raw, state).update({"checks": {"a": "test a", "b": "test b"}, **changes})
    return st.normalise(state)


def noted(entry: dict[str, Any], state: st.State, *outcomes: Outcome, by: str = "person") -> Any:
    return redgreen.noted(entry, state, outcomes, by, AT)


def test_only_the_first_result_of_the_current_command_is_kept() -> None:
    state = loop()
    entry = noted(
        {}, state, Outcome("a", "test a", True, "T0"), Outcome("b", "test b", False, None)
    )
    assert entry["firsts"]["a"] == {
        "passed": True, "at": AT, "command": "test a", "iteration": 0, "tree": "T0",
        "steps": 0, "by": "person", "strength": None,
    }  # fmt: skip
    assert entry["failedOnce"] == {"b": "test b"}
    later = noted(entry, loop(iteration=3), Outcome("a", "test a", False, "T1"))
    assert later["firsts"]["a"]["tree"] == "T0"  # still the first
    assert later["failedOnce"] == {"a": "test a", "b": "test b"}
    changed = loop(checks={"a": "test a2", "b": "test b"}, iteration=4)
    again = noted(later, changed, Outcome("a", "test a2", True, "T2"))
    assert (again["firsts"]["a"]["command"], again["firsts"]["a"]["iteration"]) == ("test a2", 4)


def test_a_result_for_a_command_the_check_no_longer_has_is_left_out() -> None:
    entry = noted(
        {}, loop(), Outcome("a", "old command", False, None), Outcome("z", "x", False, None)
    )
    assert entry["firsts"] == {} and entry["failedOnce"] == {}


def test_names_no_longer_criteria_are_kept_within_a_bound() -> None:
    gone = {f"old {i}": {"command": "c"} for i in range(redgreen.MAX_GONE + 10)}
    entry = noted({"firsts": gone}, loop(), Outcome("a", "test a", True, None))
    assert len(entry["firsts"]) == redgreen.MAX_GONE + 1 and "a" in entry["firsts"]
    assert "old 0" not in entry["firsts"]


def verified(**changes: Any) -> st.State:
    evidence = {"result": "verified", "command": "test a", "at": AT}
    return loop(criteriaStatus={"a": True}, evidence={"a": evidence}, **changes)


def first(**fields: Any) -> dict[str, Any]:
    kept = {"passed": True, "command": "test a", "iteration": 0, "steps": 0, "by": "person"}
    return {**kept, **fields}


def test_on_the_tree_the_loop_started_on_it_was_already_true() -> None:
    state = verified()
    same = {"startTree": "T0", "firsts": {"a": first(tree="T0", iteration=2, by="agent")}}
    assert redgreen.already_true(state, same) == ["a"]
    other = {"startTree": "T0", "firsts": {"a": first(tree="T1")}}
    assert redgreen.already_true(state, other) == []  # the work changed the tree first


def test_without_a_tree_iteration_zero_no_step_and_the_person_decide() -> None:
    state = verified()
    assert redgreen.already_true(state, {"firsts": {"a": first(tree=None)}}) == ["a"]
    for changed in ({"iteration": 1}, {"steps": 1}, {"by": "agent"}, {"by": "run"}):
        assert redgreen.already_true(state, {"firsts": {"a": first(**changed)}}) == [], changed
    started_with_one = {"startSteps": 1, "firsts": {"a": first(steps=1)}}
    assert redgreen.already_true(state, started_with_one) == ["a"]


def test_already_true_needs_a_pass_of_the_current_command_that_stands_verified() -> None:
    entry = {"firsts": {"a": first()}}
    assert redgreen.already_true(verified(), {"firsts": {"a": first(passed=False)}}) == []
    assert redgreen.already_true(verified(), {"firsts": {"a": first(command="x")}}) == []
    failing = {"a": {"result": "failing", "command": "test a", "at": AT}}
    assert redgreen.already_true(loop(evidence=failing), entry) == []


def test_without_a_ledger_entry_the_evidence_says() -> None:
    evidence = {"result": "verified", "command": "test a", "at": AT, "alreadyTrue": True}
    state = loop(criteriaStatus={"a": True}, evidence={"a": evidence})
    assert redgreen.already_true(state) == ["a"]
    assert redgreen.already_true(state, {"firsts": {}}) == []  # the ledger decides


def test_a_pass_counts_once_the_current_command_failed() -> None:
    state = loop(expectFail=["a"])
    assert redgreen.counts(state, None, "a", "test a") is False
    assert redgreen.counts(state, {"failedOnce": {"a": "test a"}}, "a", "test a") is True
    assert redgreen.counts(state, {"failedOnce": {"a": "older"}}, "a", "test a") is False
    assert redgreen.counts(state, None, "b", "test b") is True  # not expected to fail


def test_an_expect_fail_dropped_from_the_state_still_holds_when_approved() -> None:
    approved = {"approved": {"expectFail": ["b"]}}
    assert redgreen.expect_fail(loop(), approved) == ["b"]
    assert redgreen.counts(loop(), approved, "b", "test b") is False


def ran(n: int, skipped: int = 0) -> dict[str, Any]:
    return {"runner": "pytest", "collected": n + skipped, "ran": n, "passed": n}


def test_a_pass_is_held_to_its_first_run_then_to_the_approved_counts() -> None:
    state = loop()
    entry = noted({}, state, Outcome("a", "test a", False, None, strength=ran(5)))
    entry = noted(entry, state, Outcome("a", "test a", True, None, duration_ms=9, strength=ran(3)))
    assert entry["lastPass"]["a"]["strength"] == ran(3)
    assert redgreen.weakened_passes(state, entry) == [
        "'a' is weakened: 3 tests ran, 5 at its first run"
    ]
    entry["approvedStrength"] = redgreen.approved_strength(entry, state)  # a person approves
    assert entry["approvedStrength"] == {"a": {"command": "test a", "strength": ran(3)}}
    assert redgreen.weakened_passes(state, entry) == []
    fewer = noted(entry, state, Outcome("a", "test a", True, None, strength=ran(2)))
    assert redgreen.weakened_passes(state, fewer) == ["'a' is weakened: 2 tests ran, 3 at approval"]


def test_a_new_command_is_held_to_its_own_first_run_and_old_passes_to_nothing() -> None:
    state = loop()
    entry = noted({}, state, Outcome("a", "test a", False, None, strength=ran(5)))
    changed = loop(checks={"a": "test a2", "b": "test b"})
    entry = noted(entry, changed, Outcome("a", "test a2", True, None, strength=ran(1)))
    assert redgreen.weakened_passes(changed, entry) == []
    old = {"lastPass": {"a": {"command": "test a", "tree": None}}}  # before counts were kept
    assert redgreen.weakened_passes(state, old) == []


def test_a_first_run_that_passed_is_no_baseline() -> None:
    """It may have run the work's new tests, untracked, that a clean room leaves out."""
    state = loop()
    entry = noted({}, state, Outcome("a", "test a", True, None, strength=ran(3)))
    entry = noted(entry, state, Outcome("a", "test a", True, None, "C1", strength=ran(2)))
    assert redgreen.weakened_passes(state, entry) == []
