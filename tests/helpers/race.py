"""Races: the editor against ralphstate of the lossless-write tests, an editor process
saving a file `rounds` times (in place and by rename) while an updater process keeps
changing it through ralphstate, each a `python -c` script the test gives; and a real
hook process that says when it asks for the state lock, for the hooks' races."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# The real hook, in its own process, with one addition: just before it asks for the
# state lock (it has read the file and decided once), it says so in the file $RACE_MARK.
HOOK = """
import os, sys
import filelock
from ralphstate.hooks.entry import main

def acquire(self, *args, _real=filelock.BaseFileLock.acquire, **kwargs):
    if os.path.basename(self.lock_file) == "state.lock":
        open(os.environ["RACE_MARK"], "a").close()
    return _real(self, *args, **kwargs)

filelock.BaseFileLock.acquire = acquire
main()
"""


def racing_hook(project: Path, event: str, data: bytes, mark: Path) -> subprocess.Popen[bytes]:
    """`ralphstate hook EVENT` on `data` in `project`, started: it creates `mark` when it
    asks for the state lock. Its stdin is written and closed; read the rest with
    communicate()."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOOK, event],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(project), "RACE_MARK": str(mark)},
    )
    assert child.stdin is not None
    child.stdin.write(data)
    child.stdin.close()
    child.stdin = None  # communicate() must not flush it again
    return child


def editor_race(
    editor: str, updater: str, path: Path, target: Path, rounds: int, pause: float, delay: float
) -> tuple[int, int, int]:
    """(saves lost, writes attempted, changes written). The editor gets `path ROUNDS
    PAUSE` and prints how many of its saves it lost; the updater gets `target STOP
    DELAY`, prints `ready`, changes the file until STOP exists, then prints its attempts
    and writes."""
    stop = path.parent / "stop"
    process = subprocess.Popen(
        [sys.executable, "-c", updater, str(target), str(stop), str(delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        edits = subprocess.run(
            [sys.executable, "-c", editor, str(path), str(rounds), str(pause)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    finally:
        stop.touch()
        out, _ = process.communicate(timeout=60)
    attempts, writes = out.split()
    return int(edits.stdout), int(attempts), int(writes)
