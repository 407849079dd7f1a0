"""A step's retries, kept in the loop's state across runs (`stepRetries`,
docs/reference/run.md, "Retries per step").

Every iteration of `ralphstate run` that ends with a step still next counts one try of
it, in the state, so a run that pauses and the next one count on from the same number
(the design notes keep `task_retries` in the loop's state); the `step-retries` breaker
(run/guards.py) pauses the loop when a step's count reaches it. A step done, or gone
from the plan, loses its count. A run started on a loop that paused for that breaker
(`step_retries`) is the person's answer to the pause: that step starts counting again.
"""

from __future__ import annotations

from ralphstate.core import state as st
from ralphstate.run.guards import Breakers
from ralphstate.storage.loopdir.store import Event, Store

REASON = "step_retries"


def start(store: Store, state: st.State, breakers: Breakers) -> None:
    """Before a run's first iteration: the breaker picks up the next step's count as the
    state keeps it; a loop paused for its retries starts that step again."""
    remaining = state["remainingSteps"]
    step = remaining[0] if remaining else None
    if state["status"] == "paused" and state["pauseReason"] == REASON and step is not None:

        def forget(current: st.State, events: list[Event]) -> None:
            if current["stepRetries"].pop(step, None) is not None:
                events.append({"event": "step_retries_reset", "step": step})

        store.update(forget)
        return
    breakers.step = step
    breakers.step_count = state["stepRetries"].get(step, 0) if step is not None else 0


def count(store: Store, breakers: Breakers) -> None:
    """After an iteration (`Breakers.after` told which step is next): one more try of
    that step in the state, the counts of steps done or gone dropped, and the breaker's
    count set from the state's."""
    step = breakers.step

    def change(current: st.State, events: list[Event]) -> int:
        left = set(current["remainingSteps"])
        kept = {name: n for name, n in current["stepRetries"].items() if name in left}
        if step is not None and step in left:
            kept[step] = kept.get(step, 0) + 1
        current["stepRetries"] = kept
        return kept.get(step, 0) if step is not None else 0

    breakers.step_count = store.update(change)
