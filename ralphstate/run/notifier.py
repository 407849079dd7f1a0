"""Telling a person who is not watching: `notify` in the run config (or `run --notify
CMD`) runs on complete, pause, budget, limit and error, with the event as JSON on its
stdin and a one-line summary in `RALPHSTATE_SUMMARY` (and the event's name in
`RALPHSTATE_EVENT`). It runs without a shell, like the agent command; what it prints is
discarded; it may take `limits.NOTIFY_SECONDS`, then it is killed. A notifier that
fails, hangs or cannot be started never stops the loop: the run says so in one line."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable
from typing import Any

import orjson

from ralphstate.core import clock, limits
from ralphstate.core.errors import RalphstateError
from ralphstate.run import spawn
from ralphstate.storage.system import children

ENV_SUMMARY = "RALPHSTATE_SUMMARY"
ENV_EVENT = "RALPHSTATE_EVENT"


def send(
    command: str | None,
    event: dict[str, Any],
    summary: str,
    say: Callable[[str], None],
    cwd: str,
    seconds: float = limits.NOTIFY_SECONDS,
) -> bool:
    """Run the notifier for `event`; True when it ran and exited 0."""
    if not command:
        return False
    try:
        argv = spawn.split_command(command)
    except RalphstateError as exc:
        say(f"  notify: {exc}")
        return False
    payload = {"at": clock.now_iso(), **event, "summary": summary}
    env = dict(os.environ)
    env[ENV_SUMMARY] = " ".join(summary.split())
    env[ENV_EVENT] = str(event.get("event", ""))
    try:  # in a group of its own: a timeout kills what it started, too
        child = children.start(argv, cwd=cwd, env=env, stdin=subprocess.PIPE)
    except OSError as exc:
        say(f"  notify: could not start {argv[0]!r}: {exc.strerror or type(exc).__name__}.")
        return False
    try:
        child.communicate(orjson.dumps(payload), timeout=seconds)
    except subprocess.TimeoutExpired:
        _kill(child)
        say(f"  notify: {argv[0]!r} took longer than {seconds:g}s and was stopped.")
        return False
    except OSError:  # it closed its stdin early: what it read is what it got
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(seconds)
    if child.returncode is None:
        _kill(child)
        return False
    if child.returncode != 0:
        say(f"  notify: {argv[0]!r} exited with {child.returncode}.")
        return False
    return True


def _kill(child: subprocess.Popen[bytes]) -> None:
    children.kill(child)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(limits.RUN_DRAIN_SECONDS)
