"""`ralphstate run --strict` (`strict = true` in the config): a check that fails after
an iteration stops the loop (docs/reference/run.md, "Strict checks").

The checks run after every iteration in any case (the design notes' `check-after`);
strict mode is their `check-strict`. A criterion whose check has not passed yet is the
work still to do, not a failure: a loop paused for it would pause at its first
iteration. What strict stops on is a check that passed as the iteration began and fails
after it: the iteration broke what held. The loop pauses (`check_failed`) naming it.
"""

from __future__ import annotations

import dataclasses

from ralphstate.core import queries
from ralphstate.core import state as st
from ralphstate.core.render import clip, quote
from ralphstate.run.decide_iteration import Verdict
from ralphstate.run.result import IterationDecision

REASON: IterationDecision = "check_failed"


def broken(before: st.State, after: st.State) -> list[str]:
    """The criteria whose check passed as the iteration began (`before`) and failed in
    the verification after it (`after`)."""
    return [
        name
        for name in after["criteria"]
        if name in after["checks"]
        and name in before["criteria"]
        and queries.standing(before, name) == "verified"
        and queries.standing(after, name) == "failing"
    ]


def verdict(strict: bool, before: st.State, after: st.State, decided: Verdict) -> Verdict:
    """What the run does after the checks, strict mode applied: a run that would go on
    pauses when a check broke; any other verdict stands."""
    if not strict or decided.ending is not None:
        return decided
    names = broken(before, after)
    if not names:
        return decided
    shown = ", ".join(quote(clip(name, 80)) for name in names)
    detail = f"the check of {shown} passed before iteration {after['iteration']} and fails after it"
    return dataclasses.replace(
        decided, decision=REASON, ending="paused", reason=REASON, detail=detail
    )
