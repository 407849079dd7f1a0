"""A person at a terminal: `ralphstate ARGS` run in a real pseudo-terminal, which the
process has as its controlling terminal (it leads its own session, as a login shell
does), and an answer typed there when ralphstate asks (loop/person.py). The only way
the tests approve as the person through a real process: nothing in the environment or
on disk stands in for the terminal."""

from __future__ import annotations

import os
import select
import subprocess
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
    `trust`, `review --approve` or `--revert`, `criteria check ... --env`, `criteria
    rubric`, `init --rubric`, `config reviewer`, `heldout`."""
    first = args[0] if args else ""
    if first == "review":
        return "--approve" in args or "--revert" in args
    if first == "criteria":
        return ("check" in args and "--env" in args) or tuple(args[1:2]) == ("rubric",)
    if first == "init":
        return "--rubric" in args
    if first == "config":
        return tuple(args[1:2]) == ("reviewer",)
    return first in ("trust", "heldout")


class Scripted(NamedTuple):
    code: int
    stdout: str
    stderr: str
    screen: str  # what the terminal showed: ralphstate's questions and what was typed
    asked: int  # how many times a question was answered


def script_at_terminal(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    answer: str = "yes",
    timeout: float = 300,
) -> Scripted:
    """Run `argv` (a shell script, as a person types it) with a real pty as its
    controlling terminal and stdin, as a person's shell has, but its stdout and stderr
    captured apart; type `answer` and Enter each time ralphstate asks at the terminal.
    What a command prints is what a page shows; the question is only on the terminal."""
    import fcntl
    import termios
    import threading

    leader, follower = os.openpty()

    def own_terminal() -> None:  # a session of its own, the pty its controlling terminal
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=own_terminal,  # the test's own child: no threads in it yet
    )
    os.close(follower)
    captured: dict[str, bytes] = {}

    def drain(name: str, stream: object) -> None:
        captured[name] = stream.read()  # type: ignore[attr-defined]

    readers = [
        threading.Thread(target=drain, args=(name, stream), daemon=True)
        for name, stream in (("out", process.stdout), ("err", process.stderr))
    ]
    for reader in readers:
        reader.start()
    try:
        screen, asked = _answer(leader, process, answer, time.monotonic() + timeout)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
    for reader in readers:
        reader.join(timeout=30)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    return Scripted(
        process.returncode,
        captured.get("out", b"").decode("utf-8", "replace"),
        captured.get("err", b"").decode("utf-8", "replace"),
        screen.decode("utf-8", "replace").replace("\r\n", "\n"),
        asked,
    )


def _answer(
    leader: int, process: subprocess.Popen[bytes], answer: str, deadline: float
) -> tuple[bytes, int]:
    """What the terminal at `leader` showed until `process` ended (or `deadline`), and
    how many times `answer` was typed there, once each time ralphstate asked."""
    screen, asked = b"", 0
    while time.monotonic() < deadline and process.poll() is None:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # every holder of the pty's end closed it
            break
        if not chunk:
            break
        screen += chunk
        if screen.count(PROMPT) > asked:
            asked += 1
            os.write(leader, answer.encode() + b"\r")
    return screen, asked
