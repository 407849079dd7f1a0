"""The Stop decision: a pure function of the state and the facts of one stop.

The rules in the order of `Rule` (core/outcomes.py, listed in docs/explanation/hooks.md,
"The Stop hook"); the first that applies wins, and no other module repeats them. What
each rule does (block or allow, the pause and its reason, what the person reads and
hears, the report's colour) is its row of `OUTCOMES` there. Faults (no state, a state
that does not parse, bad input) are handled by the hook before this function is called:
it only ever sees a valid state.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ralphstate.core import (
    budgets,
    fields,
    grading,
    ownership,
    queries,
    render,
    schema,
    stall,
    unfinished,
)
from ralphstate.core import state as st
from ralphstate.core.marker import contains_marker
from ralphstate.core.outcomes import OUTCOMES, Rule
from ralphstate.core.proof import Pending, completion_note, paused_review

Event = dict[str, object]
Spent = tuple[int, fields.TranscriptUsage]


@dataclass
class Decision:
    rule: Rule
    block: bool = False
    reason: str | None = None
    system_message: str | None = None
    # The state to write, or None to leave the file as it is.
    state: st.State | None = None
    events: list[Event] = field(default_factory=list)
    adopted: bool = False


class Checked:
    """What the hook's run of the loop's checks found at this stop, applied to the state:
    the checks that failed, that they are not trusted here, or what it `left` the model."""

    __slots__ = ("failures", "left", "untrusted")

    def __init__(
        self,
        failures: Sequence[render.CheckFailure] = (),
        untrusted: bool = False,
        left: Any = None,
    ) -> None:
        self.failures = failures
        self.untrusted = untrusted
        self.left = left


class _Read:
    """What a stop has read so far, shared by its decisions (`StopFacts.given`)."""

    __slots__ = ("files", "looked", "replied", "reply", "review", "stale")

    def __init__(self) -> None:
        self.replied = False
        self.reply: str | None = None
        self.looked = False
        self.files: str | None = None
        self.stale: Sequence[str] | None = None  # None: not asked
        self.review: Pending | None = None  # None: not asked


class StopFacts:
    """The facts of one stop that `decide_stop` weighs besides the state.

    `session_id` and `agent`: whose stop it is. `runner`: the stop is inside an
    iteration of `ralphstate run`. `spent`: the tokens the session's transcript shows
    since the last stop, and where that reading stopped. `checked`: what the hook's run
    of the checks found (None: they have not run). `background`: the agent reports
    background work still running (Claude Code's `background_tasks`).

    The facts that cost time to find are values (a table of tests) or functions (the
    hook), asked only when a rule needs them: `reply`, the reply that ended the turn,
    when the marker is looked for (a transcript read); `known_here(state)`, whether this
    machine made or adopted the loop, of a loop nobody owns (the registry);
    `stale(state)`, the verified criteria proven on other code than the work tree holds
    now, or only by an agent's own `verify` (core/provenance.py), at a claimed
    completion (git); `files`, the stamp of the project's files
    (storage/repo/filestamp.py; None when it cannot be taken), at a stop whose bookkeeping did
    not change; `trusted(state)`, whether a person trusted the loop's checks on this
    machine, at a stop whose unmet criteria have checks (the trust store). The reply,
    the stale criteria and the stamp are read once per stop: the facts `given` makes
    for its next decision share them."""

    __slots__ = (
        "_files",
        "_known",
        "_read",
        "_reply",
        "_review",
        "_stale",
        "_trusted",
        "agent",
        "background",
        "checked",
        "graded",
        "runner",
        "session_id",
        "spent",
    )

    def __init__(
        self,
        session_id: str | None,
        reply: str | Callable[[], str | None] | None = None,
        *,
        agent: str = schema.DEFAULT_AGENT,
        runner: bool = False,
        known_here: bool | Callable[[st.State], bool] = False,
        stale: Sequence[str] | Callable[[st.State], Sequence[str]] = (),
        spent: Spent | None = None,
        checked: Checked | None = None,
        review: Pending | Callable[[st.State], Pending] | None = None,
        files: str | Callable[[], str | None] | None = None,
        background: bool = False,
        graded: grading.Graded | None = None,
        trusted: bool | Callable[[st.State], bool] = True,
    ) -> None:
        self.session_id = session_id
        self.graded = graded
        self.agent = agent
        self.runner = runner
        self.spent = spent
        self.checked = checked
        self.background = background
        self._reply = reply
        self._known = known_here
        self._stale = stale
        self._review = review
        self._files = files
        self._trusted = trusted
        self._read = _Read()

    def given(
        self, *, spent: Spent | None, checked: Checked | None, graded: grading.Graded | None = None
    ) -> StopFacts:
        """These facts for another decision of the same stop: what it counts, what the
        checks found and what the reviewer graded; what was read stays read."""
        other = copy.copy(self)
        other.spent, other.checked, other.graded = spent, checked, graded
        return other

    @property
    def reply(self) -> str | None:
        read = self._read
        if not read.replied:
            read.reply = self._reply() if callable(self._reply) else self._reply
            read.replied = True
        return read.reply

    @property
    def files(self) -> str | None:
        read = self._read
        if not read.looked:
            read.files = self._files() if callable(self._files) else self._files
            read.looked = True
        return read.files

    def known_here(self, state: st.State) -> bool:
        return self._known(state) if callable(self._known) else self._known

    def trusted(self, state: st.State) -> bool:
        return self._trusted(state) if callable(self._trusted) else self._trusted

    def stale(self, state: st.State) -> Sequence[str]:
        read = self._read
        if read.stale is None:
            read.stale = self._stale(state) if callable(self._stale) else self._stale
        return read.stale

    def review(self, state: st.State) -> Pending:
        """What a person must review before this completion counts (core/proof.py)."""
        read = self._read
        if read.review is None:
            given = self._review
            read.review = (given(state) if callable(given) else given) or Pending([])
        return read.review

    def review_again(self) -> None:
        """Ask `review` anew at the next decision: the checks this stop ran recorded
        passes that may be weakened (a plugin only the sealed run saw)."""
        self._read.review = None

    @property
    def stale_found(self) -> Sequence[str] | None:
        """The stale criteria as first read at this stop; None when nothing asked."""
        return self._read.stale


def decide_stop(state: st.State, facts: StopFacts) -> Decision:
    """One stop, with its `facts`: the rules of `Rule` in order, on a copy of `state`.

    When the loop asks for verification on stop and this stop would complete it, the
    decision is `verify` until the hook has run the checks (`facts.checked`, already
    applied to `state`, its failures shaping the reason) or found them not trusted here
    (the completion pauses). A claimed completion with stale evidence, or with a pass
    only an agent's own `verify` recorded, is `verify` too, whatever verifyOnStop says.
    What the session spent (`facts.spent`) is added to `usage` of a loop this session
    owns or adopts; reaching a budget then pauses the loop where the stop would block."""
    if facts.runner:
        return Decision("runner")
    if state["status"] != "in_progress":
        return Decision("not_in_progress")
    verdict = ownership.judge(
        state, facts.session_id, facts.agent, known=lambda: facts.known_here(state)
    )
    if verdict == "foreign":
        return Decision("other_session")
    if verdict == "unknown" or (verdict == "adopt" and not facts.session_id):
        return Decision("unknown_loop")
    made = _Deciding(state, facts, adopted=verdict == "adopt")
    new = made.state
    if new["iteration"] >= new["maxIterations"]:
        return made.done("max_iterations", render.paused_max(new))
    marker_seen = contains_marker(facts.reply or "", new["completionMarker"])
    book = st.progress(new, marker_seen)
    fingerprint, counts = stall.weigh(new, book, facts.background, lambda: facts.files)
    if counts == "none" and new["blocksWithoutProgress"] >= new["stallLimit"]:
        return made.done("stall", render.paused_stall(new))
    unmet = queries.unmet(new)
    # A loop without criteria is never done by the marker alone, unless the person said so.
    missing = not new["criteria"] and not new["noCriteria"]
    if unmet or missing or not marker_seen:
        held = _held_for_review(made, facts, unmet, fingerprint)
        return held or _block(made, unmet, missing, (fingerprint, counts), facts.checked)
    pending = facts.review(new)
    if pending.changes:  # what proves it changed: a person looks before it counts
        new["lastProgress"] = fingerprint
        return made.done("review", paused_review(pending), {"changes": pending.changes[:20]})
    checked = facts.checked
    if checked is not None and checked.untrusted:  # waits for a person to trust and resume
        new["lastProgress"] = fingerprint
        return made.done("untrusted_checks", render.paused_untrusted(new))
    if checked is None and (verifies_on_stop(new) or facts.stale(new)):
        return Decision("verify")
    graded = _left_or_graded(made, facts, (fingerprint, counts), checked)
    if graded is not None:
        return graded
    new["lastProgress"] = fingerprint
    return made.done("complete", render.completed(new) + completion_note(pending))


def _left_or_graded(
    made: _Deciding, facts: StopFacts, progress: tuple[str, stall.Counts], checked: Checked | None
) -> Decision | None:
    """A claimed completion some of whose checks were left to the model (they prove
    nothing either way: it runs them) blocks. One whose checks passed, of a loop with
    graded criteria, is `grade` until the reviewer graded them at this stop, then its
    verdicts are written and it blocks when one did not pass (core/grading.py). None:
    nothing left and nothing to grade, or every grade passed."""
    if checked is not None and checked.left:
        return _block(made, [], False, progress, checked)
    if not grading.graded_names(made.state):
        return None
    if facts.graded is None:
        return Decision("grade")
    made.events += grading.apply(made.state, facts.graded, "stop")
    if facts.graded.failures:
        return _block(made, [], False, progress, checked, facts.graded)
    return None


def _held_for_review(
    made: _Deciding, facts: StopFacts, unmet: list[str], fingerprint: str
) -> Decision | None:
    """The pause for review of a stop whose unmet criteria have checks only a person can
    let run (changed since they approved them, not trusted here): nothing the agent does
    proves them, so the review, said first, is why the loop stops, not a stall."""
    new = made.state
    stuck = [c for c in unmet if c in new["checks"]]
    if not stuck or facts.trusted(new):
        return None
    pending = facts.review(new)
    if not pending.changes:  # a check the agent added: trust, not review, is asked
        return None
    new["lastProgress"] = fingerprint
    said = paused_review(pending, stuck=stuck)
    return made.done("review", said, {"changes": pending.changes[:20]})


def _block(
    made: _Deciding,
    unmet: list[str],
    missing: bool,
    progress: tuple[str, stall.Counts],
    checked: Checked | None,
    graded: grading.Graded | None = None,
) -> Decision:
    """A stop that would block: it does, unless a budget is reached (spending more is
    what the budget forbids). `progress`: the stop's fingerprint, and what the stop
    counts as (`core.stall`)."""
    new = made.state
    over = budgets.over_budget(new)
    if over:
        return made.done("budget", render.paused_budget(over), {"budget": over})
    failures = checked.failures if checked is not None else ()
    details: Event = {"unmet": unmet} if unmet else {}
    if unmet:
        rule: Rule = "unmet"
        reason = render.block_unmet(new, unmet, failures)
    elif missing:
        rule, reason = "no_criteria", render.block_no_criteria(new)
    elif checked is not None and checked.left:
        rule, reason = "verify_yourself", ""
    elif graded is not None:
        rule, reason = "ungraded", grading.block_reason(graded.failures)
        details["ungraded"] = [v.criterion for v in graded.failures]
    else:
        rule, reason = "no_marker", render.block_marker(new)
    if checked is not None and checked.left:  # said first: they are not to blame
        reason = unfinished.reason(new, checked.left, reason, details)
    fingerprint, counts = progress
    if checked is not None and checked.left and checked.left.background is not None:
        counts = "held"  # ralphstate's own verification runs: waiting for it is no stall
    new["iteration"] += 1
    stall.count(new, fingerprint, counts)
    return made.done(rule, reason, details or None)


class _Deciding:
    """A decision in the making: the copy of the state it would write, and its events."""

    def __init__(self, state: st.State, facts: StopFacts, adopted: bool) -> None:
        self.state = copy.deepcopy(state)
        self.events: list[Event] = []
        self.adopted = adopted
        if adopted:
            self.events.append(ownership.take(self.state, facts.session_id, facts.agent, "stop"))
        _count(self.state, facts.spent)

    def done(self, rule: Rule, message: str, details: Event | None = None) -> Decision:
        """The decision of `rule` as OUTCOMES says: `message` is a block's reason, or
        else the person's `systemMessage`; the rule's event goes to the history."""
        outcome = OUTCOMES[rule]
        new = self.state
        if outcome.pause is not None:
            new["status"], new["pauseReason"] = "paused", outcome.pause
        elif outcome.complete:
            new["status"], new["pauseReason"] = "complete", None
        self.events.append({"event": rule, **(details or {})})
        reason, system_message = (message, None) if outcome.block else (None, message)
        return Decision(rule, outcome.block, reason, system_message, new, self.events, self.adopted)


def _count(state: st.State, spent: Spent | None) -> None:
    """Add what the session spent since the last stop, and where its reading stopped."""
    if spent is not None:
        tokens, reading = spent
        if tokens > 0:
            budgets.add_usage(state, tokens=tokens)
        state["transcriptUsage"] = reading


def verifies_on_stop(state: st.State) -> bool:
    """The loop asks the Stop hook to run its checks before a completion, and has some."""
    return queries.verify_on_stop(state) and any(c in state["checks"] for c in state["criteria"])
