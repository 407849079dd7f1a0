"""TaskCompleted: a task tied to a criterion is done only when the criterion's check passes.

Claude Code runs `ralphstate hook task-completed` when its model marks a task of its
task list completed (TaskUpdate), with the task's `task_id`, `task_subject` and
`task_description`. When the task is tied to criteria (`core.tie`) of an in-progress
loop of this session's, and those criteria have checks, the checks run as verify-on-stop
runs them (`hooks.base.run_checks`: only trusted checks, within
limits.STOP_VERIFY_BUDGET, never with verify-on-stop turned off) and their results are
recorded as `ralphstate verify` records them (`criteriaStatus`, `evidence`, a `check`
event with `by: task`). A failing check refuses the completion: `faults.Refused`, exit 2,
the reason on stderr, which Claude Code feeds to the model. Anything else lets the task
be completed, a fault included (docs/explanation/design.md, "The task gate").
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ralphstate.agents.contract import Agent
from ralphstate.core import ownership, queries, render, tie
from ralphstate.core import state as st
from ralphstate.hooks import base
from ralphstate.hooks.base import HookInput, Output
from ralphstate.hooks.faults import Fault, Refused
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import notices, registry, truststore
from ralphstate.storage.system import paths

# What `notices` remembers, per session, of the one notice on untrusted checks.
UNTRUSTED_NOTICE = "task-completed: checks not trusted"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


@base.telling("task-completed")
def handle(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    found = base.load(loop)
    if found is None:
        return None
    store, state = found
    if state["status"] != "in_progress":
        return None  # a paused or finished loop holds nothing, as at a stop
    session_id = agent.session_id(hook_input)
    if session_id is None:
        raise Fault("input has no session id")

    def known() -> bool:
        return registry.knows(loop, state)

    verdict = ownership.judge(state, session_id, agent.name, known=known)
    runner = bool(os.environ.get(ownership.ENV_RUNNER)) and known()
    if verdict not in ("owner", "adopt") and not runner:
        return None  # another session's loop, or one that came with a clone
    subject = _text(hook_input.get("task_subject"))
    tied = tie.tied(state, subject, _text(hook_input.get("task_description")))
    names = [n for n in tied if n in state["checks"]]
    graded = [n for n in tied if n in state["rubrics"]]
    if not names or not queries.verify_on_stop(state):
        _graded(store, graded, subject)
        return None
    if not truststore.is_trusted(loop, state):
        return _untrusted(agent, loop, session_id, subject, names)
    verified = base.run_checks(store, names, by="task", session=session_id, held_for=names)
    if verified.untrusted:  # the checks changed since they were read
        return _untrusted(agent, loop, session_id, subject, names)

    def still_ours(current: st.State) -> bool:
        """Decided again under the lock: the loop may have been cancelled, paused,
        replaced or taken by another session while the checks ran."""
        if current["status"] != "in_progress" or current["loopId"] != state["loopId"]:
            return False
        again = ownership.judge(current, session_id, agent.name, known=known)
        return runner or again in ("owner", "adopt")

    _judge(store, state, subject, verified, still_ours)
    _graded(store, graded, subject)
    return None


def _graded(store: Store, names: list[str], subject: str) -> None:
    """The reviewer grades the task's criteria that have a rubric, after their checks
    passed (core/grading.py): Refused, with its reasons, when it passes one not."""
    from ralphstate.core import grading
    from ralphstate.verify import grader

    if not names:
        return
    graded = grader.graded_now(store, names, grading.HOOK_REVIEW_BUDGET)
    if not graded.verdicts:
        return

    def record(current: st.State, events: list[Event]) -> None:
        found = grading.apply(current, graded, "task")
        for event in found:
            event["task"] = render.clip(subject, 200)
        events += found

    base.update(store, record)
    if graded.failures:
        raise Refused(grading.block_reason(graded.failures))


def _judge(
    store: Store,
    state: st.State,
    subject: str,
    verified: base.Verified,
    still_ours: Callable[[st.State], bool],
) -> None:
    """Record what the task's checks proved; Refused when one failed, or when some did
    not fit the gate's budget (they proved nothing yet: ralphstate runs them in the
    background). A loop that is no longer this session's in progress (`still_ours`,
    under the lock) records nothing and refuses nothing: the task completes, as it
    would have without the loop."""
    results = verified.results

    def record(current: st.State, events: list[Event]) -> list[str] | None:
        if not still_ours(current):
            return None
        from ralphstate.verify.records import apply

        checked = apply(current, results, "task")
        if verified.heldout:  # verify/heldoutchecks.py: its criterion is not verified
            from ralphstate.verify import heldoutchecks

            checked += heldoutchecks.mark(current, verified.heldout, "task")
        for event in checked:
            event["task"] = render.clip(subject, 200)
        events += checked
        return [str(e["criterion"]) for e in checked if "criterion" in e]

    recorded = base.update(store, record)
    if recorded is None:
        return
    failures: list[render.CheckFailure] = [
        r for r in results if not r.passed and r.criterion in recorded
    ]
    failures += verified.heldout
    if failures:
        raise Refused(render.task_refused(failures))
    if verified.deferred:
        from ralphstate.core import unfinished

        raise Refused(unfinished.task_left(state, verified))


def _untrusted(
    agent: Agent, loop: paths.LoopPaths, session: str, subject: str, names: list[str]
) -> Output | None:
    """The task goes through unchecked; the person is told once per session."""
    if not agent.notices or not notices.first_time(loop, session, UNTRUSTED_NOTICE):
        return None
    return agent.render_notice(render.task_unchecked(subject, names))
