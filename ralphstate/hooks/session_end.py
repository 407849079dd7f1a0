"""SessionEnd: the owning session hands its loop back as it ends
(docs/explanation/design.md, "Ownership").

When the session that owns an unfinished loop ends (the person quit, logged out, closed
the prompt, or `claude -p` finished), the loop is released: no owner, and a `released`
line in the history. The next session that starts in the project takes it at its
SessionStart, and a live session's next stop may take it too: one at a time, under the
state lock. Two reasons keep the owner:

- `clear` in an agent that gives its hooks its process id (Claude Code's `CLAUDE_PID`)
  when the registry records that process as the owner's: the session that starts after
  /clear in the same process re-owns the loop (`ownership.judge`'s `reown`), and no
  other session can take it in between. Elsewhere /clear releases it, as an exit does.
- an iteration of `ralphstate run`, which owns the loop itself.
- a SessionEnd ralphstate cannot tell from one a shell ran (Claude Code: its input names
  no transcript of that session under the client's own directory, hooks/forged.py):
  the person is told, and the session keeps the loop.

The client gives this hook little time (Claude Code: 1.5 s unless a hook's `timeout`
raises it) and reads no answer: it reads the file, releases under the lock and records
the registry's summary, nothing else.
"""

from __future__ import annotations

import contextlib
import os

from ralphstate.agents.contract import Agent
from ralphstate.core import ownership
from ralphstate.core import state as st
from ralphstate.hooks import base
from ralphstate.hooks.base import HookInput, Output
from ralphstate.storage.loopdir.store import Event
from ralphstate.storage.peruser import registry
from ralphstate.storage.system import paths


@base.telling("session-end")
def handle(agent: Agent, hook_input: HookInput, loop: paths.LoopPaths) -> Output | None:
    if os.environ.get(ownership.ENV_RUNNER):
        return None  # an iteration of `ralphstate run`: the run owns the loop
    found = base.load(loop)
    session_id = agent.session_id(hook_input)
    if found is None or not session_id:
        return None
    store, state = found
    reason = str(hook_input.get("reason") or "other")[:40]
    if not _owned(state, session_id, agent.name):
        return None
    if reason == "clear" and _reowned_after_clear(agent, loop):
        return None
    from ralphstate.hooks.forged import doubt

    doubted = doubt(agent, hook_input, session_id)
    if doubted is not None:
        _refused(loop, state, session_id, doubted)
        return None

    def release(current: st.State, events: list[Event]) -> st.State | None:
        if not _owned(current, session_id, agent.name):
            return None  # taken, or ended, since it was read
        events.append(ownership.release(current, reason))
        return current

    released = base.update(store, release)
    if released is not None:
        base.record("session-end", loop, released, None)
    return None


def _owned(state: st.State, session_id: str, agent: str) -> bool:
    """The loop is not over and this session of `agent` owns it."""
    if state["status"] not in st.ACTIVE:
        return False
    return ownership.judge(state, session_id, agent, known=lambda: False) == "owner"


def _reowned_after_clear(agent: Agent, loop: paths.LoopPaths) -> bool:
    """The session that starts after /clear in this process will re-own the loop: the
    registry records this very agent process as the owner's."""
    pid = agent.process_id(os.environ)
    return bool(pid) and (registry.entry(loop) or {}).get("claudePid") == pid


def _refused(loop: paths.LoopPaths, state: st.State, session_id: str, why: str) -> None:
    """A SessionEnd ralphstate cannot tell from one a shell ran (hooks/forged.py): the
    loop stays its owner's, and the person hears it (stderr, the log, the history)."""
    from ralphstate.core.errors import RalphstateError
    from ralphstate.hooks.faults import note
    from ralphstate.storage.loopdir.store import append_history

    note(
        "session-end",
        f"the loop was not handed back: this SessionEnd may not come from Claude Code"
        f" ({why}), so the session keeps the loop; `ralphstate adopt` takes it if the"
        " session really ended",
    )
    event: Event = {"event": "release_refused", "session": session_id, "why": why[:300]}
    with contextlib.suppress(RalphstateError):  # the note above has said it
        append_history(loop.history, [event], state["iteration"], loop_id=state["loopId"])
