"""The person running the benchmark trusts its loops' checks, as they would at their own
terminal: `ralphstate trust` started in a pseudo-terminal the benchmark opens (Python's
`pty`, Linux and macOS), its controlling terminal, and `yes` typed there when asked
(loop/person.py). Nothing in the environment or on disk stands in for the person: a
check runs because `ralphstate trust` was answered at a terminal.

Windows has no pty: there `TRUSTS` is False and the rows whose checks must run are left
out (`LEFT_OUT` says so once)."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

TRUSTS = os.name == "posix"
LEFT_OUT = (
    "Windows has no pseudo-terminal to answer `ralphstate trust` at, so the rows whose"
    " checks must run (verify, the clean room, confinement, long suites) are left out."
)
# What ralphstate's question ends with (loop/person.py, `_at_terminal`).
PROMPT = b"anything else to stop: "
TRUSTED = "trusted"  # in what `ralphstate trust` prints when it trusted the checks


def trust(rs: list[str], env: dict[str, str], root: Path, timeout: float = 60) -> str:
    """`ralphstate trust` for the loop in `root`, in a new pty, `yes` typed at its
    question; what the terminal showed. Stops the benchmark when it was not asked, did
    not end well or trusted nothing."""
    import pty
    import select

    pid, fd = pty.fork()
    if pid == 0:  # the child: a session of its own, the pty its controlling terminal
        try:
            os.chdir(root)
            os.execvpe(rs[0], [*rs, "trust"], env)
        finally:
            os._exit(127)
    screen, asked = b"", False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child ended: the pty is closed
                break
            if not chunk:
                break
            screen += chunk
            if not asked and PROMPT in screen:
                asked = True
                os.write(fd, b"yes\r")
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    shown = screen.decode("utf-8", "replace").replace("\r\n", "\n")
    if code != 0 or not asked or TRUSTED not in shown:
        command = shlex.join([*rs, "trust"])
        sys.exit(f"{command} in {root} did not trust (exit {code}, asked: {asked}): {shown}")
    return shown
