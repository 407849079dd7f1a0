"""Which loops' check commands a person allowed to run on this machine.

Check commands are code. A state file that arrives with a repository, or is edited
by hand, must not run anything here until a person says so. The trust store, a small
JSON file under the user data directory, maps each loop directory (its real path) to
the hash of the `checks` a person trusted there: `ralphstate trust` records it, and a
change to `checks` made through ralphstate on this machine carries it forward. Any
other change to `checks` (a hand edit, a pull, a copied file) no longer matches.

A loop with no checks has nothing to run and counts as trusted.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from ralphstate import clock, fsio, home
from ralphstate.errors import RalphstateError
from ralphstate.paths import LoopPaths

TRUST_NAME = "trust.json"
Entry = dict[str, Any]

UNTRUSTED_WHY = (
    "its checks were changed outside ralphstate, or came with the repository,"
    " and are not trusted on this machine"
)


def _path() -> Path:
    return home.data_dir() / TRUST_NAME


def _key(paths: LoopPaths) -> str:
    return os.path.realpath(paths.dir)


def checks_hash(checks: dict[str, str]) -> str:
    """The fingerprint of a set of checks: every criterion name and its command."""
    return hashlib.sha256(orjson.dumps(checks, option=orjson.OPT_SORT_KEYS)).hexdigest()


def read() -> dict[str, Entry]:
    """Every trust record by loop directory; an unreadable store reads as empty."""
    try:
        data = orjson.loads(_path().read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    loops = data.get("loops") if isinstance(data, dict) else None
    if not isinstance(loops, dict):
        return {}
    return {k: v for k, v in loops.items() if isinstance(v, dict)}


def _trusts(paths: LoopPaths, checks: dict[str, str]) -> bool:
    if not checks:
        return True
    entry = read().get(_key(paths))
    return entry is not None and entry.get("checksHash") == checks_hash(checks)


def is_trusted(paths: LoopPaths, state: dict[str, Any]) -> bool:
    """True when a person trusted exactly these checks for this loop on this machine."""
    return _trusts(paths, state["checks"])


def record(paths: LoopPaths, state: dict[str, Any]) -> None:
    """Trust the loop's current checks here; RalphstateError if the store cannot be written."""
    import filelock

    target = _path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=fsio.DIR_MODE)
        with filelock.FileLock(str(target) + ".lock", timeout=5, mode=fsio.FILE_MODE):
            loops = read()
            loops[_key(paths)] = {
                "checksHash": checks_hash(state["checks"]),
                "checks": len(state["checks"]),
                "trustedAt": clock.now_iso(),
            }
            data = orjson.dumps({"version": 1, "loops": loops}, option=orjson.OPT_INDENT_2)
            fsio.atomic_write(target, data + b"\n")
    except (OSError, filelock.Timeout) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise RalphstateError(f"could not write the trust store {target}: {reason}.") from None


def carry(paths: LoopPaths, before: dict[str, str], state: dict[str, Any]) -> None:
    """After ralphstate itself changed `checks`: what was trusted stays trusted.

    Checks that were not trusted before the change stay untrusted; a failure to write
    the store only leaves them untrusted (status and doctor say so)."""
    if before == state["checks"] or not _trusts(paths, before):
        return
    try:
        record(paths, state)
    except RalphstateError:
        pass
