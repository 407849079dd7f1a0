"""The run's grading of its rubrics (core/grading.py): after the run's own check, when
every criterion is met and some have a rubric, the reviewer grades them; a failed one
is unmet again, and the next iteration's prompt carries the reviewer's reasons
(run/prompt.py). A run ends complete only on its own passes: a verdict in state.json
counts as none."""

from __future__ import annotations

from collections.abc import Callable

from ralphstate.core import grading, queries
from ralphstate.core import state as st
from ralphstate.core.text import visible
from ralphstate.storage.loopdir.store import Event, Store


def grade_if_done(store: Store, state: st.State, line: Callable[[str], None]) -> st.State:
    """The loop after the reviewer graded its rubrics, when every criterion reads as
    met; else `state` as it is. `line(text)` tells the person each verdict."""
    if queries.unmet(state) or not grading.graded_names(state):
        return state
    from ralphstate.verify import grader

    graded = grader.graded_now(store)
    for v in graded.verdicts:
        said = "passed" if v.passed else "failed" if v.result == grading.FAIL else "gave no verdict"
        line(f"  reviewer {said}: {visible(v.criterion)} (graded, not verified)")

    def change(current: st.State, events: list[Event]) -> st.State:
        events += grading.apply(current, graded, "run")
        return current

    return store.update(change)
