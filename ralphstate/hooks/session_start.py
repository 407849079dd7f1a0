"""SessionStart: the loop restored into a new, resumed, cleared or compacted session
(docs/explanation/design.md, "Ownership").

A session that may take the loop takes it (decided again under the state lock, so two
sessions cannot both take it) and is given the loop as context: an unowned loop made
here, one the same process owned before /clear, or one whose owner left it untouched
for its `ownerTimeout`. A loop of another live session's, or one that came with a
clone, is named to the person and left alone; the session that found a clone's loop
here is noted, so its Stop hook never takes that file for one its own agent wrote.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
import sys
from collections.abc import Callable

from ralphstate.agents.contract import Agent
from ralphstate.core import ownership, render, restore
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import count
from ralphstate.hooks import base
from ralphstate.hooks.base import HookInput, Output
from ralphstate.hooks.faults import Unusable, complain, note
from ralphstate.storage.loopdir import lessons
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import registry, truststore
from ralphstate.storage.system import paths


@base.telling("session-start")
def handle(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    found = base.load(loop)
    if found is None:  # no loop; unless one was deleted while it ran: said once
        from ralphstate.hooks import outside

        return outside.told_gone("session-start", agent, loop)
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
    before = state, _untouched(loop, state)  # whose, and for how long, if it is taken over
    timed_out = ownership.gone(state, modified(loop))  # else a takeover is a crash's
    # Taking the loop is decided again under the lock (two sessions cannot both take
    # it); restoring the session's own loop, or one it cannot take, needs no lock.
    suspect = _Suspect(agent, hook_input, session_id, source)
    owning = _owning(agent, loop, session_id, source, pid, suspect)
    verdict, state = base.update(store, owning, read=state)
    if suspect.refused is not None:  # a shell's input: the loop stays where it was
        return _refused(agent, loop, state, session_id or "?", suspect.refused)
    if verdict is None:
        return None
    if verdict == "unknown":
        if session_id and source not in CONTINUING:
            _note_present(loop, session_id)
        return _unknown(agent, loop, state)
    if verdict == "foreign":
        return _foreign(agent, loop, state)
    if verdict in TAKING and session_id:
        base.record("session-start", loop, state, pid)
    trusted = truststore.is_trusted(loop, state)
    state = _with_task_file(loop, _told(store, state))
    line = restore.session_line(state, source)
    line += _taken_over(*before, crashed=not timed_out) if verdict == "takeover" else ""
    line += _unsure(session_id or "?", suspect.unsure)
    if not trusted:
        line += " " + restore.untrusted_line(state)
    said, switched_off = _said_to_person(agent, loop, state, source)
    out = agent.render_context(
        restore.context(state, source, trusted, lessons=lessons.read(loop.dir)), line + said
    )
    if switched_off:  # and a notification: the person may not read the session's line
        from ralphstate.hooks import notify

        return notify.attach(out, agent.name, switched_off, os.environ)
    return out


# Said at a session's start when no settings file allows the agent's own commands.
ALLOW_MISSING = (
    "No permission rule allows the agent's ralphstate commands here, so each asks you"
    " first and `claude -p` refuses them: run /ralphstate:allow once (or"
    " `ralphstate install --allow-only`)."
)


def _said_to_person(
    agent: Agent, loop: paths.LoopPaths, state: st.State, source: str
) -> tuple[str, str | None]:
    """What the session's line adds for the person: no rule allows the agent's own
    commands, and a gate switched off (each led by a space), or nothing; and the gate's
    line alone, when it is said."""
    said = ""
    if agent.name == "claude" and source not in CONTINUING and _lacks_allow(loop):
        said += " " + ALLOW_MISSING
    switched_off = _gate(loop, state)
    return said + (" " + switched_off if switched_off else ""), switched_off


def _gate(loop: paths.LoopPaths, state: st.State) -> str | None:
    """The line for a loop hooks enforced once and nothing enforces now
    (loop/gateoff.py); else what enforces it is remembered for the next time."""
    from ralphstate.loop import gateoff

    said = gateoff.no_longer(loop, state)
    if said is None:
        gateoff.remember(loop)
    return said


def _lacks_allow(loop: paths.LoopPaths) -> bool:
    from ralphstate.loop import enforcement

    return enforcement.lacks_allow(str(loop.root))


# The sources that go on with a session that already started (its own loop file is
# not "found at its start"), as the agents name them.
CONTINUING = ("resume", "compact")
# The verdicts under which a starting session takes the loop.
TAKING = ("adopt", "reown", "takeover")

Owning = Callable[[st.State, list[Event]], tuple[ownership.Verdict | None, st.State]]


class _Suspect:
    """Whether this SessionStart, which would take the loop, came from a shell
    (hooks/forged.py): asked once, when a verdict would take it. `refused`: why the
    evidence says a shell ran it (the loop is not taken); `unsure`: why it cannot be
    told from the client's (the loop is taken, and that is said)."""

    def __init__(
        self, agent: Agent, hook_input: HookInput, session_id: str | None, source: str
    ) -> None:
        self.agent, self.hook_input, self.session_id = agent, hook_input, session_id
        self.source = source
        self.asked = False
        self.refused: str | None = None
        self.unsure: str | None = None

    def shell(self, owner: str | None, reown: bool) -> bool:
        """True when the loop must not be taken: the evidence says a shell ran this."""
        if not self.asked and self.session_id:
            from ralphstate.hooks import forged

            self.asked = True
            found = forged.shell_start(
                self.agent, self.hook_input, self.session_id, self.source, owner, reown
            )
            if found is not None:
                self.refused, self.unsure = (found[1], None) if found[0] else (None, found[1])
        return self.refused is not None


def _owning(
    agent: Agent,
    loop: paths.LoopPaths,
    session_id: str | None,
    source: str,
    pid: str | None,
    suspect: _Suspect,
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
            gone=lambda: ownership.gone(current, modified(loop)) or crashed(current),
        )
        if (
            verdict in TAKING
            and session_id
            and suspect.shell(current["sessionId"], verdict == "reown")
        ):
            return None, current  # a shell's: taken by nobody (said by the caller)
        if verdict in TAKING and session_id:
            idle = ownership.idle_for(current, modified(loop)) if verdict == "takeover" else None
            events.append(ownership.take(current, session_id, agent.name, source))
            if idle is not None:
                events[-1]["idle"] = round(idle)
            if verdict == "takeover" and crashed(current):
                events[-1]["ownerProcessGone"] = True
            if suspect.unsure is not None:
                events[-1]["unsure"] = suspect.unsure[:300]
        return verdict, current

    def crashed(current: st.State) -> bool:
        """The owner's agent process, which this machine recorded, is gone: its session
        crashed, so the loop need not wait out `ownerTimeout` (which 0 still turns off)."""
        if ownership.owner_timeout(current) is None or sys.platform == "win32":
            return False
        owner = str((registry.entry(loop) or {}).get("claudePid") or "")
        if not owner.isdigit() or owner == pid:
            return False
        from ralphstate.storage.system import process

        return not process.exists(int(owner))

    return own


def _note_present(loop: paths.LoopPaths, session_id: str) -> None:
    """Note that this session found the loop's file at its start; a note that cannot be
    written is said, and the git history alone then tells the file from one its agent
    wrote."""
    try:
        registry.note_present(loop, session_id)
    except RalphstateError as exc:
        note("session-start", f"could not note the state file found here ({exc})")


def _unknown(agent: Agent, loop: paths.LoopPaths, state: st.State) -> Output | None:
    """For the person: a loop that came with a clone is here, and ignored until adopted."""
    checks = ""
    if not truststore.is_trusted(loop, state):
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


def modified(loop: paths.LoopPaths) -> dt.datetime | None:
    """When the state file was last written (by ralphstate, or by hand)."""
    try:
        return dt.datetime.fromtimestamp(loop.state.stat().st_mtime, dt.timezone.utc)
    except (OSError, ValueError, OverflowError):
        return None


def _untouched(loop: paths.LoopPaths, state: st.State) -> str:
    """How long the loop has been left untouched, in a few characters."""
    from ralphstate.core.budgets import span

    idle = ownership.idle_for(state, modified(loop))
    return "?" if idle is None else span(idle // 1)


def _taken_over(before: st.State, untouched: str, crashed: bool = False) -> str:
    """For the person, led by a space: whose loop this session took, and why: its agent
    process is gone (`crashed`), or it had been left untouched for so long (as the file
    was before it was taken); and how to give it back."""
    from ralphstate.core.text import short_id

    if crashed:
        why = "whose agent process is gone from this machine (it crashed or was killed)"
    else:
        why = f"which left it untouched for {untouched}"
    return (
        f" It was taken over from session {short_id(before['sessionId'] or '?')}, {why};"
        " `ralphstate adopt` in that session takes it back."
    )


def _foreign(agent: Agent, loop: paths.LoopPaths, state: st.State) -> Output | None:
    """For the model and the person: the loop here is another session's."""
    from ralphstate.core.budgets import span
    from ralphstate.core.text import short_id, visible

    owner_agent = ownership.owner_agent(state)
    whose = "" if owner_agent == agent.name else f"{visible(owner_agent[:20])} "
    # Named by its spec's first line when made or adopted here; a loop that came with
    # a clone keeps its text out of every message, as an unknown one does.
    known = registry.knows(loop, state)
    named = f' ("{render.headline(state["spec"])}")' if known else ""
    limit = ownership.owner_timeout(state)
    later = (
        f" (a session started after it has been untouched for {span(limit)} takes it)"
        if known and limit
        else ""
    )
    return agent.render_context(
        "A ralphstate loop in this project belongs to another session; do not work on"
        " it unless the person asks. To take it over here: `ralphstate adopt`.",
        f"ralphstate: the loop here{named} belongs to another session"
        f" ({whose}{short_id(state['sessionId'])}, untouched for"
        f" {_untouched(loop, state)}); run `ralphstate adopt` to continue it in"
        f" this one{later}.",
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


def _refused(
    agent: Agent, loop: paths.LoopPaths, state: st.State, session_id: str, why: str
) -> Output | None:
    """A SessionStart the evidence says a shell ran (hooks/forged.py): the loop is not
    taken, and the person hears it (stderr, the log, the history)."""
    from ralphstate.core.text import short_id
    from ralphstate.hooks import forged

    said = (
        f"ralphstate: session {short_id(session_id)} did not take the loop: its SessionStart"
        f" came from a shell, not Claude Code ({why}); `ralphstate adopt` takes it if a"
        " session really started"
    )
    event: Event = {"event": "adopt_refused", "session": session_id[:200], "why": why[:300]}
    forged.refused("session-start", loop, state, event, said)
    return agent.render_notice(said + ".")


def _unsure(session_id: str, why: str | None) -> str:
    """For the person, led by a space: this session took the loop by an input that
    cannot be told from a shell's (hooks/forged.py), said on the session's line and in
    the log (the history's `adopted` line carries `unsure`, which `status` shows); or
    nothing."""
    if why is None:
        return ""
    from ralphstate.core.text import short_id

    said = (
        f"The loop was handed to session {short_id(session_id)} by an input ralphstate"
        f" could not tell from a shell's ({why}); if no session started here, run"
        " `ralphstate adopt` in yours."
    )
    note("session-start", said.rstrip("."))
    return " " + said
