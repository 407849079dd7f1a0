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

import contextlib
from pathlib import Path

import orjson

from ralphstate.core import clock
from ralphstate.core.errors import RalphstateError
from ralphstate.core.state import State
from ralphstate.storage import home, jsonstore
from ralphstate.storage.jsonstore import Entry
from ralphstate.storage.paths import LoopPaths

TRUST_NAME = "trust.json"


def _path() -> Path:
    return home.data_dir() / TRUST_NAME


def checks_hash(checks: dict[str, str]) -> str:
    """The fingerprint of a set of checks: every criterion name and its command."""
    import hashlib  # OpenSSL's module: only a loop with checks needs it

    return hashlib.sha256(orjson.dumps(checks, option=orjson.OPT_SORT_KEYS)).hexdigest()


def read() -> dict[str, Entry]:
    """Every trust record by loop directory; an unreadable store reads as empty."""
    return jsonstore.read(_path())


def _trusts(paths: LoopPaths, checks: dict[str, str]) -> bool:
    if not checks:
        return True
    entry = read().get(jsonstore.key(paths))
    return entry is not None and entry.get("checksHash") == checks_hash(checks)


def is_trusted(paths: LoopPaths, state: State) -> bool:
    """True when a person trusted exactly these checks for this loop on this machine."""
    return _trusts(paths, state["checks"])


def record(paths: LoopPaths, state: State) -> None:
    """Trust the loop's current checks here; RalphstateError if the store cannot be written."""
    entry = {
        "checksHash": checks_hash(state["checks"]),
        "checks": len(state["checks"]),
        "trustedAt": clock.now_iso(),
    }

    def edit(loops: dict[str, Entry]) -> None:
        loops[jsonstore.key(paths)] = entry

    jsonstore.change(_path(), "the trust store", edit)


def carry(paths: LoopPaths, before: dict[str, str], state: State) -> None:
    """After ralphstate itself changed `checks`: what was trusted stays trusted.

    Checks that were not trusted before the change stay untrusted; a failure to write
    the store only leaves them untrusted (status and doctor say so)."""
    if before == state["checks"] or not _trusts(paths, before):
        return
    with contextlib.suppress(RalphstateError):
        record(paths, state)
