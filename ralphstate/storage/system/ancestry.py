"""The processes a process descends from, and its terminal's session leader
(docs/explanation/proof.md, "Only a person approves").

`chain(pid)` walks the parent chain of `pid` up to MAX_DEPTH processes, each with its
program's name and, where the system shows it to the same user, the environment it
was started with: on Linux from /proc (`stat` and `environ`), on macOS from `ps`
(`ps -E` appends the environment to the command). Windows gives neither here: the
chain is empty there, and nothing is refused by it. A process that cannot be read ends
the chain where it is.

`session_leader()` is the process that leads this process's session, the one that
opened its controlling terminal (a login shell, or whatever made the pty).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple

# How many parents are walked: far more than a shell, a terminal and a login ever nest.
MAX_DEPTH = 64
# Programs whose descendants are an agent's, whatever their environment says.
CLIENTS = frozenset(
    {"claude", "codex", "gemini", "copilot", "opencode", "cursor-agent", "aider", "goose"}
)


class Proc(NamedTuple):
    pid: int
    name: str
    environ: dict[str, str] | None  # None: the system did not show it


def chain(pid: int) -> list[Proc]:
    """`pid` and its parents, nearest first, up to MAX_DEPTH; init (pid 1) and what
    cannot be read end it."""
    found: list[Proc] = []
    seen: set[int] = set()
    while pid > 0 and pid not in seen and len(found) < MAX_DEPTH:
        seen.add(pid)
        read = _read(pid)
        if read is None:
            break
        proc, parent = read
        found.append(proc)
        if pid == 1:
            break
        pid = parent
    return found


def client_above() -> Proc | None:
    """The agent client (by its program's name, `CLIENTS`) among this process's parents
    or its terminal's session leader's; None when none is (or the system does not say)."""
    chains = [chain(os.getpid())]
    leader = session_leader()
    if leader is not None and leader != os.getpid():
        chains.append(chain(leader))
    for procs in chains:
        for proc in procs:
            if proc.name.lower().removesuffix(".exe") in CLIENTS:
                return proc
    return None


def session_leader() -> int | None:
    """The pid that leads this process's session; None where there are no sessions."""
    getsid = getattr(os, "getsid", None)
    if getsid is None:
        return None
    try:
        return int(getsid(0))
    except OSError:
        return None


def _read(pid: int) -> tuple[Proc, int] | None:
    if sys.platform.startswith("linux"):
        return _linux(pid)
    if sys.platform == "darwin":
        return _macos(pid)
    return None


def _linux(pid: int) -> tuple[Proc, int] | None:
    base = Path("/proc") / str(pid)
    try:
        stat = (base / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses
    head, _, tail = stat.rpartition(")")
    name = head.partition("(")[2]
    fields = tail.split()
    try:
        parent = int(fields[1])
    except (IndexError, ValueError):
        return None
    try:
        raw = (base / "environ").read_bytes()
    except OSError:
        environ = None
    else:
        environ = _pairs(raw.decode("utf-8", "replace").split("\0"))
    return Proc(pid, name, environ), parent


def _macos(pid: int) -> tuple[Proc, int] | None:
    from ralphstate.storage.system import children

    argv = ["/bin/ps", "-E", "-ww", "-o", "ppid=,comm=,command=", "-p", str(pid)]
    try:
        done = children.run(argv, timeout=5, limit=1 << 20)
    except OSError:
        return None
    words = done.out.decode("utf-8", "replace").split()
    if done.code != 0 or len(words) < 2 or not words[0].isdigit():
        return None
    name = Path(words[1]).name
    return Proc(pid, name, _pairs(words[2:])), int(words[0])


def _pairs(items: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if sep and name and name.replace("_", "a").isalnum():
            pairs[name] = value
    return pairs
