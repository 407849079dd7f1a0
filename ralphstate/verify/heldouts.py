"""What `ralphstate heldout` does to a loop's held-out checks: the person adds, lists,
shows and removes them (storage/peruser/heldoutstore.py keeps them; verify/heldoutchecks.py
runs them where a completion is decided).

    added = heldouts.add(store, "tests pass", "pytest -q test_hidden.py",
                         [Path("/home/me/hidden/test_hidden.py")], hint="edge cases")
    heldouts.remove(store, "h1")

Adding copies each file into the store by its hash, and runs the check once on the
tree the loop started on (the ledger's `startTree`), in a clean room with its files:
a check that passes there is said to be already true (red before green,
core/redgreen.py), as a visible check's first pass is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphstate.core import clock, limits
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import checkenv, heldoutstore, ledger, truststore
from ralphstate.storage.repo import cleanroom, git

# How many files one held-out check may carry.
MAX_FILES = 50


@dataclass
class Added:
    """A held-out check just added, and what its run on the start tree found: True
    (already true), False (it fails there, as it should) or None (not run) with why."""

    check: dict[str, Any]
    start: bool | None
    why: str = ""


def add(store: Store, criterion: str, command: str, files: list[Path], hint: str = "") -> Added:
    """Add a held-out check of `criterion` (a criterion of the loop, by name or
    1-based number). RalphstateError for a criterion that is not the loop's, a project
    outside git, a file that cannot be read or one inside the project (the agent
    reads the project)."""
    from ralphstate.loop.checklist import find_criterion

    state = store.load()
    name = find_criterion(state, criterion)
    if not command.strip():
        raise RalphstateError("a held-out check needs a command: give it with --command.")
    if git.toplevel(store.paths.root, limits.GIT_TIMEOUT) is None:
        raise RalphstateError(
            f"{store.paths.root} is not in a git repository; held-out checks run only in a"
            " clean room, a worktree of the files git tracks."
        )
    if len(files) > MAX_FILES:
        raise RalphstateError(f"a held-out check takes at most {MAX_FILES} files.")
    kept = [_keep(store, path) for path in files]
    names = [entry["name"] for entry in kept]
    if len(set(names)) != len(names):
        raise RalphstateError("two of the files have the same name; rename one first.")
    entry = ledger.of_loop(store.paths, state) or {}
    start = entry.get("startTree") if isinstance(entry.get("startTree"), str) else None
    check: dict[str, Any] = {
        "criterion": name,
        "command": command,
        "hint": hint,
        "files": kept,
        "addedAt": clock.now_iso(),
        "startTree": start,
    }
    found, why = _on_start(store, check, start)
    check["alreadyTrue"] = found

    def edit(data: heldoutstore.Data) -> None:
        number = int(data.get("next") or 1)
        check["id"] = f"h{number}"
        data["next"] = number + 1
        data["checks"].append(check)

    heldoutstore.change(store.paths, edit)
    return Added(check, found, why)


def _keep(store: Store, path: Path) -> dict[str, Any]:
    """A file of a held-out check, kept in the store: its name, hash and size."""
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(store.paths.root))
    if real == root or root in real.parents:
        raise RalphstateError(
            f"{path} is inside the project, where the agent reads it; a held-out file"
            " must be kept outside it: move it out, then add it from there."
        )
    try:
        from ralphstate.storage.system import fsio

        data = fsio.read_regular(real, heldoutstore.MAX_FILE_BYTES)
    except OSError as exc:
        raise RalphstateError(f"cannot read {path}: {exc.strerror or exc}.") from None
    if len(data) > heldoutstore.MAX_FILE_BYTES:
        raise RalphstateError(
            f"{path} is larger than {heldoutstore.MAX_FILE_BYTES:,} bytes, the most a"
            " held-out file may be."
        )
    digest = heldoutstore.keep_file(store.paths, data)
    return {"name": real.name, "sha256": digest, "size": len(data)}


def _on_start(store: Store, check: dict[str, Any], start: str | None) -> tuple[bool | None, str]:
    """The check run once on the tree the loop started on: passed, and why not run."""
    from ralphstate.verify import heldoutchecks
    from ralphstate.verify.onecheck import run_one

    if start is None:
        return None, "the tree the loop started on is not known here"
    try:
        room = cleanroom.open_room(store.paths, restore=(start, ["."]))
    except RalphstateError as exc:
        return None, str(exc).rstrip(".")
    if room is None:
        return None, "the project is not in a git repository"
    try:
        heldoutchecks.place(store.paths, check, room.cwd)
        env = checkenv.for_check(truststore.recorded_env(store.paths))
        result = run_one(
            check["criterion"],
            check["command"],
            str(room.cwd),
            limits.CHECK_TIMEOUT,
            None,
            env,
            str(room.top),
        )
    except RalphstateError as exc:
        return None, str(exc).rstrip(".")
    finally:
        cleanroom.close(room)
    return result.passed, result.summary


def remove(store: Store, check_id: str) -> dict[str, Any]:
    """Remove the held-out check `check_id` (h1, h2, ...); the check removed.
    RalphstateError when the loop has no such check."""
    gone: list[dict[str, Any]] = []

    def edit(data: heldoutstore.Data) -> None:
        gone[:] = [c for c in data["checks"] if c.get("id") == check_id]
        data["checks"] = [c for c in data["checks"] if c.get("id") != check_id]

    known = [c.get("id") for c in heldoutstore.checks_of(store.paths)]
    if check_id not in known:
        raise RalphstateError(_unknown(check_id, known))
    heldoutstore.change(store.paths, edit)
    return gone[0] if gone else {"id": check_id}


def find(store: Store, check_id: str) -> dict[str, Any]:
    """The held-out check `check_id`; RalphstateError when there is none."""
    checks = heldoutstore.checks_of(store.paths)
    for check in checks:
        if check.get("id") == check_id:
            return check
    raise RalphstateError(_unknown(check_id, [c.get("id") for c in checks]))


def _unknown(check_id: str, known: list[Any]) -> str:
    ids = ", ".join(str(k) for k in known) or "none yet"
    return (
        f"this loop has no held-out check {check_id!r} (its checks: {ids}); see"
        " `ralphstate heldout list`."
    )


def runs(store: Store, check_id: str | None = None) -> list[dict[str, Any]]:
    """The runs the store keeps, oldest first: of `check_id`, or all of them."""
    found = heldoutstore.read(store.paths)["runs"]
    return [r for r in found if check_id is None or r.get("check") == check_id]
