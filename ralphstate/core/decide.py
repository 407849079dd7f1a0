"""The Stop decision: a pure function of the state and the facts of one stop.

The rules of docs/design.md ("The Stop decision") in order; the first that applies
wins, and no other module repeats them. Faults (no state, a state that does not parse,
bad input) are rule 1 and are handled by the hook before this function is called: it
only ever sees a valid state.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ralphstate.core import budgets, fields, ownership, queries, render
from ralphstate.core import state as st
from ralphstate.core.marker import contains_marker

Rule = Literal[
    "runner",  # an iteration of `ralphstate run`: the runner decides, the agent may stop
    "not_in_progress",  # paused, complete or cancelled
    "other_session",  # owned by another session, or by another agent's session
    "unknown_loop",  # unowned and not made or adopted on this machine
    "max_iterations",  # the cap: pause
    "stall",  # no progress in `stallLimit` blocks: pause
    "budget",  # a budget reached (maxTokens, ...) where the stop would block: pause
    "unmet",  # a criterion is not verified: block
    "no_criteria",  # the loop has no criteria and was not started with --no-criteria: block
    "no_marker",  # every criterion is verified but the marker was not said: block
    "verify",  # completion claimed and the checks must run first: nothing written yet
    "untrusted_checks",  # completion claimed, the checks are not trusted here: pause
    "complete",  # every criterion verified and the marker said
]
Event = dict[str, object]


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


def decide_stop(
    state: st.State,
    session_id: str | None,
    last_message: str | Callable[[], str | None] | None,
    *,
    known_here: bool | Callable[[], bool],
    runner: bool = False,
    agent: str = st.DEFAULT_AGENT,
    checks_ran: bool = False,
    failures: Sequence[render.CheckFailure] = (),
    untrusted: bool = False,
    stale: bool | Callable[[], bool] = False,
    spent: tuple[int, fields.TranscriptUsage] | None = None,
) -> Decision:
    """One stop of `session_id` (of `agent`) that ended with `last_message` (or a
    function giving it, asked only when the marker is looked for).

    `known_here`: this machine made or adopted the loop (a function is asked only when
    the loop has no owner). `runner`: the stop is inside an iteration of `ralphstate
    run`. When the loop asks for verification on stop and this stop would complete it,
    the decision is `verify` until the hook has run the checks (`checks_ran`, with the
    `failures`, already applied to `state`, shaping the reason) or found them not
    trusted here (`untrusted`: the completion pauses). A claimed completion with
    `stale` evidence (a criterion verified on code that has changed since; a function
    is asked only at a claimed completion) is `verify` too, whatever verifyOnStop says.

    `spent`: the tokens the session's transcript shows since the last stop, and where
    that reading stopped; added to `usage` of a loop this session owns or adopts.
    Reaching a budget then pauses the loop where the stop would block."""
    if runner:
        return Decision("runner")
    if state["status"] != "in_progress":
        return Decision("not_in_progress")
    known = known_here if callable(known_here) else (lambda: bool(known_here))
    verdict = ownership.judge(state, session_id, agent, known=known)
    if verdict == "foreign":
        return Decision("other_session")
    if verdict == "unknown" or (verdict == "adopt" and not session_id):
        return Decision("unknown_loop")
    new = copy.deepcopy(state)
    events: list[Event] = []
    adopted = verdict == "adopt"
    if adopted:
        events.append(ownership.take(new, session_id, agent, "stop"))
    _count(new, spent)

    def done(
        rule: Rule,
        *,
        block: bool = False,
        reason: str | None = None,
        system_message: str | None = None,
        details: Event | None = None,
    ) -> Decision:
        events.append({"event": rule, **(details or {})})
        return Decision(rule, block, reason, system_message, new, events, adopted)

    if new["iteration"] >= new["maxIterations"]:
        new["status"], new["pauseReason"] = "paused", "max_iterations"
        return done("max_iterations", system_message=render.paused_max(new))

    said = last_message() if callable(last_message) else last_message
    marker_seen = contains_marker(said or "", new["completionMarker"])
    fingerprint = st.progress(new, marker_seen)
    changed = fingerprint != new.get("lastProgress")
    if not changed and new["blocksWithoutProgress"] >= new["stallLimit"]:
        new["status"], new["pauseReason"] = "paused", "stall"
        return done("stall", system_message=render.paused_stall(new))

    unmet = queries.unmet(new)
    # A loop without criteria is never done by the marker alone, unless the person said so.
    missing = not new["criteria"] and not new["noCriteria"]
    if unmet or missing or not marker_seen:
        over = budgets.over_budget(new)
        if over:  # spending more is what the budget forbids; a completion still completes
            new["status"], new["pauseReason"] = "paused", "budget"
            return done(
                "budget", system_message=render.paused_budget(over), details={"budget": over}
            )
        rule: Rule = "unmet" if unmet else "no_criteria" if missing else "no_marker"
        if unmet:
            reason = render.block_unmet(new, unmet, failures)
        else:
            reason = render.block_no_criteria(new) if missing else render.block_marker(new)
        new["iteration"] += 1
        new["blocksWithoutProgress"] = 0 if changed else new["blocksWithoutProgress"] + 1
        new["lastProgress"] = fingerprint
        return done(rule, block=True, reason=reason, details={"unmet": unmet} if unmet else {})

    if untrusted:  # completion waits until a person trusts the checks and resumes
        new["lastProgress"] = fingerprint
        new["status"], new["pauseReason"] = "paused", "untrusted_checks"
        return done("untrusted_checks", system_message=render.paused_untrusted(new))
    if not checks_ran and (verifies_on_stop(new) or (stale() if callable(stale) else stale)):
        return Decision("verify")
    new["lastProgress"] = fingerprint
    new["status"], new["pauseReason"] = "complete", None
    return done("complete", system_message=render.completed(new))


def _count(state: st.State, spent: tuple[int, fields.TranscriptUsage] | None) -> None:
    """Add what the session spent since the last stop, and where its reading stopped."""
    if spent is not None:
        tokens, reading = spent
        if tokens > 0:
            budgets.add_usage(state, tokens=tokens)
        state["transcriptUsage"] = reading


def verifies_on_stop(state: st.State) -> bool:
    """The loop asks the Stop hook to run its checks before a completion, and has some."""
    return queries.verify_on_stop(state) and any(c in state["checks"] for c in state["criteria"])
