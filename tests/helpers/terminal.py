"""A person at a terminal: `ralphstate ARGS` run in a real pseudo-terminal, which the
process has as its controlling terminal (it leads its own session, as a login shell
does), and an answer typed there when ralphstate asks (loop/person.py). The only way
the tests approve as the person through a real process: nothing in the environment or
on disk stands in for the terminal."""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path
from typing import NamedTuple

# What ralphstate's question ends with (loop/person.py, `_at_terminal`).
PROMPT = b"anything else to stop: "


class Typed(NamedTuple):
    code: int
    screen: str  # everything the terminal showed: the question, stdout and stderr
    asked: bool


def at_terminal(
    args: list[str],
    *,
    cwd: Path,
    answer: str = "yes",
    env: dict[str, str] | None = None,
    program: list[str] | None = None,
    timeout: float = 60,
    inherit: bool = True,
) -> Typed:
    """Run `python -m ralphstate ARGS` (or `program`) under a new pty in `cwd`, type
    `answer` and Enter when asked, and return its exit code and what it showed. The
    environment is this process's with `env` over it, or exactly `env` without
    `inherit`."""
    import pty

    full = {**os.environ, **(env or {})} if inherit else dict(env or {})
    argv = program or [sys.executable, "-m", "ralphstate", *args]
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session of its own, the pty its controlling terminal
        try:
            os.chdir(cwd)
            os.execvpe(argv[0], argv, full)
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
                os.write(fd, answer.encode() + b"\r")
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return Typed(code, screen.decode("utf-8", "replace").replace("\r\n", "\n"), asked)


def asks(args: tuple[str, ...] | list[str]) -> bool:
    """Whether `ralphstate ARGS` asks the person at the terminal (loop/person.py):
    `trust`, `review --approve` or `--revert`, `criteria check ... --env`, a rubric
    (`criteria rubric`, `init --rubric`), `config reviewer`, `heldout`."""
    first = args[0] if args else ""
    if first == "review":
        return "--approve" in args or "--revert" in args
    if first == "criteria":
        return ("check" in args and "--env" in args) or "rubric" in args
    if first == "init":
        return "--rubric" in args
    if first == "config":
        return "reviewer" in args
    return first in ("trust", "heldout")
