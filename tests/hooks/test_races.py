"""SessionStart against the others, in real processes: ownership and status are decided
under the state lock, so two sessions starting at once cannot both take a loop, and a
session starting while the loop is cancelled never restores it as active.

Each race is made to happen, not hoped for: the test holds the state lock, starts the
hook processes, waits until each has read the state and opened the lock file (so it
decided once, on the file as read, and now waits for the lock), changes the file under
the lock as the other party would, and lets go."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import filelock
import orjson

from ralphstate.core import state as st
from tests.helpers.loops import make_loop
from tests.helpers.race import racing_hook


def start_hook(project: Path, session: str) -> tuple[subprocess.Popen[bytes], Path]:
    mark = project.parent / f"waiting-{session}"
    data = orjson.dumps({"session_id": session, "cwd": str(project), "source": "startup"})
    return racing_hook(project, "session-start", data, mark), mark


def waiting(started: tuple[subprocess.Popen[bytes], Path], limit: float = 20) -> None:
    """Until the hook process asks for the lock; `limit` only bounds a test gone wrong."""
    child, mark = started
    deadline = time.monotonic() + limit
    while not mark.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            said = child.communicate()
            raise AssertionError(f"the hook never asked for the lock: {said!r}")
        time.sleep(0.005)


def answer(started: tuple[subprocess.Popen[bytes], Path]) -> dict[str, Any] | None:
    child = started[0]
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    return orjson.loads(out) if out else None


def events(project: Path) -> list[str]:
    lines = (project / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [orjson.loads(line)["event"] for line in lines]


def test_two_sessions_starting_at_once_only_one_takes_the_loop(project: Path) -> None:
    make_loop(project, session=None)
    lock = project / ".loop" / "state.lock"
    with filelock.FileLock(str(lock)):
        first, second = start_hook(project, "session-one"), start_hook(project, "session-two")
        waiting(first)
        waiting(second)
    answers = [answer(first), answer(second)]

    state = st.parse((project / ".loop" / "state.json").read_bytes())
    owner = state["sessionId"]
    assert owner in ("session-one", "session-two")
    restored = [a for a in answers if a and "<loop-state>" in str(a)]
    assert len(restored) == 1
    other = answers[("session-one", "session-two").index(owner) ^ 1]
    assert "belongs to another session" in str(other)
    assert events(project).count("adopted") == 1


def test_a_session_starting_while_the_loop_is_cancelled_does_not_restore_it(
    project: Path,
) -> None:
    path = make_loop(project, session=None)
    lock = project / ".loop" / "state.lock"
    with filelock.FileLock(str(lock)):
        child = start_hook(project, "session-one")
        waiting(child)
        # `ralphstate cancel`, under the lock the hook is waiting for
        done = subprocess.run(
            [sys.executable, "-c", CANCEL, str(project)], capture_output=True, check=False
        )
        assert done.returncode == 0, done.stderr
    out = answer(child)

    state = st.parse(path.read_bytes())
    assert (state["status"], state["sessionId"]) == ("cancelled", None)
    assert out is None
    assert events(project)[-1] == "cancelled"


# The cancel of `ralphstate cancel`, as a process that finds the lock already held by
# its parent: it writes the file the way the command does, under that same lock.
CANCEL = """
import sys
from pathlib import Path
from ralphstate.loop import control
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.storage.loopdir.store import Store

root = Path(sys.argv[1])
store = Store(LoopPaths(root, root / ".loop"))
store.locked = __import__("contextlib").nullcontext  # the test process holds the lock
control.cancel(store)
"""
