"""SessionStart: the loop restored into a new, resumed, cleared or compacted session
(docs/explanation/design.md, "Ownership").

A session that may take the loop takes it (decided again under the state lock, so two
sessions cannot both take it) and is given the loop as context; a loop of another
session's, or one that came with a clone, is named to the person and left alone.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable

from ralphstate.agents.contract import Agent
from ralphstate.core import ownership, render, restore
from ralphstate.core import state as st
from ralphstate.core.text import count
from ralphstate.hooks import base
from ralphstate.hooks.base import HookInput, Output
from ralphstate.hooks.faults import Unusable, complain, note
from ralphstate.storage import lessons, paths, registry, trust
from ralphstate.storage.store import Event, Store


@base.telling("session-start")
def handle(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    found = base.load(loop)
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
    # Taking the loop is decided again under the lock (two sessions cannot both take
    # it); restoring the session's own loop, or one it cannot take, needs no lock.
    verdict, state = base.update(store, _owning(agent, loop, session_id, source, pid), read=state)
    if verdict is None:
        return None
    if verdict == "unknown":
        return _unknown(agent, loop, state)
    if verdict == "foreign":
        return _foreign(agent, loop, state)
    if verdict in ("adopt", "reown") and session_id:
        base.record("session-start", loop, state, pid)
    trusted = trust.is_trusted(loop, state)
    state = _with_task_file(loop, _told(store, state))
    line = restore.session_line(state, source)
    if not trusted:
        line += " " + restore.untrusted_line(state)
    return agent.render_context(
        restore.context(state, source, trusted, lessons=lessons.read(loop.dir)), line
    )


Owning = Callable[[st.State, list[Event]], tuple[ownership.Verdict | None, st.State]]


def _owning(
    agent: Agent, loop: paths.LoopPaths, session_id: str | None, source: str, pid: str | None
) -> Owning:
    """The change that takes the loop for this session when it may (`ownership.judge`),
    and returns the verdict (None: the loop is no longer active) and the state."""

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

    return own


def _unknown(agent: Agent, loop: paths.LoopPaths, state: st.State) -> Output | None:
    """For the person: a loop that came with a clone is here, and ignored until adopted."""
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


def _foreign(agent: Agent, loop: paths.LoopPaths, state: st.State) -> Output | None:
    """For the model and the person: the loop here is another session's."""
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
        base.update(store, clear)
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
