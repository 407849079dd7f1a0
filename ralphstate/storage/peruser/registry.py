"""The loops this machine knows: created or adopted here.

A small JSON file under the user state directory, keyed by the loop directory's
absolute path. A loop is known when its path is recorded with the same identity (`loopId`
and `startedAt`), so a repository cloned over an old path with a different loop, or
with none, is still a stranger.
The hooks use this to tell a loop made here from one that arrived with a clone.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ralphstate.core import clock, limits
from ralphstate.core.errors import RalphstateError
from ralphstate.core.state import State
from ralphstate.storage.peruser import home, jsonstore
from ralphstate.storage.peruser.jsonstore import Entry
from ralphstate.storage.system.paths import LoopPaths

REGISTRY_NAME = "loops.json"


def _path() -> Path:
    return home.state_dir() / REGISTRY_NAME


def read() -> dict[str, Entry]:
    """Every recorded loop by loop directory; an unreadable registry (or none, without
    a home directory) reads as empty."""
    try:
        return jsonstore.read(_path())
    except home.NoHome:
        return {}


def check_writable() -> None:
    """RalphstateError, before anything changes, when the registry cannot be written:
    a loop started or adopted without it would be a stranger to the hooks."""
    path = _path()
    try:
        jsonstore.check_writable(path)
    except OSError as exc:
        raise RalphstateError(
            f"could not write the loop registry {path}: {exc.strerror or type(exc).__name__};"
            " without it the hooks would take the loop for one that came with a clone."
            " Nothing was started."
        ) from None


def entry(paths: LoopPaths) -> Entry | None:
    return read().get(jsonstore.key(paths))


# What tells one loop from another at the same place: the id `init` gives a loop, and
# the time it was started. A file cannot pass for a known loop by leaving them out.
IDENTITY = ("loopId", "startedAt")


def identity(state: State) -> Entry:
    return {"loopId": state["loopId"], "startedAt": state["startedAt"]}


def knows(paths: LoopPaths, state: State) -> bool:
    """True when this machine created or adopted this very loop: its entry records an
    identity (`loopId`, `startedAt`) and the state has every part of it. An entry that
    records none matches no loop."""
    found = entry(paths)
    if found is None:
        return False
    recorded = {key: found.get(key) for key in IDENTITY if found.get(key) is not None}
    if not recorded:
        return False
    own = identity(state)
    return all(own[key] == value for key, value in recorded.items())


def _summary(state: State) -> Entry:
    criteria = state["criteria"]
    met = sum(1 for c in criteria if state["criteriaStatus"].get(c) is True)
    return {
        **identity(state),
        "spec": state["spec"][:200],
        "status": state["status"],
        "criteriaMet": met,
        "criteriaTotal": len(criteria),
        "sessionId": state.get("sessionId"),
        "updatedAt": clock.now_iso(),
    }


def _change(key: str, new: Entry | None) -> None:
    """Record `new` over the entry of `key` (None: forget it), keeping the registry to
    `limits.MAX_REGISTRY_LOOPS` loops (`_bounded`); RalphstateError when the registry
    cannot be written."""
    forgotten: list[str] = []

    def edit(loops: dict[str, Entry]) -> None:
        if new is None:
            loops.pop(key, None)
        else:
            loops[key] = {**loops.get(key, {}), **new}
            forgotten[:] = _bounded(loops, key)

    jsonstore.change(_path(), "the loop registry", edit)
    if forgotten:  # said, never silent: these loops are strangers to the hooks now
        sys.stderr.write(
            f"ralphstate: the loop registry keeps at most {limits.MAX_REGISTRY_LOOPS} loops;"
            f" it forgot {len(forgotten)} (gone, finished or updated longest ago), first"
            f" {forgotten[0]}.\n"
        )


# Forgotten first when the registry is full: loops whose directory is gone, then the
# finished ones, then the rest; in each group the one updated longest ago first.
_FINISHED = ("complete", "cancelled")


def _bounded(loops: dict[str, Entry], keep: str) -> list[str]:
    """Forget loops until at most `limits.MAX_REGISTRY_LOOPS` are left, never `keep`;
    the loop directories forgotten."""
    over = len(loops) - limits.MAX_REGISTRY_LOOPS
    if over <= 0:
        return []

    def order(item: tuple[str, Entry]) -> tuple[int, str]:
        path, entry = item
        group = 0 if not Path(path).is_dir() else 1 if entry.get("status") in _FINISHED else 2
        return group, str(entry.get("updatedAt") or "")

    candidates = sorted((item for item in loops.items() if item[0] != keep), key=order)
    gone = [path for path, _ in candidates[:over]]
    for path in gone:
        del loops[path]
    return gone


def problem() -> str | None:
    """One sentence when the registry file exists but cannot be used (larger than
    `limits.MAX_USER_FILE_BYTES`, or not the registry's JSON): every loop reads as
    unknown until it is written again, when the file is kept aside."""
    try:
        path = _path()
        size = path.stat().st_size
    except (OSError, home.NoHome):
        return None
    if size > limits.MAX_USER_FILE_BYTES:
        why = f"it is larger than {limits.MAX_USER_FILE_BYTES // (1024 * 1024)} MiB"
    elif jsonstore.read(path) == {} and size > 64:
        why = "it is not a registry ralphstate can read"
    else:
        return None
    return (
        f"the loop registry {path} cannot be used ({why}), so no loop is known here;"
        " the next `ralphstate init` or `adopt` keeps it aside and starts a new one."
    )


def record(paths: LoopPaths, state: State, claude_pid: str | None = None) -> None:
    """Remember this loop as made or adopted here, with the owner's Claude Code process."""
    new = _summary(state)
    if claude_pid is not None:
        new["claudePid"] = claude_pid
    _change(jsonstore.key(paths), new)


def refresh(paths: LoopPaths, state: State) -> None:
    """Update a known loop's summary (status, criteria met); unknown loops stay unknown."""
    if knows(paths, state):
        _change(jsonstore.key(paths), _summary(state))


def forget(key: str) -> None:
    _change(key, None)


# -- state files found at a session's start -------------------------------------------
#
# A second small file beside the registry (`present.json`, the same shape): for each loop
# directory whose state file this machine does not know, the sessions that found it there
# when they started (SessionStart). A state file a session did not find at its start, and
# that came with no commit from elsewhere, is one its own agent wrote (hooks/arrival.py).

PRESENT_NAME = "present.json"
# The newest sessions kept for a loop directory, and the loop directories kept.
MAX_PRESENT_SESSIONS = 20
MAX_PRESENT_LOOPS = 100


def _present_path() -> Path:
    return home.state_dir() / PRESENT_NAME


def note_present(paths: LoopPaths, session: str) -> None:
    """Note that `session` found this loop directory's state file at its start, not
    known here; RalphstateError when the note cannot be written."""

    def edit(loops: dict[str, Entry]) -> None:
        key = jsonstore.key(paths)
        entry = loops.pop(key, {})
        sessions = [s for s in entry.get("sessions", []) if isinstance(s, str) and s != session]
        sessions.append(session)
        loops[key] = {"sessions": sessions[-MAX_PRESENT_SESSIONS:], "at": clock.now_iso()}
        while len(loops) > MAX_PRESENT_LOOPS:  # the loop noted longest ago goes
            del loops[next(iter(loops))]

    try:
        jsonstore.change(_present_path(), "the notes of state files found", edit)
    except home.NoHome as exc:
        raise RalphstateError(str(exc)) from None


def present_at_start(paths: LoopPaths, session: str) -> bool:
    """Whether `session` found this loop directory's state file when it started."""
    try:
        loops = jsonstore.read(_present_path())
    except home.NoHome:
        return False
    sessions = loops.get(jsonstore.key(paths), {}).get("sessions")
    return isinstance(sessions, list) and session in sessions
