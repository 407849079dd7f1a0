"""The pipeline's pure steps (core/verifyplan.py, core/verdict.py): plain data in, plain
data out, no process, no file, no clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from ralphstate.core import state as st
from ralphstate.core import verdict, verifyplan
from ralphstate.core.errors import RalphstateError
from ralphstate.core.verifyplan import Deferred, Facts, Planned

TREE, CLEAN = "a" * 40, "b" * 40


def loop(*criteria: str) -> st.State:
    state = st.new("s", list(criteria), [], now="2026-01-01T00:00:00Z")
    state["checks"] = {c: f"check {c}" for c in criteria}
    return state


def verified(state: st.State, name: str, by: str = "stop") -> dict[str, Any]:
    """`name` verified on TREE in a clean room of CLEAN; the ledger's last pass as `by` left it."""
    command = state["checks"][name]
    state["criteriaStatus"][name] = True
    evidence: Any = {"result": "verified", "command": command, "tree": TREE, "clean": True}
    evidence["cleanTree"] = CLEAN
    state["evidence"][name] = evidence
    return {"command": command, "tree": TREE, "cleanTree": CLEAN, "by": by}


def test_choose_keeps_the_loops_order_and_refuses_a_criterion_without_a_check() -> None:
    state = loop("a", "b", "c")
    del state["checks"]["b"]
    assert verifyplan.choose(state, None) == [("a", "check a"), ("c", "check c")]
    assert verifyplan.choose(state, ["c", "a"]) == [("a", "check a"), ("c", "check c")]
    with pytest.raises(RalphstateError, match="'b' has no check"):
        verifyplan.choose(state, ["b"])
    assert verifyplan.choose(state, ["3", "c"]) == [("c", "check c")]  # by number, once
    with pytest.raises(RalphstateError, match="no criterion 'd'"):
        verifyplan.choose(state, ["d"])


def test_untrusted_checks_plan_nothing_and_say_so_while_no_check_is_no_refusal() -> None:
    state = loop("a")
    made = verifyplan.plan(Facts(state, verifyplan.choose(state, None), trusted=False))
    assert made.untrusted and made.jobs == []
    assert not verifyplan.plan(Facts(state, [], trusted=False)).untrusted


def test_every_chosen_check_runs_within_its_own_limit_or_the_timeout() -> None:
    state = loop("a", "b")
    state["checkTimeouts"] = {"b": 7}
    made = verifyplan.plan(Facts(state, verifyplan.choose(state, None), budget=30))
    assert [(j.criterion, j.limit, j.last) for j in made.jobs] == [
        ("a", 600.0, None),
        ("b", 7.0, None),
    ]
    assert made.budget == 30 and made.fresh == [] and made.deferred == []
    timed = verifyplan.plan(Facts(state, verifyplan.choose(state, None), timeout=3))
    assert [j.limit for j in timed.jobs] == [3, 3]


def test_a_hook_reuses_ralphstates_own_pass_on_this_code_never_an_agents() -> None:
    state = loop("a", "b")
    entry = {"lastPass": {"a": verified(state, "a"), "b": verified(state, "b", by="agent")}}
    facts = Facts(state, verifyplan.choose(state, None), afford=True, clean=True, entry=entry)
    facts.tree, facts.tracked, facts.differs = TREE, CLEAN, False
    assert verifyplan.may_reuse(entry, ["a"]) and not verifyplan.may_reuse(entry, ["b"])
    made = verifyplan.plan(facts)
    assert made.fresh == ["a"] and [j.criterion for j in made.jobs] == ["b"]
    facts.differs = True  # the room would put guarded files back: the tree is not the room's
    assert verifyplan.plan(facts).fresh == []
    facts.differs, facts.tree = False, "c" * 40  # the code changed since the pass
    assert verifyplan.plan(facts).fresh == []


def test_a_hook_defers_what_its_last_run_says_cannot_fit_the_budget() -> None:
    state = loop("quick", "slow")
    state["verifyBudget"] = 10
    entry = {"lastRun": {"slow": {"command": "check slow", "ms": 60_000}}}
    made = verifyplan.plan(Facts(state, verifyplan.choose(state, None), afford=True, entry=entry))
    assert [j.criterion for j in made.jobs] == ["quick"]
    assert made.deferred == [Deferred("slow", 60.0)] and made.budget == 10


@dataclass
class Result:
    criterion: str
    command: str
    passed: bool
    budget_cut: bool = False

    def evidence(self, at: str) -> Any:
        return {
            "result": "verified" if self.passed else "failing",
            "command": self.command,
            "at": at,
        }


def test_judge_leaves_a_cut_check_to_verify_only_where_the_plan_affords() -> None:
    made = verifyplan.Plan([Planned("a", "check a", 5, last=4.0), Planned("b", "check b", 5)])
    results = [Result("a", "check a", False, budget_cut=True), Result("b", "check b", True)]
    hook = verdict.judge(made, results, afford=True)
    assert [r.criterion for r in hook.results] == ["b"]
    assert hook.cut == [Deferred("a", 4.0, cut=True)]
    whole = verdict.judge(made, results, afford=False)
    assert whole.results == results and whole.cut == []


def test_apply_records_a_result_only_for_the_check_that_still_stands() -> None:
    state = loop("a", "b")
    at = "2026-01-02T00:00:00Z"
    events = verdict.apply(
        state, [Result("a", "check a", True), Result("b", "old", True)], "verify", at
    )
    assert [(e["event"], e["criterion"], e["by"]) for e in events] == [("check", "a", "verify")]
    assert state["criteriaStatus"]["a"] is True and state["criteriaStatus"].get("b") is not True
    assert state["evidence"]["a"]["at"] == at and "at" not in events[0]


def test_a_stopped_verification_names_what_it_left_unfinished() -> None:
    state = loop("a", "b", "c")
    finished = [Result("a", "check a", True), Result("b", "check b", False, budget_cut=True)]
    kept, left = verdict.unfinished(finished, ["a", "b", "c"])
    assert [r.criterion for r in kept] == ["a"] and left == ["b", "c"]
    events = verdict.interrupted(state, kept, left, "stop", "terminated", "2026-01-02T00:00:00Z")
    assert events[-1] == {
        "event": "verify_interrupted",
        "by": "stop",
        "how": "terminated",
        "criteria": ["b", "c"],
    }
    raw: Any = state
    assert raw["verifyInterrupted"]["criteria"] == ["b", "c"]
    verdict.interrupted(state, [], [], "stop", "terminated", "2026-01-02T00:00:00Z")
    assert raw["verifyInterrupted"] is None
