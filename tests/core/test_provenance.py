"""Who produced a check's result, whether its pass counts, and its level's words
(ralphstate/core/provenance.py)."""

from __future__ import annotations

import pytest

from ralphstate.core import provenance


@pytest.mark.parametrize(
    ("by", "kind", "made"),
    [
        ("stop", "agent", "stop"),  # a hook runs as the session it serves: still ralphstate's
        ("task", "agent", "task"),
        ("run", "person", "run"),
        ("verify", "person", "verify"),
        ("verify", "agent", "agent"),
        ("verify", "run", "agent"),  # the agent of an iteration of `ralphstate run`
        ("init", "agent", "agent"),
        ("init", "person", "init"),
    ],
)
def test_who_produced_a_result(by: str, kind: str, made: str) -> None:
    assert provenance.producer(by, kind) == made


@pytest.mark.parametrize(
    ("by", "counted"),
    [("stop", True), ("task", True), ("run", True), ("verify", True), ("agent", False),
     (None, False), ("anything", False)],
)  # fmt: skip
def test_only_ralphstates_own_passes_count(by: object, counted: bool) -> None:
    assert provenance.counts(by) is counted


def test_the_level_and_its_words() -> None:
    assert provenance.words({"clean": True, "confined": True}) == "sealed and confined"
    assert provenance.words({"clean": True, "by": "stop"}) == "sealed"
    assert provenance.words({}) == "checked in the agent's environment"
    assert provenance.verified({"clean": True, "by": "agent"}) == (
        "verified (sealed, by the agent's own verify: does not count)"
    )
    evidence: dict[str, dict[str, object]] = {
        "a": {"result": "verified", "clean": True},
        "b": {"result": "verified"},
        "c": {"result": "failing"},
    }
    assert provenance.weakest(evidence, ["a", "b", "c"]) == "agent-env"
    assert provenance.weakest(evidence, ["a"]) == "sealed"
    assert provenance.weakest(evidence, ["c"]) is None


def test_an_agents_sealed_and_confined_pass_does_not_count() -> None:
    confined = {"result": "verified", "by": "agent", "clean": True, "confined": True}
    assert provenance.counts("agent") is False
    assert provenance.unsealed({"mine": confined}, ["mine"]) == ["mine"]
    assert provenance.words(confined) == (
        "sealed and confined, by the agent's own verify: does not count"
    )


def test_an_agents_pass_is_named_for_the_stop_to_run_again() -> None:
    evidence = {
        "mine": {"result": "verified", "by": "agent"},
        "hook": {"result": "verified", "by": "stop"},
        "old": {"result": "verified"},
        "red": {"result": "failing", "by": "agent"},
    }
    assert provenance.unsealed(evidence, ["mine", "hook", "old", "red"]) == ["mine"]


def test_an_approval_outside_any_agent_is_not_said_to_be_yours() -> None:
    assert provenance.approver("person", "you") == "outside the agent"
    assert provenance.approver("agent", "claude session 1a2b3c4d") == "claude session 1a2b3c4d"
