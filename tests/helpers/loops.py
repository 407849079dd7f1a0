"""The loop the hook tests start from ("Build the parser": two criteria, two steps),
as a state and written where a hook finds it; the state read back, and the Stop hook
run on a loop as a real process."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import orjson

from ralphstate.core import state as st
from ralphstate.storage.peruser import registry
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import run_process

SID = "session-a"
DONE = "All done. <loop-complete>"
CRITERIA = ["tests pass", "lint clean"]
STEPS = ["tokenizer", "parser"]


def parser_state(
    *,
    session: str | None = SID,
    agent: str = "claude",
    criteria: list[str] | None = None,
    steps: list[str] | None = None,
    **changes: Any,
) -> st.State:
    """An in-progress loop owned by `session` of `agent`, with `changes` over it."""
    state = st.new(
        "Build the parser",
        CRITERIA if criteria is None else criteria,
        STEPS if steps is None else steps,
        session_id=session,
        agent=agent,
        now="2026-01-01T00:00:00Z",
    )
    cast(st.Raw, state).update(changes)
    return st.normalise(state)


def write_loop(
    root: Path,
    state: st.State,
    *,
    known: bool = True,
    claude_pid: str | None = None,
    found_by: str = SID,
) -> Path:
    """`state` in `root/.loop/state.json`, known to this machine unless told otherwise:
    then it came with a clone, and the session `found_by` found it there when it
    started."""
    loop = root / ".loop"
    loop.mkdir(exist_ok=True)
    path = loop / "state.json"
    path.write_bytes(st.dumps(state))
    if known:
        registry.record(LoopPaths(root, loop), state, claude_pid)
    else:
        registry.note_present(LoopPaths(root, loop), found_by)
    return path


def make_loop(
    root: Path,
    *,
    known: bool = True,
    claude_pid: str | None = None,
    session: str | None = SID,
    agent: str = "claude",
    **changes: Any,
) -> Path:
    """The parser loop with `changes`, written in `root` (see `write_loop`)."""
    state = parser_state(session=session, agent=agent, **changes)
    return write_loop(root, state, known=known, claude_pid=claude_pid, found_by=session or SID)


def load(root: Path) -> st.State:
    return st.parse((root / ".loop" / "state.json").read_bytes())


def own(root: Path) -> None:
    """Give the loop to SID, as a session that ran `init` would have it."""
    path = root / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw["sessionId"] = SID
    path.write_bytes(orjson.dumps(raw))


def stop(root: Path, message: str = DONE) -> dict[str, Any] | None:
    """The Stop hook of session SID, in its own process, after `message`: what it printed."""
    data = {"session_id": SID, "cwd": str(root), "last_assistant_message": message}
    done = run_process(["hook", "stop"], cwd=root, input=orjson.dumps(data), timeout=60)
    assert done.returncode == 0, done
    return orjson.loads(done.stdout) if done.stdout.strip() else None
