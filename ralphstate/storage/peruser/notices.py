"""What the hooks already told the person about a loop they could not use.

A hook that cannot use a loop (its state file does not parse, is too large, is from a
newer ralphstate, its lock could not be had) lets the agent stop and tells the person
once per session, not at every stop. What was told is remembered here, in a small
per-user JSON file (never in the broken loop's own directory): for each loop directory,
the fingerprints of (session, fault) pairs already told, the newest
`MAX_NOTICES_PER_LOOP`, for at most `MAX_NOTICE_LOOPS` loops.
"""

from __future__ import annotations

from pathlib import Path

from ralphstate.core import clock, limits
from ralphstate.storage.peruser import home, jsonstore
from ralphstate.storage.peruser.jsonstore import Entries
from ralphstate.storage.system.paths import LoopPaths

NOTICES_NAME = "notices.json"


def _path() -> Path:
    return home.state_dir() / NOTICES_NAME


def fingerprint(session: str, fault: str) -> str:
    import hashlib

    return hashlib.sha256(f"{session}\0{fault}".encode("utf-8", "replace")).hexdigest()[:16]


def first_time(paths: LoopPaths, session: str, fault: str) -> bool:
    """True, and remembered, when `fault` of this loop was not told to `session` yet.
    A file that cannot be written counts as "not told": saying it again is better than
    saying nothing (RalphstateError is not raised)."""
    told = fingerprint(session, fault)
    loop_key = jsonstore.key(paths)
    new: list[bool] = []

    def edit(loops: Entries) -> None:
        new.clear()
        entry = loops.pop(loop_key, {})
        seen = [s for s in entry.get("told", []) if isinstance(s, str)]
        new.append(told not in seen)
        if told not in seen:
            seen.append(told)
        loops[loop_key] = {"told": seen[-limits.MAX_NOTICES_PER_LOOP :], "at": clock.now_iso()}
        while len(loops) > limits.MAX_NOTICE_LOOPS:  # the loop told longest ago goes
            del loops[next(iter(loops))]

    try:
        jsonstore.change(_path(), "the notices file", edit)
    except Exception:  # noqa: BLE001 - a convenience: never let it hide the fault
        return True
    return bool(new and new[0])
