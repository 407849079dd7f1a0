"""`ralphstate run --check-in` (`check-in = true` in the config): the run checks in with
the person, as the design notes have a colleague-shaped loop do (docs/reference/run.md,
"The spec's shape").

`decide_iteration` pauses the loop (`check_in`) after an iteration that finished a step
(a milestone) and when every criterion is verified, before it completes: the person
looks at the work and runs `ralphstate run` again, which goes on (or, at the end,
verifies once more and completes). `init` says when a spec is colleague-shaped and
names this option; it is never on unless asked for, so an unattended run stays
unattended.
"""

from __future__ import annotations

from ralphstate.core import state as st


def finished(before: st.State, after: st.State) -> tuple[str, ...]:
    """The steps the iteration finished."""
    return tuple(s for s in after["completedSteps"] if s not in before["completedSteps"])
