"""How a check's result was produced, and what that makes of a pass
(docs/explanation/proof.md, "Levels of a pass").

Every result a check leaves (its evidence in state.json, its `check` line in history,
its last pass in the loop's ledger) says who ran it (`by`) and where:

- `by`: `stop` (the Stop hook), `task` (the task gate), `run` (`ralphstate run`'s own
  check after an iteration), `verify` (the person's own `ralphstate verify`), `init`
  (the person's `init` baseline), `ci`, or `agent`: a `ralphstate verify` (or `init`)
  an agent ran from its shell, inside a session or an iteration of `ralphstate run`
  (core/actor.py tells them apart);
- `clean`: it ran in a clean room built by ralphstate (sealed), else in the work tree,
  the agent's own environment;
- `confined`: the clean room was confined so the agent's processes could not reach it
  while the check ran (False until a confinement sets it).

A pass counts at a stop, a task gate or a run's end only when ralphstate's own
verification produced it (`counts`): a pass an agent's `verify` recorded is
information for the agent, and the Stop hook runs that check again. The level says how
far a pass can be trusted, in the words every view uses (`words`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

Level = Literal["sealed-confined", "sealed", "agent-env"]
LEVELS: tuple[Level, ...] = ("sealed-confined", "sealed", "agent-env")
WORDS: dict[Level, str] = {
    "sealed-confined": "sealed and confined",
    "sealed": "sealed",
    "agent-env": "checked in the agent's environment",
}
# The producers whose passes count: ralphstate's own verification, and the person's.
SEALED_BY = ("stop", "task", "run", "verify", "init", "ci")
AGENT = "agent"
# The producers that are hooks or the runner: who asked does not change who ran it.
_OWN = ("stop", "task", "run", "ci")
# How an approval made outside any agent session is named when nothing proved a person
# there (loop/person.py): a process with no agent variable, no terminal confirmation.
OUTSIDE_AGENT = "outside the agent"
# How the person was shown present at an approval (the actor's "present", loop/person.py).
_PRESENT_WORDS = {
    "terminal": "by you, confirmed at your terminal",
    "prompt": "by you, at Claude Code's permission prompt",
    "ci": "by the CI job, for the workflow's author",
    "demo": "by `ralphstate demo`, for its own check in its scratch home",
}


def producer(by: str, actor_kind: str | None) -> str:
    """Who produced a result that `by` (stop, task, run, verify, init, ci) asked for,
    in a process whose actor is of `actor_kind` (core/actor.py): a `verify` or `init`
    run anywhere but in the person's shell is the agent's."""
    if by in _OWN or actor_kind == "person":
        return by
    return AGENT


def counts(by: object) -> bool:
    """Whether a pass produced by `by` counts at a stop, a task gate or a run's end:
    only one ralphstate's own verification produced (`SEALED_BY`). A record that does
    not say who (written before `by` was kept) does not, and neither does an agent's
    own `verify`, at any level, `--clean` and confined included: the agent chose when
    it ran and what it ran on, so its pass is information for it. A suite longer than
    the Stop hook's budget is proved by the hook's own background verification
    (verify/background.py)."""
    return isinstance(by, str) and by in SEALED_BY


def level(clean: bool, confined: bool = False) -> Level:
    """The level of a result: in a clean room (and confined), or in the work tree."""
    if clean and confined:
        return "sealed-confined"
    return "sealed" if clean else "agent-env"


def of_evidence(evidence: Mapping[str, object]) -> Level:
    """The level a piece of evidence records."""
    return level(evidence.get("clean") is True, evidence.get("confined") is True)


def words(evidence: Mapping[str, object]) -> str:
    """`sealed`, `sealed and confined` or `checked in the agent's environment`, and, for
    a pass no ralphstate verification produced, that it does not count."""
    said = WORDS[of_evidence(evidence)]
    by = evidence.get("by")
    if by is not None and not counts(by):
        said += ", by the agent's own verify: does not count"
    return said


def verified(evidence: Mapping[str, object]) -> str:
    """`verified (sealed)`: the word "verified" with how."""
    return f"verified ({words(evidence)})"


def unsealed(evidence: Mapping[str, Mapping[str, object]], names: list[str]) -> list[str]:
    """Of `names`, the criteria whose evidence is a pass an agent's own `verify`
    recorded: the Stop hook runs their checks again before it counts them."""
    return [
        n
        for n in names
        if evidence.get(n, {}).get("result") == "verified"
        and evidence.get(n, {}).get("by") == AGENT
    ]


def approver(kind: object, described: str) -> str:
    """Who approved, without overstating it: a person's approval is one made outside
    any agent session (`OUTSIDE_AGENT`); an agent's is named as `described` says."""
    return OUTSIDE_AGENT if kind == "person" else described


def approval(by: object) -> str:
    """Who approved, as every view says it: "by you" only where the person's presence
    was shown (their terminal, Claude Code's prompt); a person-like record with no such
    proof (a shell without agent variables, a library call, a hand-written record) is
    `OUTSIDE_AGENT`, unconfirmed; anyone else by name ("by claude session 1a2b3c4d")."""
    from ralphstate.core import actor

    if actor.is_person(by) and isinstance(by, dict):
        how = _PRESENT_WORDS.get(str(by.get("present")))
        return how or f"{OUTSIDE_AGENT}, unconfirmed (no terminal or prompt showed a person)"
    return f"by {actor.describe(by)}"


def acted(by: object) -> str:
    """Who did a person-only act (approved, reverted, trusted), as a history line says
    it: "you" only where the person's presence was shown, with how; a person-like
    actor with no such proof is `OUTSIDE_AGENT`, unconfirmed; anyone else by name."""
    from ralphstate.core import actor

    if actor.is_person(by) and isinstance(by, dict):
        present = str(by.get("present"))
        if present in ("ci", "demo"):
            return _PRESENT_WORDS[present].removeprefix("by ") + ","
        if present in _PRESENT_WORDS:
            return f"you ({_PRESENT_WORDS[present].removeprefix('by you, ')})"
        return f"someone {OUTSIDE_AGENT} (unconfirmed: no terminal or prompt showed a person)"
    return actor.describe(by)


def weakest(evidence: Mapping[str, Mapping[str, object]], names: list[str]) -> Level | None:
    """The lowest level among the verified criteria of `names`; None when none is."""
    found = [
        of_evidence(evidence[n]) for n in names if evidence.get(n, {}).get("result") == "verified"
    ]
    return max(found, key=LEVELS.index) if found else None
