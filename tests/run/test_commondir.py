"""The runner's look at `.git/commondir` before and after an iteration (run/commondir.py)
never waits on what the agent put there: a FIFO in its place is read as no file, and
moved aside as any other file the agent wrote. Each call runs in a process of its own,
so a look that blocks fails the test on its timeout instead of hanging it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """
import sys
from pathlib import Path
from ralphstate.run import commondir
path = commondir.where(Path(sys.argv[1]))
print(commondir.held(path))
print(commondir.put_back(path, b"../elsewhere\\n", 3))
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX's")
def test_a_fifo_the_agent_made_commondir_is_moved_aside_without_waiting(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / ".git" / "commondir")

    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path)], capture_output=True, timeout=20
    )

    assert done.returncode == 0, done.stderr.decode()
    held, said = done.stdout.decode().splitlines()
    assert held == "None"
    assert "moved aside to commondir.agent-3" in said, said
    assert (tmp_path / ".git" / "commondir").read_bytes() == b"../elsewhere\n"
