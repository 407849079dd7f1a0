"""The three hooks on a project that may have a loop: Stop, SessionStart, PreCompact.

`hooks.entry` finds the loop's directory and runs one of them with it. Each loads the
loop, decides (under the state lock when it writes: `Store.update`), and returns the
agent's output.
The rules are not here: the Stop decision is `core.decide.decide_stop`, ownership is
`core.ownership`, the words are `core.render`. A Fault is turned into an allowing
answer and a line for the person by `hooks.entry`.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ralphstate.agents.table import Agent
from ralphstate.core import clock, decide, fields, limits, ownership, queries, render, restore
from ralphstate.core import state as st
from ralphstate.core.decide import Decision
from ralphstate.core.errors import NoLoop, RalphstateError
from ralphstate.core.text import count
from ralphstate.hooks import notify
from ralphstate.hooks.entry import Fault, complain, note
from ralphstate.storage import lessons, notices, paths, registry, trust
from ralphstate.storage.store import Event, Store

if TYPE_CHECKING:
    from ralphstate.verify.execute import CheckResult

Output = dict[str, object]
HookInput = dict[str, object]
R = TypeVar("R")


class Unusable(Fault):
    """The loop is here but cannot be used (its state file cannot be read, parsed or
    validated, or its lock could not be had): allow, and tell the person once."""


def _load(loop: paths.LoopPaths) -> tuple[Store, st.State] | None:
    """The loop's store and state; None when it has no state file; Unusable if it
    cannot be used."""
    store = Store(loop, lock_timeout=limits.HOOK_LOCK_TIMEOUT)
    if not store.exists():
        return None
    try:
        return store, store.load()
    except NoLoop:
        return None
    except RalphstateError as exc:
        raise Unusable(str(exc).rstrip(".")) from None


def _update(
    store: Store, change: Callable[[st.State, list[Event]], R], read: st.State | None = None
) -> R:
    try:
        return store.update(change, read=read)
    except RalphstateError as exc:
        raise Unusable(str(exc).rstrip(".")) from None


Handler = Callable[[Agent, HookInput, paths.LoopPaths], Output | None]


def _telling(event: str, handler: Handler) -> Handler:
    """`handler`, which on a loop it cannot use lets the agent go (a fault, on stderr
    and in the log) and tells the person in a `systemMessage`, once per fault per
    session: the loop holds nobody until it is fixed."""

    def run(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
        try:
            return handler(agent, hook_input, loop)
        except Unusable as exc:
            problem = str(exc)
            complain(event, problem)
            if not agent.notices:
                return None
            session = agent.session_id(hook_input)
            if session is not None and not notices.first_time(loop, session, problem):
                return None
            out = agent.render_notice(render.unusable(problem))
            if event == "stop":  # and, since the gate failed open, a notification
                out = notify.attach(out, agent.name, notify.failed_open(problem), os.environ)
            return out

    return run


def _record(event: str, loop: paths.LoopPaths, state: st.State, pid: str | None) -> None:
    try:
        registry.record(loop, state, pid)
    except Exception as exc:  # noqa: BLE001 - the registry is a convenience
        complain(event, f"could not update the loop registry ({exc})")


# -- Stop -------------------------------------------------------------------------


def stop(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    if not agent.turn_finished(hook_input):
        return None  # the person stopped this turn: never hold it open
    found = _load(loop)
    if found is None:
        return None
    store, state = found
    session_id = agent.session_id(hook_input)
    if session_id is None:
        raise Fault("input has no session id")
    runner = bool(os.environ.get(ownership.ENV_RUNNER))
    boxes = _task_boxes(loop, state)
    read_from = state["transcriptUsage"]
    spent = None if runner else _spent(agent, hook_input, loop, state, session_id)
    said: list[str | None] = []
    stale: list[list[str]] = []  # criteria proven on older code, found at a claimed completion

    def is_stale(current: st.State) -> bool:
        if not stale:
            stale.append(_stale(loop, current))
        return bool(stale[0])

    def message() -> str | None:
        """The reply that ended the turn, read once and only when a rule needs it (a
        transcript read, or Copilot's wait for its events file, costs time)."""
        if not said:
            said.append(agent.last_message(hook_input))
            if said[0] is None and _unreadable(agent, hook_input):
                note(
                    "stop",
                    "the reply that ended the turn could not be read (no"
                    f" {agent.message_key or 'reply'}, and the transcript could not be"
                    " read); it is taken to hold no completion marker",
                )
        return said[0]

    def deciding(verified: Verified | None = None) -> Callable[[st.State, list[Event]], Decision]:
        def change(current: st.State, events: list[Event]) -> Decision:
            _with_tasks(current, boxes)  # the task file's boxes, as read at this stop
            results = verified.results if verified else []
            checked: list[Event] = []
            working = current
            if results:  # on a copy: kept only when the decision writes
                from ralphstate.verify.execute import apply

                working = copy.deepcopy(current)
                checked = apply(working, results, "stop")
            ran = {e["criterion"] for e in checked}
            # Counted from the file as first read: another stop that counted meanwhile
            # moved the offset, and what this one read is left to it.
            counted = spent if current["transcriptUsage"] == read_from else None
            decision = decide.decide_stop(
                working,
                session_id,
                message,
                known_here=lambda: registry.knows(loop, working),
                runner=runner,
                agent=agent.name,
                checks_ran=verified is not None,
                failures=[r for r in results if not r.passed and r.criterion in ran],
                untrusted=verified is not None and verified.untrusted,
                stale=lambda: is_stale(working),
                spent=counted,
            )
            if decision.state is not None:
                raw = cast(st.Raw, current)  # the store writes the dict it handed over
                raw.clear()
                raw.update(decision.state)
                events += checked + decision.events
            return decision

        return change

    # A stop that changes nothing (a loop paused, finished, another session's, not known
    # here, or inside `ralphstate run`) is decided on the file as read: no lock.
    decision = _update(store, deciding(), read=state)
    if decision.rule == "verify":  # the checks run outside the lock, then decide again
        names = stale[0] if stale and stale[0] and not decide.verifies_on_stop(state) else None
        decision = _update(store, deciding(_verify(store, names)))
    if decision.state is not None and (
        decision.adopted
        or decision.rule in ("complete", "max_iterations", "stall", "budget", "untrusted_checks")
    ):
        pid = agent.process_id(os.environ) if decision.adopted else None
        _record("stop", loop, decision.state, pid)
    return notify.after_stop(agent.render_stop(decision), agent.name, decision, os.environ)


def _spent(
    agent: Agent, hook_input: HookInput, loop: paths.LoopPaths, state: st.State, session_id: str
) -> tuple[int, fields.TranscriptUsage] | None:
    """The tokens this session's transcript shows since the last stop, and where the
    reading stopped: for an in-progress loop this session owns or may adopt, of an agent
    whose transcript gives them (docs/design.md, "Tokens inside a session"). None when
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


def _unreadable(agent: Agent, hook_input: HookInput) -> bool:
    """The input gives no reply, and names a transcript ralphstate cannot read."""
    if agent.message_key and agent.message_key in hook_input:
        return False  # the reply was given (an empty one is no marker): no transcript read
    path = hook_input.get(agent.transcript_key) if agent.transcript_key else None
    if not isinstance(path, str) or not path:
        return False
    try:
        return not Path(path).is_file() or not os.access(path, os.R_OK)
    except (OSError, ValueError):
        return True


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


class Verified:
    """What verify-on-stop found: the checks' results, or that they are not trusted."""

    def __init__(self, results: list[CheckResult], untrusted: bool = False) -> None:
        self.results = results
        self.untrusted = untrusted


def _stale(loop: paths.LoopPaths, state: st.State) -> list[str]:
    """The verified criteria whose check passed on other code than the work tree holds
    now (git is asked only when some evidence records a tree)."""
    if not any(e.get("tree") for e in state["evidence"].values()):
        return []
    from ralphstate.storage import git

    code = git.snapshot(loop)
    return queries.stale(state, code.tree if code else None)


def _verify(store: Store, names: list[str] | None = None) -> Verified:
    """Verify-on-stop, or the re-run of stale checks: run the loop's trusted checks
    (`names`, else all) within limits.STOP_VERIFY_BUDGET, outside the state lock.
    Untrusted checks are never run."""
    from ralphstate.verify import execute

    try:
        with execute.terminate_as_interrupt():
            return Verified(
                execute.run_checks(store, names, budget=limits.STOP_VERIFY_BUDGET, record=False)
            )
    except execute.Untrusted:
        return Verified([], untrusted=True)
    except RalphstateError as exc:
        raise Fault(str(exc).rstrip(".")) from None
    except KeyboardInterrupt:  # SIGTERM: the client gave up waiting for this hook
        raise Fault(
            "stopped while running the loop's checks; the running check was killed"
        ) from None


# -- SessionStart -----------------------------------------------------------------


def session_start(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    found = _load(loop)
    if found is None:
        return None
    store, state = found
    if state["status"] not in st.ACTIVE:
        return None
    session_id = agent.session_id(hook_input)
    source = str(hook_input.get("source") or "startup")
    if os.environ.get(ownership.ENV_RUNNER) and registry.knows(loop, state):
        # An iteration of `ralphstate run`, which owns the loop: restore it, take nothing.
        told = _with_task_file(loop, _told(store, state))
        return agent.render_context(
            restore.context(told, source, lessons=lessons.read(loop.dir)),
            restore.session_line(told, source),
        )
    pid = agent.process_id(os.environ)

    def cleared_here() -> bool:
        entry = registry.entry(loop) or {}
        return source == "clear" and bool(pid) and entry.get("claudePid") == pid

    def own(current: st.State, events: list[Event]) -> tuple[ownership.Verdict | None, st.State]:
        if current["status"] not in st.ACTIVE:  # cancelled or finished since it was read
            return None, current
        verdict = ownership.judge(
            current,
            session_id,
            agent.name,
            known=lambda: registry.knows(loop, current),
            cleared_here=cleared_here,
        )
        if verdict in ("adopt", "reown") and session_id:
            events.append(ownership.take(current, session_id, agent.name, source))
        return verdict, current

    # Taking the loop is decided again under the lock (two sessions cannot both take
    # it); restoring the session's own loop, or one it cannot take, needs no lock.
    verdict, state = _update(store, own, read=state)
    if verdict is None:
        return None
    if verdict == "unknown":
        checks = ""
        if not trust.is_trusted(loop, state):
            n = len(state["checks"])
            checks = (
                f" Its {count(n, 'check')} will not run until you review"
                f" {'it' if n == 1 else 'them'} (`ralphstate status`) and run `ralphstate trust`."
            )
        return agent.render_notice(
            f"ralphstate: this project has a loop that was not started on this machine"
            f" ({count(len(state['criteria']), 'criterion')}, status {state['status']})."
            " It is ignored until you run `ralphstate adopt`." + checks
        )
    if verdict == "foreign":
        from ralphstate.core.text import short_id, visible

        owner_agent = ownership.owner_agent(state)
        whose = "" if owner_agent == agent.name else f"{visible(owner_agent[:20])} "
        # Named by its spec's first line when made or adopted here; a loop that came with
        # a clone keeps its text out of every message, as an unknown one does.
        named = f' ("{render.headline(state["spec"])}")' if registry.knows(loop, state) else ""
        return agent.render_context(
            "A ralphstate loop in this project belongs to another session; do not work on"
            " it unless the person asks. To take it over here: `ralphstate adopt`.",
            f"ralphstate: the loop here{named} belongs to another session"
            f" ({whose}{short_id(state['sessionId'])}); run `ralphstate adopt` to"
            " continue it in this one.",
        )
    if verdict in ("adopt", "reown") and session_id:
        _record("session-start", loop, state, pid)
    trusted = trust.is_trusted(loop, state)
    state = _with_task_file(loop, _told(store, state))
    line = restore.session_line(state, source)
    if not trusted:
        line += " " + restore.untrusted_line(state)
    return agent.render_context(
        restore.context(state, source, trusted, lessons=lessons.read(loop.dir)), line
    )


def _told(store: Store, state: st.State) -> st.State:
    """The state to restore; an API error the last turn ended on (`lastFailure`) is
    told once: it is cleared in the file, and kept in the copy returned."""
    if not state["lastFailure"]:
        return state

    def clear(current: st.State, events: list[Event]) -> None:
        if current["lastFailure"]:
            current["lastFailure"] = None
            events.append({"event": "failure_told"})

    try:
        _update(store, clear)
    except Unusable as exc:
        complain("session-start", str(exc))
    return state


def _with_task_file(loop: paths.LoopPaths, state: st.State) -> st.State:
    """The state to restore with its task file's boxes as the steps, read now (nothing is
    written); a file that cannot be read leaves the steps as last read, and says so."""
    if not state["tasksFile"]:
        return state
    from ralphstate.loop import taskfile

    fresh = copy.deepcopy(state)
    try:
        taskfile.sync(fresh, loop.root)
    except taskfile.TaskFileError as exc:
        note("session-start", f"{str(exc).rstrip('.')}; the steps restored are as last read")
        return state
    return fresh


# -- PreCompact -------------------------------------------------------------------


def pre_compact(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    found = _load(loop)
    if found is None:
        return None
    store, state = found
    session_id = agent.session_id(hook_input)
    if session_id is None:  # whose checkpoint it would be is unknown: change nothing
        raise Fault("input has no session id")
    trigger = str(hook_input.get("trigger") or "")[:20]

    def checkpoint(current: st.State, events: list[Event]) -> None:
        """An active loop of this session's, or one it may adopt; not another session's,
        nor a loop that arrived with a clone (left alone, without the lock)."""
        if current["status"] not in st.ACTIVE:
            return
        verdict = ownership.judge(
            current, session_id, agent.name, known=lambda: registry.knows(loop, current)
        )
        if verdict in ("owner", "adopt"):
            current["lastCheckpoint"] = clock.now_iso()
            events.append({"event": "checkpoint", "trigger": trigger})

    _update(store, checkpoint, read=state)
    return None


# -- StopFailure --------------------------------------------------------------------


def stop_failure(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    """A turn of this session ended on an API error (Claude Code's StopFailure: `error`
    is `rate_limit`, `overloaded`, `billing_error`, ...): record it in history and in the
    state's `errors` and `lastFailure`, for the next SessionStart to tell. The output is
    ignored by the client; nothing is printed."""
    found = _load(loop)
    if found is None:
        return None
    store, state = found
    session_id = agent.session_id(hook_input)
    kind = str(hook_input.get("error") or "unknown")[:40]
    text = hook_input.get("error_details") or hook_input.get("last_assistant_message") or ""
    message = " ".join(str(text).split())[: limits.MAX_PROBLEM_CHARS]

    def record(current: st.State, events: list[Event]) -> None:
        if current["status"] not in st.ACTIVE:
            return
        verdict = ownership.judge(
            current, session_id, agent.name, known=lambda: registry.knows(loop, current)
        )
        runner = bool(os.environ.get(ownership.ENV_RUNNER))
        if verdict not in ("owner", "adopt") and not runner:
            return  # another session's loop, or one that came with a clone
        now = clock.now_iso()
        current["lastFailure"] = {"at": now, "error": kind, "message": message}
        st.add_error(current, f"the turn ended on an API error ({kind}): {message}", at=now)
        events.append({"event": "stop_failure", "error": kind, "message": message})

    _update(store, record, read=state)
    return None


def _post_tool_use(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    """The task tools mirrored into the loop: a module of its own (hooks/tasks.py)."""
    from ralphstate.hooks.tasks import post_tool_use

    return post_tool_use(agent, hook_input, loop)


def _task_completed(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    from ralphstate.hooks.taskgate import task_completed  # it builds on this module

    return task_completed(agent, hook_input, loop)


HANDLERS = {
    "stop": _telling("stop", stop),
    "session-start": _telling("session-start", session_start),
    "pre-compact": _telling("pre-compact", pre_compact),
    "stop-failure": _telling("stop-failure", stop_failure),
    "post-tool-use": _telling("post-tool-use", _post_tool_use),
    "task-completed": _telling("task-completed", _task_completed),
}
