"""The contract and what weakens it (core/proof.py): pure comparisons."""

from __future__ import annotations

import pytest

from ralphstate.core import proof
from ralphstate.core import state as st


def contract(**changes: object) -> proof.Contract:
    state = st.normalise(
        {
            "spec": "x",
            "criteria": ["tests pass", "docs"],
            "checks": {"tests pass": "pytest -q"},
            "guards": ["tests/"],
        }
    )
    state.update(changes)  # type: ignore[typeddict-item]
    return proof.contract_of(state)


APPROVED = contract()


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"checks": {"tests pass": "true"}}, "the check of 'tests pass' was replaced"),
        ({"checks": {}}, "the check of 'tests pass' (`pytest -q`) was removed"),
        ({"checkTimeouts": {"tests pass": 1}}, "the check timeout of 'tests pass' was changed"),
        ({"criteria": ["docs"]}, "criterion 'tests pass' was removed (or renamed)"),
        ({"verifyOnStop": False}, "verify-on-stop was turned off"),
        ({"noCriteria": True}, "noCriteria was turned on"),
        ({"guards": []}, "guard `tests/` was dropped"),
        ({"guards": None}, "guarded files were turned off"),
        ({"cleanVerify": False}, "clean-room verification was turned off"),
    ],
)
def test_each_weakening_is_one_sentence(changed: dict[str, object], said: str) -> None:
    found = proof.weakenings(APPROVED, contract(**changed))
    assert len(found) == 1 and found[0].startswith(said), found


@pytest.mark.parametrize(
    "changed",
    [
        {"criteria": ["tests pass", "docs", "lint"]},
        {"checks": {"tests pass": "pytest -q", "docs": "mkdocs build"}},
        {"guards": ["tests/", "spec/"]},
        {"verifyOnStop": True},
    ],
)
def test_additions_weaken_nothing(changed: dict[str, object]) -> None:
    assert proof.weakenings(APPROVED, contract(**changed)) == []


def test_a_persons_change_is_carried_and_only_it() -> None:
    # the agent replaced the check; then the person adds a criterion
    agents = contract(checks={"tests pass": "true"})
    persons = contract(checks={"tests pass": "true"}, criteria=["tests pass", "docs", "lint"])
    carried = proof.carried(APPROVED, agents, persons)
    assert carried["criteria"] == ["tests pass", "docs", "lint"]
    # the agent's replacement still waits for review
    assert proof.weakenings(carried, persons) == [
        "the check of 'tests pass' was replaced: `pytest -q` became `true`"
    ]


def test_restored_puts_the_approved_contract_back() -> None:
    state = st.normalise({"spec": "x", "criteria": ["docs"], "checks": {}, "verifyOnStop": False})
    proof.restored(state, APPROVED)
    assert proof.weakenings(APPROVED, proof.contract_of(state)) == []
    assert state["criteriaStatus"]["tests pass"] is False


def test_the_review_message_names_changes_and_who_and_the_command() -> None:
    said = proof.paused_review(proof.Pending(["a", "b"], ["claude session 1a2b3c4d"]))
    assert "a; b (by claude session 1a2b3c4d)" in said
    assert "`ralphstate review`" in said
