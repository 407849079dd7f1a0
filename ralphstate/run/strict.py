"""`ralphstate run --strict` (`strict = true` in the config): a check that fails after
an iteration stops the loop (docs/reference/run.md, "Strict checks").

The checks run after every iteration in any case (the design notes' `check-after`);
strict mode is their `check-strict`. A criterion whose check has not passed yet is the
work still to do, not a failure: a loop paused for it would pause at its first
iteration. What strict stops on is a check that passed as the iteration began and fails
after it: the iteration broke what held. `decide_iteration` pauses the loop
(`check_failed`) naming it.
"""

from __future__ import annotations

from ralphstate.core import queries
from ralphstate.core import state as st


def broken(strict: bool, before: st.State, after: st.State) -> tuple[str, ...]:
    """The criteria whose check passed as the iteration began (`before`) and failed in
    the verification after it (`after`); none unless `strict`."""
    if not strict:
        return ()
    return tuple(
        name
        for name in after["criteria"]
        if name in after["checks"]
        and name in before["criteria"]
        and queries.standing(before, name) == "verified"
        and queries.standing(after, name) == "failing"
    )
