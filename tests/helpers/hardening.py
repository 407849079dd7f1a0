"""Helpers for the fuzz, fault and security tests: the real entry points run in this
process with their streams swapped, a watch on every process this process starts,
checks of the promises every run must keep, and a state lock another process holds."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ralphstate.__main__ import main
from ralphstate.core import render
from ralphstate.hooks import notify
from ralphstate.hooks.entry import run_hook
from tests.helpers import loops

SID = "session-a"
HOOKS = ("stop", "session-start", "pre-compact")


class Run:
    """What one run printed and returned."""

    def __init__(self, code: int, out: bytes, err: bytes) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def text(self) -> str:
        return self.err.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"Run(code={self.code}, out={self.out!r}, err={self.err!r})"


def _run(stdin: bytes, entry: Any, args: list[str]) -> Run:
    out, err = io.BytesIO(), io.BytesIO()
    streams = (
        io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True),
    )
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = streams
    try:
        code = entry(args)
        for stream in streams[1:]:
            stream.flush()
        return Run(code, out.getvalue(), err.getvalue())
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def hook(event: str, data: bytes | dict[str, Any], *args: str) -> Run:
    """`ralphstate hook EVENT` in this process, with `data` on its stdin."""
    raw = data if isinstance(data, bytes) else orjson.dumps(data)
    return _run(raw, run_hook, [event, *args])


def cli(*args: str) -> Run:
    """`ralphstate ARGS...` in this process."""
    return _run(b"", main, list(args))


# -- promises every run keeps ------------------------------------------------------------


def one_json_object(out: bytes) -> dict[str, Any] | None:
    """The hook's output: nothing, or exactly one JSON object on one line."""
    if out == b"":
        return None
    assert out.endswith(b"\n") and out.count(b"\n") == 1, out
    value = orjson.loads(out)
    assert isinstance(value, dict), out
    return value


def hook_kept_its_promises(run: Run, event: str) -> dict[str, Any] | None:
    """Exit 0, one JSON object or nothing, and any complaint one `ralphstate hook` line
    that is never an unexpected error (the fuzzers hunt for those)."""
    assert run.code == 0
    out = one_json_object(run.out)
    err = run.text
    assert "Traceback" not in err
    assert "unexpected error" not in err, err
    for line in err.splitlines():
        assert line.startswith(f"ralphstate hook {event}: "), err
    return out


def cli_kept_its_promises(run: Run) -> None:
    """Exit 0, or exit 1 with exactly one line on stderr; never a traceback."""
    err = run.text
    assert "Traceback" not in err
    assert "unexpected error" not in err, err
    assert run.code in (0, 1), run
    if run.code == 1:
        assert err.startswith("ralphstate: ") and err.endswith("\n"), run
        assert err.count("\n") == 1, run
        assert run.out == b"", run


# -- loops ---------------------------------------------------------------------------------


def make_loop(root: Path, *, known: bool = True, **changes: Any) -> Path:
    """A loop in `root/.loop` owned by SID, known to this machine unless told otherwise."""
    return loops.make_loop(root, known=known, **changes)


def hook_input_for(root: Path, **fields: Any) -> dict[str, Any]:
    """What Claude Code sends a hook in `root`, for this test's session."""
    base = {"session_id": SID, "cwd": str(root), "last_assistant_message": "still working"}
    return {**base, **fields}


def told(problem: str, event: str = "stop") -> bytes:
    """What a hook prints, the first time in a session, for a loop it cannot use: at a
    stop, with the notification that the gate failed open."""
    out: dict[str, object] | None = {"systemMessage": render.unusable(problem)}
    if event == "stop":
        out = notify.attach(out, "claude", notify.failed_open(problem), {})
    return orjson.dumps(out) + b"\n"


def loop_files(loop: Path) -> dict[str, bytes]:
    """Every file in the loop directory and its bytes, but the empty lock file, which
    the first locker creates."""
    return {
        p.name: p.read_bytes()
        for p in sorted(loop.iterdir())
        if p.is_file() and p.name != "state.lock"
    }


# -- processes started by this process ----------------------------------------------------

_SPAWN_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn")
_started: list[tuple[str, Any]] | None = None


def _audit(event: str, args: Any) -> None:
    if _started is not None and event in _SPAWN_EVENTS:
        _started.append((event, args))


sys.addaudithook(_audit)


@contextlib.contextmanager
def processes_started() -> Iterator[list[tuple[str, Any]]]:
    """Every process this process starts inside the block, seen by Python's audit hook."""
    global _started
    seen: list[tuple[str, Any]] = []
    _started = seen
    try:
        yield seen
    finally:
        _started = None


def posix_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


HOLDER = """
import sys, filelock
lock = filelock.FileLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@contextlib.contextmanager
def lock_held(loop: Path) -> Iterator[None]:
    """The loop's state lock (`loop`/state.lock), held by another live process."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(loop / "state.lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == b"held\n"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
