"""What a loop's state answers: which criteria are met and what backs each, which
proofs went stale, whether the Stop hook verifies a claim, whether a person must act."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ralphstate.core.limits import MAX_PROBLEM_CHARS
from ralphstate.core.state import State

# What a criterion's status rests on, as `standing` reports it.
Standing = Literal["verified", "graded", "claimed", "failing", "unchecked"]


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
    """What backs a criterion's status: `verified`, `graded` (a criterion with a rubric,
    met, whose reviewer last passed it: never `verified`), `claimed`, `failing`, `unchecked`
    (unmet, with a check that has not proven anything yet) or None (unmet, no check).

    Read from `criteriaStatus` first, so evidence a later change left behind never
    makes a criterion look better than its status."""
    result = state["evidence"].get(criterion, {}).get("result")
    if met(state, criterion):
        if criterion in state["rubrics"]:  # a reviewer's pass is graded, never verified
            grade = state["grades"].get(criterion, {})
            return "graded" if grade.get("result") == "pass" else "claimed"
        return "verified" if result == "verified" else "claimed"
    if result == "failing":
        return "failing"
    return "unchecked" if criterion in state["checks"] else None


# The tree a snapshot that failed holds (git timed out, a nested repository it could
# not read): unknown, so every piece of evidence that names a tree is stale, and its
# check runs again; never an id git gives.
UNKNOWN_TREE = "unknown"


def stale(state: State, tree: str | None) -> list[str]:
    """The verified criteria whose check passed on another tree than `tree`, the id of
    the tree the work tree holds now (None: outside git, so nothing is stale;
    `UNKNOWN_TREE`: the snapshot failed, so all evidence that names a tree is). Evidence
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


def fresh(
    state: State,
    names: list[str],
    tree: str | None,
    clean_tree: str | None,
    passes: Mapping[str, Any],
) -> list[str]:
    """Of `names`, the criteria whose check passed on the code the work tree holds now,
    so that a stop need not run it again: verified by its current command on the tree
    `tree` (the work tree's id now; None: not known, so none is), and, when
    `clean_tree` is given (the checks run in a clean room of that tree), in a clean room
    of that tree. `passes` is the ledger's `lastPass` (core/redgreen.py), kept outside
    the project: evidence in state.json that it does not hold, written by hand, is not
    taken."""
    if tree is None:
        return []
    found = []
    for name in names:
        evidence = state["evidence"].get(name, {})
        command = state["checks"].get(name)
        last = passes.get(name)
        if (
            command is None
            or standing(state, name) != "verified"
            or not isinstance(last, Mapping)
            or (evidence.get("command"), evidence.get("tree")) != (command, tree)
            or (last.get("command"), last.get("tree")) != (command, tree)
        ):
            continue
        if clean_tree is not None and not (
            evidence.get("clean") is True
            and evidence.get("cleanTree") == clean_tree == last.get("cleanTree")
        ):
            continue
        found.append(name)
    return found
