"""What a stop of the Stop hook counts as for the stall rule (docs/explanation/hooks.md,
"Stall"): progress, a stop without progress, or neither.

A stop counts as progress when the loop's bookkeeping changed since the last block
(a criterion's status, the steps, saying the marker: `state.progress`), or else when
the project's files changed since the hook last looked at them (a stamp of them,
`storage/repo/filestamp.py`, taken only at a stop whose bookkeeping did not change, so a
loop that records its work pays nothing for it). A stop while the agent reports
background work still running, or a scheduled wakeup to come, is held: it neither
counts toward `stallLimit` nor clears the count. Otherwise it is a stop without progress.

`lastProgress` keeps both fingerprints, the bookkeeping's and then, once taken, the
files' stamp (`"<bookkeeping> <files>"`): the stamp stays the one last taken while the
bookkeeping moves on. A stamp that cannot be taken, or the first one (nothing to compare
it with), is no progress.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from ralphstate.core import state as st

Counts = Literal["progress", "held", "none"]


def weigh(
    state: st.State, book: str, background: bool, files: Callable[[], str | None]
) -> tuple[str, Counts]:
    """The fingerprint to keep in `lastProgress`, and what the stop counts as, for a
    stop whose bookkeeping fingerprint is `book`; `files()` is asked for the stamp only
    when the bookkeeping did not change and no background work runs."""
    last_book, _, last_files = (state["lastProgress"] or "").partition(" ")
    if book != last_book:
        return _joined(book, last_files), "progress"
    if background:
        return _joined(book, last_files), "held"
    stamp = files()
    if stamp is None:
        return _joined(book, last_files), "none"
    changed = bool(last_files) and stamp != last_files
    return _joined(book, stamp), "progress" if changed else "none"


def count(state: st.State, fingerprint: str, counts: Counts) -> None:
    """A block's stall count: cleared after progress, one more after a stop without
    it, as it was while background work runs; and the fingerprint it saw."""
    if counts == "progress":
        state["blocksWithoutProgress"] = 0
    elif counts == "none":
        state["blocksWithoutProgress"] += 1
    state["lastProgress"] = fingerprint


def running(tasks: object, crons: object = None) -> bool:
    """Claude Code's Stop input says the session waits for work to wake it: its
    `background_tasks` names work still in flight (an entry whose `status` is not one
    of a task that ended), or its `session_crons` a scheduled wakeup (`CronCreate`,
    `ScheduleWakeup`, `/loop`: any entry, as Claude Code lists only those to come)."""
    if isinstance(crons, list) and any(isinstance(c, dict) for c in crons):
        return True
    if not isinstance(tasks, list):
        return False
    ended = {"completed", "failed", "killed", "stopped", "cancelled"}
    return any(isinstance(t, dict) and t.get("status") not in ended for t in tasks)


def _joined(book: str, files: str) -> str:
    return f"{book} {files}" if files else book
