"""The held-out checks of a loop: kept in the per-user data directory, outside the
project, where nothing the agent reads through ralphstate shows them
(docs/how-to/held-out-checks.md; docs/explanation/proof.md, "Held-out checks").

    checks = heldoutstore.read(paths)                   # what the person added
    heldoutstore.change(paths, edit)                    # under its lock
    blob = heldoutstore.keep_file(paths, data)          # a file's content, by its hash
    heldoutstore.note_run(paths, run)                   # what a run found, for the person

Each loop directory (its key, `home.loop_key`) has a directory of its own,
`heldout/<hash of the key>/`, holding `checks.json`:

    {"version": 1, "next": 3,
     "checks": [{"id": "h1", "criterion": ..., "command": ..., "hint": ...,
                 "files": [{"name": "test_hidden.py", "sha256": ..., "size": ...}],
                 "addedAt": ..., "startTree": ..., "alreadyTrue": false}],
     "runs": [{"check": "h1", "criterion": ..., "passed": false, "exitCode": 1,
               "summary": ..., "outputTail": ..., "by": "stop", "session": ...,
               "at": ..., "tree": ...}]}

and `files/<sha256>`, each file's content. Only the last `MAX_RUNS` runs are kept. A
`checks.json` that cannot be read is never overwritten: changing it is refused, and
reading it for a completion says so (verify/heldoutchecks.py fails the check).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core.errors import RalphstateError
from ralphstate.storage.peruser import home
from ralphstate.storage.system import fsio, locking
from ralphstate.storage.system.paths import LoopPaths

VERSION = 1
LOCK_TIMEOUT = 5.0
# The runs kept for the person to read (`ralphstate heldout show`).
MAX_RUNS = 50
# The most a held-out file, and checks.json, may hold.
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_INDEX_BYTES = 4 * 1024 * 1024
Data = dict[str, Any]


class Unreadable(RalphstateError):
    """The loop's checks.json exists and cannot be used: it is left as it is."""


def top() -> Path:
    """The directory of every loop's held-out checks (a sandbox hides it: sandbox/reach.py)."""
    return home.data_dir() / "heldout"


def directory(paths: LoopPaths) -> Path:
    """The loop's own directory of held-out checks."""
    key = home.loop_key(paths.dir)
    name = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return top() / name


def _index(paths: LoopPaths) -> Path:
    return directory(paths) / "checks.json"


def _empty() -> Data:
    return {"version": VERSION, "next": 1, "checks": [], "runs": []}


def _parse(path: Path, data: bytes) -> Data:
    try:
        raw = orjson.loads(data) if len(data) <= MAX_INDEX_BYTES else None
    except orjson.JSONDecodeError:
        raw = None
    ok = isinstance(raw, dict) and isinstance(raw.get("checks"), list)
    if not ok or not isinstance(raw, dict) or not isinstance(raw.get("runs", []), list):
        raise Unreadable(
            f"the held-out checks in {path} cannot be read (not the JSON ralphstate writes);"
            " it is left as it is: move it aside to start afresh."
        )
    found = _empty()
    found.update(raw)
    found["checks"] = [c for c in found["checks"] if isinstance(c, dict)]
    found["runs"] = [r for r in found["runs"] if isinstance(r, dict)]
    return found


def read(paths: LoopPaths) -> Data:
    """The loop's held-out checks and runs; empty when it has none. Unreadable when
    the file is there and cannot be used."""
    path = _index(paths)
    try:
        data = fsio.read_regular(path, MAX_INDEX_BYTES + 1)
    except FileNotFoundError:
        return _empty()
    except OSError as exc:
        raise Unreadable(
            f"the held-out checks in {path} cannot be read ({exc.strerror or exc})."
        ) from None
    return _parse(path, data)


def checks_of(paths: LoopPaths) -> list[Data]:
    """The loop's held-out checks (Unreadable, as `read`)."""
    return list(read(paths)["checks"])


def change(paths: LoopPaths, edit: Callable[[Data], None]) -> Data:
    """Apply `edit` to the loop's held-out data under its lock and write it back; what
    was written. RalphstateError (one sentence) when it cannot be."""
    path = _index(paths)
    try:
        fsio.makedirs(path.parent)
        with locking.hold(Path(str(path) + ".lock"), LOCK_TIMEOUT):
            data = read(paths)
            edit(data)
            data["runs"] = data["runs"][-MAX_RUNS:]
            fsio.atomic_write(path, orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
            return data
    except locking.Held:
        raise RalphstateError(
            f"could not write the held-out checks {path}: another process holds its lock"
            f" (gave up after {LOCK_TIMEOUT:g}s)."
        ) from None
    except OSError as exc:
        raise RalphstateError(
            f"could not write the held-out checks {path}: {exc.strerror or exc}."
        ) from None


def keep_file(paths: LoopPaths, data: bytes) -> str:
    """Keep a held-out file's content in the store; its sha256 (its name there)."""
    digest = hashlib.sha256(data).hexdigest()
    where = directory(paths) / "files" / digest
    try:
        fsio.makedirs(where.parent)
        if not where.is_file():
            fsio.atomic_write(where, data)
    except OSError as exc:
        raise RalphstateError(
            f"could not keep the file in {where}: {exc.strerror or exc}."
        ) from None
    return digest


def file_content(paths: LoopPaths, digest: str) -> bytes:
    """A kept file's content, checked against its hash; RalphstateError when it is
    missing or changed."""
    where = directory(paths) / "files" / digest
    try:
        data = fsio.read_regular(where, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise RalphstateError(
            f"the held-out file {where} cannot be read ({exc.strerror or exc})."
        ) from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise RalphstateError(f"the held-out file {where} changed since it was added.")
    return data


def note_run(paths: LoopPaths, run: Data) -> None:
    """Keep what one held-out run found (for the person); never raises: a run that
    cannot be kept is said in the log."""
    try:
        change(paths, lambda data: data["runs"].append(run))
    except RalphstateError as exc:
        from ralphstate.storage.peruser import logs

        logs.write(f"ralphstate: a held-out check's run was not kept ({exc})")
