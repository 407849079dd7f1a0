"""Stop: the loop holds the agent until its criteria are verified and it says so
(docs/explanation/design.md, "The Stop decision").

The rules are `core.decide.decide_stop`'s; this module does everything impure around
them. It loads the loop, gathers the stop's facts (`decide.StopFacts`: the reply, what
the session spent, whether evidence is stale, what the checks found; each read only
when a rule asks), asks about the file as read and, when that decision would write (or
asks for the checks), asks again inside one locked update. It runs the checks when the
decision asks for them, records a loop it paused, completed or adopted, and renders the
answer with its notification.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from ralphstate.agents.contract import Agent
from ralphstate.core import decide, ownership, queries, stall
from ralphstate.core import state as st
from ralphstate.core.decide import Decision
from ralphstate.core.grading import HOOK_REVIEW_BUDGET, Graded
from ralphstate.core.outcomes import OUTCOMES, Rule
from ralphstate.core.proof import Pending
from ralphstate.core.render import CheckFailure
from ralphstate.hooks import arrival, base, notify
from ralphstate.hooks.base import HookInput, Output, Verified
from ralphstate.hooks.faults import Fault, Unusable, note
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import registry
from ralphstate.storage.system import paths

Change = Callable[[st.State, list[Event]], Decision]


@base.telling("stop")
def handle(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    if not agent.turn_finished(hook_input):
        return None  # the person stopped this turn: never hold it open
    found = base.load(loop)
    if found is None:  # no loop; unless one was deleted while it ran: said once
        from ralphstate.hooks import outside

        return outside.told_gone("stop", agent, loop)
    store, state = found
    session_id = agent.session_id(hook_input)
    if session_id is None:
        raise Fault("input has no session id")
    if agent.name == "claude" and state["status"] in st.ACTIVE:
        from ralphstate.hooks import forged

        by_hand = forged.shell_stop(agent, hook_input, session_id, str(loop.root))
        if by_hand is not None:  # nothing it decides counts: said, and let be
            return _run_by_hand(agent, loop, state, session_id, by_hand, hook_input)
    runner = bool(os.environ.get(ownership.ENV_RUNNER))
    known = arrival.Known(loop, session_id)  # made or adopted here, or written by its agent
    facts = decide.StopFacts(
        session_id,
        lambda: _tracker_body(loop, state) or _reply(agent, hook_input),
        agent=agent.name,
        runner=runner,
        known_here=known,
        stale=lambda current: _stale(loop, current),
        review=lambda current: _review(store, current),
        files=lambda: _files(loop),
        trusted=lambda current: _trusted(loop, current),
        background=stall.running(
            hook_input.get("background_tasks"), hook_input.get("session_crons")
        ),
    )
    boxes = _task_boxes(loop, state)
    spent = None if runner else _spent(agent, hook_input, loop, state, session_id)
    decisions = _Decisions(facts, state, boxes, spent)
    decisions.held_out = lambda current: _held_out(loop, current)
    # A stop that changes nothing (a loop paused, finished, another session's, not known
    # here, or inside `ralphstate run`) is decided on the file as read: no lock.
    decision = base.update(store, decisions.change(None), read=state)
    verified = None
    if OUTCOMES[decision.rule].runs_checks:  # outside the lock, then decide again
        stale = facts.stale_found
        names = list(stale) if stale and not decide.verifies_on_stop(state) else None
        verified = base.run_checks(store, names, session=session_id)
        facts.review_again()  # a pass the checks just recorded may be weakened
        decision = base.update(store, decisions.change(verified))
    graded = None
    if OUTCOMES[decision.rule].grades:  # the reviewer, outside the lock, then decide again
        graded = _graded(store)
        decision = base.update(store, decisions.change(verified, graded))
    if OUTCOMES[decision.rule].runs_checks and verified is None:  # held-out checks first
        verified = base.run_checks(store, None, session=session_id)
        facts.review_again()
        decision = base.update(store, decisions.change(verified, graded))
    if decision.state is not None and (decision.adopted or OUTCOMES[decision.rule].ends):
        pid = agent.process_id(os.environ) if decision.adopted else None
        base.record("stop", loop, decision.state, pid)
    said = _said_once(store, state, decision.rule, session_id)
    if said is not None:  # an ending, a replaced loop or a clone's: said once
        told, loud = said
        out = agent.render_notice(told)
        return notify.attach(out, agent.name, told, os.environ) if loud else out
    out = notify.after_stop(agent.render_stop(decision), agent.name, decision, os.environ)
    if decision.adopted and known.own and decision.state is not None:
        out = arrival.tell(agent, out, arrival.adopted_line(decision.state))
    return out


def _run_by_hand(
    agent: Agent,
    loop: paths.LoopPaths,
    state: st.State,
    session_id: str,
    why: str,
    hook_input: dict[str, object],
) -> Output | None:
    """A Stop the evidence says a shell ran (hooks/forged.py): it releases, completes,
    counts and records nothing of the loop's; the person hears it (stderr, the log, the
    history's `stop_refused`). The answer blocks, once: should it be the client's own
    Stop read before the client wrote the call's result to the transcript, the agent
    stays in its loop and its next stop is judged afresh; a stop the client already
    held (`stop_hook_active`) is let be, so the judgement can never trap a session."""
    from ralphstate.hooks import forged

    said = (
        "ralphstate: a Stop hook run from a shell, not by Claude Code, was ignored"
        f" ({why}); nothing it would decide counts"
    )
    event: Event = {"event": "stop_refused", "session": session_id[:200], "why": why[:300]}
    forged.refused("stop", loop, state, event, said)
    if hook_input.get("stop_hook_active") is True:
        return agent.render_notice(said + ".")
    reason = (
        "ralphstate could not take this stop for Claude Code's own: the session's"
        " transcript still shows a tool call waiting. Nothing was counted; stop again once"
        " your tool calls have ended."
    )
    held = Decision("other_session", block=True, reason=reason, system_message=said + ".")
    return agent.render_stop(held)


def _said_once(
    store: Store, state: st.State, rule: Rule, session_id: str
) -> tuple[str, bool] | None:
    """What the person hears once about a loop this stop leaves alone, and whether a
    notification goes with it: a loop ended outside ralphstate or by the agent itself, a
    loop id changed by hand, a loop that came with a clone."""
    from ralphstate.hooks import outside

    told = None
    if rule == "not_in_progress":
        told = outside.notice(store, state)
    elif rule == "unknown_loop":
        told = outside.replaced(store, state)
    if told is not None:
        return told, True
    if rule in ("unknown_loop", "other_session"):
        told = arrival.clone_notice(store.paths, state, session_id)
    return None if told is None else (told, False)


class _Decisions:
    """The stop's decisions, each asked inside `Store.update` on the state as it is
    then: the task file's boxes and the tokens as read at this stop, and the results of
    the checks once they ran."""

    def __init__(
        self,
        facts: decide.StopFacts,
        state: st.State,
        boxes: list[Any] | None,
        spent: decide.Spent | None,
    ) -> None:
        self.facts = facts
        self.boxes = boxes
        self.spent = spent
        self.read_from = state["transcriptUsage"]
        self.held_out: Callable[[st.State], bool] = lambda current: False

    def change(self, verified: Verified | None, graded: Graded | None = None) -> Change:
        def decided(current: st.State, events: list[Event]) -> Decision:
            return self.decide(current, events, verified, graded)

        return decided

    def decide(
        self,
        current: st.State,
        events: list[Event],
        verified: Verified | None,
        graded: Graded | None = None,
    ) -> Decision:
        _with_tasks(current, self.boxes)  # the task file's boxes, as read at this stop
        results = verified.results if verified else []
        checked: list[Event] = []
        working = current
        if results:  # on a copy: kept only when the decision writes
            from ralphstate.verify.records import apply

            working = copy.deepcopy(current)
            checked = apply(working, results, "stop")
        ran = {e["criterion"] for e in checked}
        held = verified.heldout if verified else []
        if held:  # a held-out check failed: its criterion is not verified
            from ralphstate.verify import heldoutchecks

            working = copy.deepcopy(current) if working is current else working
            checked += heldoutchecks.mark(working, held, "stop")
        found = None
        if verified is not None:
            failures: list[CheckFailure] = [
                r for r in results if not r.passed and r.criterion in ran
            ]
            failures += held
            left = verified if verified.deferred else None  # what it left to the model
            found = decide.Checked(failures, verified.untrusted, left)
        # Counted from the file as first read: another stop that counted meanwhile
        # moved the offset, and what this one read is left to it.
        counted = self.spent if current["transcriptUsage"] == self.read_from else None
        given = self.facts.given(spent=counted, checked=found, graded=graded)
        decision = decide.decide_stop(working, given)
        if decision.rule == "complete" and verified is None and self.held_out(current):
            return Decision("verify")  # the held-out checks run first (verify/heldoutchecks.py)
        if decision.state is not None:
            raw = cast(st.Raw, current)  # the store writes the dict it handed over
            raw.clear()
            raw.update(decision.state)
            events += checked + decision.events
        return decision


def _held_out(loop: paths.LoopPaths, state: st.State) -> bool:
    """Whether a criterion of the loop has a held-out check: a completion waits for them."""
    from ralphstate.verify import heldoutchecks

    return heldoutchecks.has_any(loop, state)


def _graded(store: Store) -> Graded:
    """The reviewer's verdicts on the loop's graded criteria (verify/grader.py)."""
    from ralphstate.verify import grader

    return grader.graded_now(store, budget=HOOK_REVIEW_BUDGET)


def _reply(agent: Agent, hook_input: HookInput) -> str | None:
    """The reply that ended the turn (a transcript read, or Copilot's wait for its
    events file, costs time: asked only when a rule needs it, once)."""
    said = agent.last_message(hook_input)
    why = _unreadable(agent, hook_input) if said is None else None
    if why is not None:
        note(
            "stop",
            "the reply that ended the turn could not be read (no"
            f" {agent.message_key or 'reply'}, and {why}); it is taken to hold no"
            " completion marker",
        )
    return said


def _spent(
    agent: Agent, hook_input: HookInput, loop: paths.LoopPaths, state: st.State, session_id: str
) -> decide.Spent | None:
    """The tokens this session's transcript shows since the last stop, and where the
    reading stopped: for an in-progress loop this session owns or may adopt, of an agent
    whose transcript gives them (docs/explanation/design.md, "Tokens inside a session"). None when
    there is nothing to count or the transcript cannot be read (the stop decides as
    ever; the log says so)."""
    if agent.usage_format is None or state["status"] != "in_progress":
        return None
    verdict = ownership.judge(
        state, session_id, agent.name, known=lambda: registry.knows(loop, state)
    )
    if verdict not in ("owner", "adopt"):  # a loop the stop leaves alone: nothing read
        return None
    path = hook_input.get(agent.transcript_key) if agent.transcript_key else None
    if not isinstance(path, str) or not path:
        return None
    from ralphstate.agents import transcript_usage

    found = transcript_usage.count(
        path, agent.usage_format, session_id, state["transcriptUsage"], state["startedAt"]
    )
    if found is None and os.path.lexists(path):  # a missing one has nothing to count
        note("stop", "the transcript could not be read, so this stop's tokens are not counted")
    return found


def _unreadable(agent: Agent, hook_input: HookInput) -> str | None:
    """What is wrong when the input gives no reply and its transcript cannot be read
    (a path that is not there, or not a path at all); None otherwise."""
    if agent.message_key and agent.message_key in hook_input:
        return None  # the reply was given (an empty one is no marker): no transcript read
    path = hook_input.get(agent.transcript_key) if agent.transcript_key else None
    if path is not None and not isinstance(path, str):
        kinds = {bool: "true or false", dict: "an object", list: "a list"}
        kind = kinds.get(type(path), "a number")  # what else JSON holds
        return f"its {agent.transcript_key} is {kind}, not a path"
    if not path:
        return None
    try:
        if Path(path).is_file() and os.access(path, os.R_OK):
            return None
    except (OSError, ValueError):
        pass
    return "the transcript could not be read"


def _tracker_body(loop: paths.LoopPaths, state: st.State) -> str | None:
    """The body of a tracker task file that holds the marker: it counts as the reply's."""
    from ralphstate.loop import tracker

    return tracker.body_with_marker(loop.root, state["tasksFile"], state["completionMarker"])


def _task_boxes(loop: paths.LoopPaths, state: st.State) -> list[Any] | None:
    """The checkboxes of an active loop's task file, read once at this stop; None
    without one. A file that cannot be read makes the loop Unusable (the stop goes through
    and the person is told), as a broken state file does."""
    if not state["tasksFile"] or state["status"] not in st.ACTIVE:
        return None
    from ralphstate.loop import taskfile

    try:
        return taskfile.boxes(taskfile.read(loop.root, state["tasksFile"]))
    except taskfile.TaskFileError as exc:
        raise Unusable(str(exc).rstrip(".")) from None


def _with_tasks(state: st.State, boxes: list[Any] | None) -> None:
    """Make the task file's boxes, when the loop has one, the state's steps."""
    if boxes is not None:
        from ralphstate.loop import taskfile

        taskfile.apply(state, boxes)


def _review(store: Store, state: st.State) -> Pending:
    """What a person must review before this claimed completion counts; a fault in
    finding it (git, the ledger) asks for the review rather than let it pass."""
    from ralphstate.loop import proofreview

    try:
        return proofreview.pending(store, state)
    except Exception as exc:  # noqa: BLE001 - the review must not crash the hook
        note("stop", f"could not compare the loop's proof with the approved one ({exc})")
        return Pending([f"the proof could not be compared with the approved one ({exc})"])


def _trusted(loop: paths.LoopPaths, state: st.State) -> bool:
    """Whether a person trusted the loop's checks on this machine: `verify` runs them."""
    from ralphstate.storage.peruser import truststore

    return truststore.is_trusted(loop, state)


def _files(loop: paths.LoopPaths) -> str | None:
    """The stamp of the project's files, for a stop whose bookkeeping did not change: a
    turn that changed them is progress (core/stall.py)."""
    from ralphstate.storage.repo import filestamp

    return filestamp.stamp(loop)


def _stale(loop: paths.LoopPaths, state: st.State) -> list[str]:
    """The verified criteria whose check passed on other code than the work tree holds
    now (git is asked only when some evidence records a tree), and those whose pass
    only an agent's own `verify` recorded (core/provenance.py): it does not count."""
    from ralphstate.core import provenance

    checked = [c for c in state["criteria"] if c in state["checks"]]
    agents = provenance.unsealed(state["evidence"], checked)
    if not any(e.get("tree") for e in state["evidence"].values()):
        return agents
    from ralphstate.storage.repo import git

    code = git.snapshot(loop)  # None: failed, the evidence named a tree (git was there)
    found = set(queries.stale(state, code.tree if code else queries.UNKNOWN_TREE) + agents)
    return [c for c in state["criteria"] if c in found]
