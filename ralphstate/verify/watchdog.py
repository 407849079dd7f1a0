"""A check never outlives the process that started it (docs/explanation/hooks.md, "When
the client stops the hook").

    dog = watchdog.start(paths, "stop", ["tests pass", "lint clean"])
    dog.started(pgid) ... dog.ended(pgid)     # as each check's process group comes and goes
    dog.close()                                # the verification ended as it should

Each check runs in a process group of its own, which the process that runs the checks
kills when the check ends, times out or is interrupted (SIGTERM and Ctrl-C included).
What it cannot do is outlive a SIGKILL. So while checks run, a small watchdog process
runs beside it, in a session of its own (a client that kills the hook's process group
does not reach it), reading a pipe whose only writer is the process that started the
checks. It is told each check's group as it starts and once it was killed. When the
pipe ends without the word that the verification ended (its writer died, however), the
watchdog kills every group it was told of and still holds, then records the
verification as killed in the loop's state and history (`verifyInterrupted`).

Nothing polls: the pipe's end is the kernel's word that its writer is gone. A check
that leaves its process group (`setsid`, a daemon) escapes this, as it escapes every
kill of its group. POSIX only (Linux, macOS): on Windows no watchdog runs, and a check
of a hook killed outright may outlive it (Windows' job objects would be the way there).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO, Any

import orjson

from ralphstate.storage.system import children
from ralphstate.storage.system.paths import LoopPaths

# The watchdog itself: standard library only until it must record, and the signal a
# terminal's Ctrl-C sends its group never reaches it (its session is its own).
CODE = """
import json, os, signal, sys
head, groups, done = None, set(), False
for line in sys.stdin.buffer:
    try:
        said = json.loads(line)
    except ValueError:
        continue
    if head is None:
        head = said
    elif "group" in said:
        groups.add(said["group"])
    elif "over" in said:
        groups.discard(said["over"])
    elif "done" in said:
        done = True
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
if head is not None and not done:
    sys.path[:0] = head["path"]
    from ralphstate.verify.records import killed as record_killed
    record_killed(head)
"""


class Watchdog:
    """The process that kills the checks' groups if this one dies first."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.closed = False

    def _say(self, said: dict[str, Any]) -> None:
        stream: IO[bytes] | None = self.proc.stdin
        if stream is None or self.closed:
            return
        with contextlib.suppress(OSError, ValueError):  # it died: nothing left to tell it
            stream.write(orjson.dumps(said) + b"\n")
            stream.flush()

    def started(self, pgid: int) -> None:
        self._say({"group": pgid})

    def ended(self, pgid: int) -> None:
        self._say({"over": pgid})

    def close(self) -> None:
        """The verification ended here (its interruption, if any, recorded by this
        process): the watchdog goes, killing nothing, recording nothing."""
        self._say({"done": True})
        self.closed = True
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        # It ends at once, but is not waited for here: a thread reaps it.
        threading.Thread(target=self.proc.wait, name="ralphstate-watchdog", daemon=True).start()


def start(paths: LoopPaths, by: str, criteria: Sequence[str]) -> Watchdog | None:
    """A watchdog for a verification of `criteria` (who runs it: `by`) of the loop at
    `paths`, in a session of its own (`children.start`); None on Windows, or when it
    cannot be started (the checks still run)."""
    if sys.platform == "win32":
        return None
    from ralphstate.core import actor, checkrun

    try:
        proc = children.start([sys.executable, "-I", "-c", CODE], stdin=subprocess.PIPE)
    except OSError:
        return None
    dog = Watchdog(proc)
    dog._say(
        {
            "loop": str(paths.root),
            "dir": str(paths.dir),
            "by": by,
            "actor": actor.current(),
            "path": list(sys.path),
            "criteria": list(criteria)[: checkrun.MAX_NAMED],
        }
    )
    return dog
