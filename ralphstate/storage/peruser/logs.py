"""The error log: one line per fault, tracebacks for the unexpected, rotated by size.

It holds what is needed to debug, never a hook's input: the command, the event,
the session id and the error.
"""

from __future__ import annotations

import contextlib
import traceback
from pathlib import Path

from ralphstate.core import clock, limits
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.peruser import home
from ralphstate.storage.system import fsio

LOG_NAME = "ralphstate.log"


def path() -> Path:
    return home.log_dir() / LOG_NAME


def write(message: str, exc: BaseException | None = None) -> Path | None:
    """Append to the log; returns its path, or None when the log cannot be written."""
    try:
        target = path()
    except RalphstateError:  # no home directory: nowhere to log
        return None
    text = f"{clock.now_iso()} {message}\n"
    if exc is not None:
        text += "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        fsio.makedirs(target.parent)
        with contextlib.suppress(OSError):
            if target.stat().st_size > limits.MAX_LOG_FILE_BYTES:
                target.replace(target.with_name(LOG_NAME + ".1"))
        fsio.append_line_bytes(target, text.encode("utf-8", "replace"))
    except OSError:
        return None
    return target
