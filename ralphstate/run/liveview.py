"""`ralphstate watch`: the live state of a loop, redrawn whenever its files change.

It looks at state.json and history.jsonl every `interval` seconds (their size,
modification time and inode: a write through ralphstate replaces the file, so a
change is seen even where timestamps are coarse) and draws the status view, what a
`ralphstate run` is doing, and the latest history. It works for any loop, driven by
`ralphstate run` or by the hooks, and changes nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ralphstate.core import clock, views
from ralphstate.core.errors import RalphstateError
from ralphstate.run import logline
from ralphstate.storage.loopdir.store import Store, of_loop

Signature = tuple[tuple[int, int, int] | None, ...]
RECENT = 5
# On a terminal the view is redrawn at least this often, so ages stay current.
REDRAW_SECONDS = 5.0


def _plain(text: str, **_: Any) -> str:
    return text


def _stat(path: os.PathLike[str]) -> tuple[int, int, int] | None:
    try:
        info = Path(path).stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def signature(store: Store) -> Signature:
    return (_stat(store.paths.state), _stat(store.paths.history))


def running(history: list[dict[str, Any]]) -> str | None:
    """What a `ralphstate run` is doing now, read from the end of the history."""
    for entry in reversed(history):
        event = entry.get("event")
        if event in ("run_iteration", "run_finished"):
            return None
        if event == "iteration_started":
            return (
                f"run: iteration {entry.get('iteration', '?')} running for"
                f" {clock.age(entry.get('at'))} (run {entry.get('run', '?')}"
                f" of {entry.get('of', '?')})"
            )
        if event == "run_started":
            return "run: starting"
    return None


def render(store: Store, style: views.Style = _plain, recent: int = RECENT) -> str:
    """The whole view, as text; a state that cannot be read is one line saying why."""
    try:
        state = store.load()
    except RalphstateError as exc:
        return f"ralphstate: {exc}"
    from ralphstate.storage.peruser import registry, truststore

    trusted = truststore.is_trusted(store.paths, state)
    lines = [views.status(state, views.StatusFacts(str(store.paths.root), trusted), style)]
    lines += views.unknown_here(state, registry.knows(store.paths, state), style)
    try:
        history = of_loop(store.history(200), state["loopId"])
    except RalphstateError:
        history = []
    doing = running(history)
    if doing:
        lines.append(doing)
    if history and recent:
        lines.append("recent:")
        lines += [f"  {logline.line(e)}" for e in history[-recent:]]
    return "\n".join(lines)


def watch(
    store: Store,
    show: Callable[[str], None],
    *,
    interval: float,
    once: bool = False,
    clear: Callable[[], None] | None = None,
    style: views.Style = _plain,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Draw the view, then again at every change until KeyboardInterrupt.

    With `clear` (a terminal), the screen is cleared before each drawing and the view
    is redrawn every few seconds; without, each drawing follows a rule line.
    """
    seen: Signature | None = None
    drawn_at = 0.0
    while True:
        now = signature(store)
        stale = clear is not None and time.monotonic() - drawn_at >= REDRAW_SECONDS
        if now != seen or stale:
            text = render(store, style)
            if clear is not None:
                clear()
            elif seen is not None:
                show(f"----- {clock.now_iso()} -----")
            show(text)
            seen, drawn_at = now, time.monotonic()
        if once:
            return
        sleep(interval)
