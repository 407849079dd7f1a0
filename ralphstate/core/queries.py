"""What a loop's state answers: which criteria are met and what backs each, which
proofs went stale, whether the Stop hook verifies a claim, whether a person must act."""

from __future__ import annotations

from typing import Literal

from ralphstate.core.limits import MAX_PROBLEM_CHARS
from ralphstate.core.state import State

# What a criterion's status rests on, as `standing` reports it.
Standing = Literal["verified", "claimed", "failing", "unchecked"]


# A loop blocked on a person: its pauseReason is "blocked: WHAT THEY MUST DO".
BLOCKED = "blocked"


def blocked_reason(text: str) -> str:
    return f"{BLOCKED}: {' '.join(text.split())[:MAX_PROBLEM_CHARS]}"


def is_blocked(reason: str | None) -> bool:
    return bool(reason) and (reason == BLOCKED or str(reason).startswith(BLOCKED + ":"))


def verify_on_stop(state: State) -> bool:
    """The Stop hook runs the checks before it lets a claimed completion end the loop:
    the default (null) and `true`; only an explicit `false` turns it off."""
    return state["verifyOnStop"] is not False


def clean_verify(state: State) -> bool:
    """The checks that accept a completion run in a clean room, where the loop is in a
    git repository: the default (null) and `true`; only an explicit `false` turns it off."""
    return state["cleanVerify"] is not False


def met(state: State, criterion: str) -> bool:
    return state["criteriaStatus"].get(criterion) is True


def unmet(state: State) -> list[str]:
    """Criteria not verified yet, in order; a criterion missing from the map is unmet."""
    return [c for c in state["criteria"] if not met(state, c)]


def standing(state: State, criterion: str) -> Standing | None:
    """What backs a criterion's status: `verified`, `claimed`, `failing`, `unchecked`
    (unmet, with a check that has not proven anything yet) or None (unmet, no check).

    Read from `criteriaStatus` first, so evidence a later change left behind never
    makes a criterion look better than its status."""
    result = state["evidence"].get(criterion, {}).get("result")
    if met(state, criterion):
        return "verified" if result == "verified" else "claimed"
    if result == "failing":
        return "failing"
    return "unchecked" if criterion in state["checks"] else None


def stale(state: State, tree: str | None) -> list[str]:
    """The verified criteria whose check passed on another tree than `tree`, the id of
    the tree the work tree holds now (None: not known, so nothing is stale). Evidence
    that records no tree (outside git, or written before trees were recorded) is
    never stale: nothing says the code changed."""
    if tree is None:
        return []
    found = []
    for name in state["criteria"]:
        evidence = state["evidence"].get(name, {})
        if (
            standing(state, name) == "verified"
            and name in state["checks"]
            and evidence.get("command") == state["checks"][name]
            and evidence.get("tree") not in (None, tree)
        ):
            found.append(name)
    return found
