"""The editor-against-ralphstate race of the lossless-write tests: an editor process
saving a file `rounds` times (in place and by rename) while an updater process keeps
changing it through ralphstate, each a `python -c` script the test gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


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
