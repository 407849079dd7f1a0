"""The Stop rules and what each does: `Rule`, in the order they are asked, and one row
of `OUTCOMES` per rule (docs/explanation/hooks.md, "The Stop hook").

A row says when its rule applies, whether it blocks, pauses (and for what reason),
completes or runs the checks, what the agent or the person reads, the desktop
notification and the report's colour. The decision (core/decide.py) picks the rule;
the hook, the notification, the report and the docs read what it does here, and no
other module repeats it.
"""

from __future__ import annotations

from typing import Literal

from ralphstate.core import state as st

# In the order they are asked: the first that applies wins (OUTCOMES says what each does).
Rule = Literal[
    "runner",
    "not_in_progress",
    "other_session",
    "unknown_loop",
    "max_iterations",
    "stall",
    "budget",
    "unmet",
    "no_criteria",
    "no_marker",
    "review",
    "verify",
    "untrusted_checks",
    "verify_yourself",
    "grade",
    "ungraded",
    "complete",
]

# The report's colours (report/html.py): a limit reached, a person must act, done.
AMBER = "#d98b1c"
PURPLE = "#a05cc7"
GREEN = "#2e9e4f"


# Plain classes, not dataclasses, for what is made at import: the Stop hook imports
# this module at every stop of a loop (docs/explanation/design.md, "The hot path").
class Outcome:
    """What a Stop rule does. `when` and `says` are its row in the docs: when it
    applies, and what the agent (a block's reason) or the person (a `systemMessage`)
    reads. `block`: the agent goes on; `pause`: the loop is paused for that reason and
    the agent stops; `complete`: the loop is complete; `runs_checks`: nothing yet, the
    hook runs the loop's checks and asks again. `notice`: the desktop notification
    (hooks/notify.py); `colour`: how the report draws it (report/html.py). A rule with
    none of these writes nothing and lets the agent stop."""

    __slots__ = (
        "block",
        "colour",
        "complete",
        "grades",
        "notice",
        "pause",
        "runs_checks",
        "says",
        "when",
    )

    def __init__(
        self,
        when: str,
        says: str = "",
        *,
        block: bool = False,
        pause: st.PauseReason | None = None,
        complete: bool = False,
        runs_checks: bool = False,
        grades: bool = False,
        notice: str | None = None,
        colour: str | None = None,
    ) -> None:
        self.when = when
        self.says = says
        self.block = block
        self.pause = pause
        self.complete = complete
        self.runs_checks = runs_checks
        self.grades = grades
        self.notice = notice
        self.colour = colour

    @property
    def ends(self) -> bool:
        """The loop stops being in progress: paused or complete."""
        return self.pause is not None or self.complete

    @property
    def does(self) -> str:
        """What the rule does, in a few words: with `says` and `notice`, its entry in the
        docs' numbered list of the rules (docs/explanation/hooks.md, "The Stop hook")."""
        if self.block:
            return "Block (`iteration` + 1)"
        if self.pause is not None:
            return f"Pause (`pauseReason: {self.pause}`) and allow"
        if self.complete:
            return "Complete (`status: complete`) and allow"
        if self.runs_checks:
            return "Nothing is written yet: the hook runs the checks, then decides again"
        if self.grades:
            return "Nothing is written yet: the hook runs the reviewer, then decides again"
        return "Allow; nothing is written"


OUTCOMES: dict[Rule, Outcome] = {
    "runner": Outcome(
        "the stop is inside an iteration of `ralphstate run` (`RALPHSTATE_RUNNER` is set),"
        " which decides for itself"
    ),
    "not_in_progress": Outcome("`status` is `paused`, `complete` or `cancelled`"),
    "other_session": Outcome(
        "the loop is owned by another session, or by a session of another agent"
    ),
    "unknown_loop": Outcome(
        "nobody owns the loop, this machine did not make or adopt it, and the session's"
        " agent did not write it (it came with a clone, or was here when the session started)",
        "a `systemMessage` saying so and naming `ralphstate adopt`, once a session",
    ),
    "max_iterations": Outcome(
        "`iteration >= maxIterations`",
        "a `systemMessage` saying how to continue",
        pause="max_iterations",
        notice="loop paused: it reached its iteration limit",
        colour=AMBER,
    ),
    "stall": Outcome(
        "nothing changed since the last block (criteria, steps, the marker said, the"
        " project's files), no background work is running, and"
        " `blocksWithoutProgress >= stallLimit`",
        "a `systemMessage`",
        pause="stall",
        notice="loop paused: no progress",
        colour=AMBER,
    ),
    "budget": Outcome(
        "a budget is reached (`usage` at `maxTokens`, `maxCost` or `maxDuration`) and the"
        " stop would block (a claimed completion still completes)",
        "a `systemMessage` saying which budget and how to raise it",
        pause="budget",
        notice="loop paused: its budget is reached",
        colour=PURPLE,
    ),
    "unmet": Outcome(
        "a criterion is unmet",
        "the reason names each unmet criterion (and each failed check), the next step and"
        " the exact commands to record progress",
        block=True,
    ),
    "no_criteria": Outcome(
        "the loop has no criteria and was not started with `--no-criteria`",
        "the reason asks for criteria",
        block=True,
    ),
    "no_marker": Outcome(
        "every criterion is met but the last reply does not say the completion marker"
        " (outside code)",
        "the reason asks for the marker, once the work is really done",
        block=True,
    ),
    "review": Outcome(
        "a claimed completion whose contract (criteria, checks, settings, guards) was"
        " weakened, or whose guarded files changed, since a person approved them; or,"
        " before any claim, a stop with an unmet criterion whose check changed that way"
        " and is not trusted on this machine (no check the agent may run proves it)",
        "a `systemMessage` naming each change and who made it, and `ralphstate review`"
        " (said first, `NEEDS YOUR REVIEW`, when the loop claimed nothing yet)",
        pause="review",
        notice="loop paused: what proves it changed, and needs your review",
        colour=PURPLE,
    ),
    "verify": Outcome(
        "a claimed completion (every criterion met, the marker said) with"
        " verify-on-stop on, or with evidence proven on other code than the work tree"
        " holds, and the checks have not run yet",
        runs_checks=True,
    ),
    "untrusted_checks": Outcome(
        "a claimed completion whose checks must run, but are not trusted on this machine",
        "a `systemMessage`: review the checks, `ralphstate trust`, `ralphstate resume`",
        pause="untrusted_checks",
        notice="loop paused: its checks are not trusted on this machine",
        colour=PURPLE,
    ),
    "verify_yourself": Outcome(
        "a claimed completion some of whose checks cannot finish within the stop's budget",
        "the reason names them, blames nothing, and says ralphstate verifies them in the"
        " background, how long so far",
        block=True,
    ),
    "grade": Outcome(
        "a claimed completion whose checks passed, of a loop with graded criteria (a"
        " rubric), and the reviewer has not graded them at this stop yet",
        grades=True,
    ),
    "ungraded": Outcome(
        "the reviewer failed a graded criterion, or gave no verdict",
        "the reason gives the reviewer's reasons, and how to go on; the criterion is unmet",
        block=True,
    ),
    "complete": Outcome(
        "a claimed completion",
        "a `systemMessage` saying what proved each criterion",
        complete=True,
        notice="loop complete",
        colour=GREEN,
    ),
}
