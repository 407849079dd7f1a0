"""What ralphstate knows about a loop outside the project's files
(docs/explanation/proof.md, "The approved contract").

The agent can edit every file of the project, `.loop/state.json` included. What proves
a loop done must not live only there: ralphstate keeps, per loop directory, a small
JSON file in the per-user data directory (`loops/<hash of the loop dir>.json`):

- `loop`: the id of the loop the entry is about (a new `init` starts a new entry);
- `author`: who started the loop (an actor, core/actor.py);
- `approved`, `approvedBy`, `approvedAt`: the contract (core/proof.py) as it was when
  the loop started, or as a person last approved it;
- `guardTree`: the git tree holding the guarded files as approved;
- `status`: the status ralphstate itself last wrote: a `complete` in state.json that
  ralphstate did not write ended the loop outside it;
- `firsts`, `failedOnce`: each check's first result, and the checks that have failed
  at least once; `startTree`, `startSteps`: the tree the loop started on and the steps
  done then (red before green, verify/firsts.py); `lastPass`: each check's last pass
  that counted, and the code it ran on (a check verified on the code the work tree
  holds is not run again at a stop, core/verifyplan.py);
- `told`: what the person was already told about, so a notice is given once;
- `lost`: the file could not be used and was kept aside (`keptAs`): what the person
  approved is unknown until they approve again (`fault`).

The file is read without a lock (bounded, an unusable one reads as empty), changed
under its own lock (storage/peruser/jsonstore.py). A ledger that cannot be read or
written is a fault that fails closed (`fault`): the approved contract is unknown, so a
claimed completion pauses for the person's review, which names the file. The person's
user can still edit it: an agent that goes that far is out of reach without a sandbox
(SECURITY.md).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ralphstate.core import actor, clock, limits, proof
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.peruser import home, jsonstore
from ralphstate.storage.system.paths import LoopPaths

Entry = dict[str, Any]


def path_of(paths: LoopPaths) -> Path:
    return home.ledger_path(paths.dir)


def read(paths: LoopPaths) -> Entry | None:
    """The loop directory's entry; None when there is none (or no home to keep one)."""
    try:
        return jsonstore.read(path_of(paths)).get(jsonstore.key(paths))
    except home.NoHome:
        return None


def of_loop(paths: LoopPaths, state: st.State) -> Entry | None:
    """The entry, when it is about the loop `state` is (its id)."""
    entry = read(paths)
    if entry is None or entry.get("loop") != state.get("loopId"):
        return None
    return entry


def change(paths: LoopPaths, edit: Callable[[Entry], None]) -> None:
    """Apply `edit` to the loop directory's entry (an empty dict when there is none);
    RalphstateError when the file cannot be written."""
    key = jsonstore.key(paths)
    aside: list[Path] = []

    def apply(loops: dict[str, Entry]) -> None:
        entry = loops.get(key) or {}
        if aside:  # the file could not be used: what was approved is lost with it
            entry["lost"] = {"at": clock.now_iso(), "keptAs": str(aside[-1])}
        edit(entry)
        loops.clear()
        loops[key] = entry

    try:
        jsonstore.change(path_of(paths), "the loop's ledger", apply, aside)
    except home.NoHome as exc:
        raise RalphstateError(str(exc)) from None


def fault(paths: LoopPaths, entry: Entry | None) -> str | None:
    """Why the contract the person approved is unknown, as one sentence naming the file,
    when the ledger cannot be read or written (`entry`: what `read` gave); None when it
    can, or when there is none and one can be written (a loop this machine never knew).
    Only a missing entry costs a look at the file."""
    if entry is not None:
        lost = entry.get("lost")
        if not isinstance(lost, dict):
            return None
        what = f"could not be used and was kept aside as {lost.get('keptAs')}"
    else:
        try:
            what = _why_unusable(path_of(paths)) or ""
        except home.NoHome:
            return None
        if not what:
            return None
    return f"the loop's ledger {path_of(paths)} {what}, so the contract you approved is unknown"


def _why_unusable(path: Path) -> str | None:
    """What is wrong with the ledger file at `path`; None when it is missing and one
    can be written there, or when it holds entries."""
    try:
        data = jsonstore.read_bytes(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    if data is None:
        try:
            jsonstore.check_writable(path)
        except OSError as exc:
            return f"cannot be written ({exc.strerror or type(exc).__name__})"
        return None
    if len(data) > limits.MAX_USER_FILE_BYTES:
        return f"is over its size bound of {limits.MAX_USER_FILE_BYTES} bytes"
    if jsonstore.entries(data) is None:
        return "is not a ledger (not the JSON ralphstate writes)"
    return None


def begin(
    paths: LoopPaths,
    state: st.State,
    author: actor.Actor,
    contract: dict[str, Any],
    guard_tree: str | None = None,
    kept: Entry | None = None,
) -> None:
    """A new loop: its author, its contract as it starts (approved by its author), the
    guarded files as they are (the tree `guard_tree`), and the status ralphstate wrote.
    With `kept` (the entry of the loop it replaces, not over), the approved contract
    and guarded files stay that loop's: an agent's new loop is measured by them."""
    now = clock.now_iso()

    def edit(entry: Entry) -> None:
        entry.clear()
        entry.update(
            loop=state["loopId"],
            author=author,
            approved=contract,
            approvedBy=author,
            approvedAt=now,
            status=state["status"],
            guardTree=guard_tree,
        )
        if kept is not None and isinstance(kept.get("approved"), dict):
            for key in ("approved", "approvedBy", "approvedAt", "guardTree", "gateOff"):
                entry[key] = kept.get(key)
            entry["replaced"] = kept.get("loop")

    change(paths, edit)


def approve(
    paths: LoopPaths,
    state: st.State,
    by: actor.Actor,
    contract: dict[str, Any],
    guard_tree: str | None,
) -> None:
    """A person approved `contract` (and the guarded files as the tree `guard_tree`)."""
    now = clock.now_iso()

    def edit(entry: Entry) -> None:
        if entry.get("loop") != state["loopId"]:
            entry.clear()
            entry.update(loop=state["loopId"], author={"kind": "unknown"}, status=state["status"])
        before = entry.get("approved")
        changed = proof.weakenings(before, contract) if isinstance(before, dict) else []
        if changed or (guard_tree and guard_tree != entry.get("guardTree")):
            what = changed or ["the guarded files as they are"]
            record = {"by": by, "at": now, "changes": what[:20]}
            entry["approvals"] = [*(entry.get("approvals") or []), record][-20:]
        entry.update(approved=contract, approvedBy=by, approvedAt=now)
        entry["guardTree"] = guard_tree
        entry.pop("told", None)
        entry.pop("lost", None)

    change(paths, edit)


def note_status(paths: LoopPaths, state: st.State) -> None:
    """Remember the status ralphstate just wrote for this loop."""

    def edit(entry: Entry) -> None:
        if entry.get("loop") not in (None, state["loopId"]):
            return  # another loop's entry: `init` starts the new one
        entry["loop"] = state["loopId"]
        entry["status"] = state["status"]

    change(paths, edit)


def after_write(paths: LoopPaths, status: str, contract: dict[str, Any], state: st.State) -> None:
    """What ralphstate just wrote, from `status` and `contract`: the status it wrote
    (a status it did not write is recognised later), and a person's own change to
    the contract, approved by making it (core/proof.py `carried`); an agent's waits for
    review. A ledger that cannot be written costs only that recognition."""
    after = proof.contract_of(state)
    by_person = actor.is_person(actor.current())

    def edit(entry: Entry) -> None:
        if entry.get("loop") not in (None, state["loopId"]):
            return  # another loop's entry: `init` starts the new one
        entry["loop"] = state["loopId"]
        if state["status"] != status:
            entry["status"] = state["status"]
        approved = entry.get("approved")
        if after != contract and by_person and isinstance(approved, dict):
            entry["approved"] = proof.carried(approved, contract, after)

    with contextlib.suppress(RalphstateError):
        change(paths, edit)


def told(paths: LoopPaths, state: st.State, what: str) -> bool:
    """Record that the person was told `what` about this loop; False when they already
    were (or it cannot be recorded: then they are told again next time)."""
    entry = of_loop(paths, state)
    if entry is not None and what in (entry.get("told") or []):
        return False

    def edit(e: Entry) -> None:
        e["told"] = [*(e.get("told") or []), what][-20:]

    try:
        change(paths, edit)
    except RalphstateError:
        return True
    return True


def ended_outside(paths: LoopPaths, state: st.State) -> bool:
    """The loop is complete or cancelled, but ralphstate did not write that: it ended
    outside ralphstate (a hand edit of state.json), and nothing verified it."""
    if state["status"] not in ("complete", "cancelled"):
        return False
    entry = of_loop(paths, state)
    return entry is not None and entry.get("status") in st.ACTIVE


def paused_outside(paths: LoopPaths, state: st.State) -> bool:
    """The loop is paused, but ralphstate last wrote it in progress: it was paused
    outside ralphstate (a hand edit of state.json), whatever reason the file gives."""
    if state["status"] != "paused":
        return False
    entry = of_loop(paths, state)
    return entry is not None and entry.get("status") == "in_progress"


def in_progress_gone(paths: LoopPaths) -> str | None:
    """The id of the loop whose state.json is gone while ralphstate last knew it not
    over (deleted during the loop); None otherwise."""
    entry = read(paths)
    if entry is None or entry.get("status") not in st.ACTIVE or os.path.lexists(paths.state):
        return None
    return str(entry.get("loop") or "")


# The stamps of a criterion's grades kept (core/grading.py `stamp`).
MAX_GRADE_STAMPS = 8


def note_grades(paths: LoopPaths, verdicts: list[tuple[str, str]]) -> None:
    """Keep the stamps of the verdicts a reviewer just gave (criterion, stamp): only
    a grade whose stamp is kept here is shown as graded (`disown_grades`). A ledger
    that cannot be written costs only that: the grades then read as unrecorded."""
    if not verdicts:
        return

    def edit(entry: Entry) -> None:
        table = entry.get("grades")
        table = dict(table) if isinstance(table, dict) else {}
        for name, said in verdicts:
            kept = table.get(name)
            kept = [s for s in kept if isinstance(s, str)] if isinstance(kept, list) else []
            table[name] = [*kept, said][-MAX_GRADE_STAMPS:]
        entry["grades"] = table

    with contextlib.suppress(RalphstateError):
        change(paths, edit)


def disown_grades(paths: LoopPaths, state: st.State) -> list[str]:
    """Make the grades in `state` that ralphstate did not record read as unrecorded
    (core/grading.py `disown`), for a view; the criteria so changed."""
    from ralphstate.core import grading

    if not state["grades"]:
        return []
    entry = read(paths) or {}
    table = entry.get("grades")
    return grading.disown(state, table if isinstance(table, dict) else {})
