"""Running the held-out checks: the checks a person added that the agent never sees
(storage/peruser/heldoutstore.py; docs/explanation/proof.md, "Held-out checks").

    failed = heldoutchecks.run(store, state, ["tests pass"], by="stop", session=sid)
    events = heldoutchecks.mark(state, failed, "stop")   # inside the state's update

They run only where a completion is decided (the Stop hook, the task gate, the run's
verification), once the visible checks passed, never in an agent's `ralphstate
verify`. All of them run in one clean room (a worktree of the files git tracks,
storage/repo/cleanroom.py), with their files placed in its project directory, one
after another, confined as every check is (verify/confine.py), with the environment
the person trusted. What each found, in full, goes to the per-user store for the
person; the agent gets a `Failed`: the criterion and the person's hint, nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ralphstate.core import clock, fixsteps, limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import checkenv, heldoutstore, truststore
from ralphstate.storage.repo import cleanroom
from ralphstate.storage.system.paths import LoopPaths

# What the agent's command shows in place of a held-out check's command.
SHOWN_COMMAND = "held-out check"
# Under a hook's time budget: the least time a check is started with, and what the
# person is told of a check that did not fit (`ralphstate config verify-budget`).
MIN_SECONDS = 1.0
NO_TIME = (
    "not run: the hook's verification time (verifyBudget) was used up by the checks"
    " before it; it counts as not passed: raise `ralphstate config verify-budget`"
)
CUT = "cut short by the hook's verification time (verifyBudget): it counts as not passed"


@dataclass
class Failed:
    """A held-out check that failed, as the agent may know it: its criterion and the
    person's hint. Shaped as a failing check's result for the words that say it
    (core/render.py `CheckFailure`)."""

    criterion: str
    hint: str = ""
    command: str = SHOWN_COMMAND
    duration_ms: int = 0
    clean_tree: str | None = None

    @property
    def summary(self) -> str:
        return said(self.criterion, self.hint)

    @property
    def output_tail(self) -> str:
        return ""


def said(criterion: str, hint: str) -> str:
    """The one sentence the agent reads of a held-out failure."""
    from ralphstate.core.render import clip

    line = f"a held-out check for criterion {clip(criterion)!r} failed"
    return f"{line} (hint: {clip(hint, 300)})" if hint else line


def of_criteria(paths: LoopPaths, criteria: Sequence[str]) -> list[dict[str, Any]]:
    """The held-out checks of `criteria`, in the store's order; Unreadable when the
    store cannot be read."""
    return [c for c in heldoutstore.checks_of(paths) if c.get("criterion") in criteria]


def has_any(paths: LoopPaths, state: st.State) -> bool:
    """Whether any criterion of the loop has a held-out check (an unreadable store
    counts: running them says so)."""
    try:
        return bool(of_criteria(paths, state["criteria"]))
    except RalphstateError:
        return True


def run(
    store: Store,
    state: st.State,
    criteria: Sequence[str] | None = None,
    *,
    by: str,
    session: str | None = None,
    budget: float | None = None,
) -> list[Failed]:
    """Run the held-out checks of `criteria` (None: every criterion of the loop) and
    return those that failed, all of them within `budget` seconds when given (a hook's
    verification time left once its visible checks ran: the client kills a hook that
    takes longer). A check the budget leaves no time for, or cuts short, fails, the
    person told why: a held-out check that did not run proves nothing. Never raises
    but for KeyboardInterrupt: a store that cannot be read, a room that cannot be made
    or a file that changed fails the checks, the person told why in the store's runs
    (or the log)."""
    names = list(state["criteria"] if criteria is None else criteria)
    try:
        checks = of_criteria(store.paths, names)
    except RalphstateError as exc:
        _tell(store.paths, {"check": None, "criterion": None, "summary": str(exc)}, by, session)
        return [Failed(name) for name in names]
    if not checks:
        return []
    try:
        room = cleanroom.open_room(store.paths)
    except RalphstateError as exc:
        room, why = None, str(exc)
    else:
        why = "the project is not in a git repository: held-out checks run only in a clean room"
    if room is None:
        return [_failed_to_run(store.paths, check, why, by, session) for check in checks]
    try:
        deadline = None if budget is None else time.monotonic() + budget
        return _run_in(store, state, room, checks, by, session, deadline)
    finally:
        cleanroom.close(room)


def _run_in(
    store: Store,
    state: st.State,
    room: cleanroom.Room,
    checks: list[dict[str, Any]],
    by: str,
    session: str | None,
    deadline: float | None = None,
) -> list[Failed]:
    from ralphstate.verify.onecheck import run_one

    env = checkenv.for_check(truststore.recorded_env(store.paths))
    failed: list[Failed] = []
    for check in checks:
        criterion, hint = str(check["criterion"]), str(check.get("hint") or "")
        try:
            place(store.paths, check, room.cwd)
        except RalphstateError as exc:
            failed.append(_failed_to_run(store.paths, check, str(exc), by, session))
            continue
        limit = float(state["checkTimeouts"].get(criterion, limits.CHECK_TIMEOUT))
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left < MIN_SECONDS:
            failed.append(_failed_to_run(store.paths, check, NO_TIME, by, session))
            continue
        cut = left is not None and left < limit
        limit = min(limit, left) if left is not None else limit
        result = run_one(
            criterion, str(check["command"]), str(room.cwd), limit, None, env, str(room.top)
        )
        run_record = {
            "check": check.get("id"),
            "criterion": criterion,
            "passed": result.passed,
            "exitCode": result.exit_code,
            "summary": result.summary + (f" ({CUT})" if cut and result.timed_out else ""),
            "outputTail": result.output_tail,
            "durationMs": result.duration_ms,
            "confined": result.confined,
            "tree": room.tree,
        }
        _tell(store.paths, run_record, by, session)
        if not result.passed:
            failed.append(Failed(criterion, hint, duration_ms=result.duration_ms))
    return failed


def place(paths: LoopPaths, check: dict[str, Any], where: Path) -> None:
    """Put the check's files into `where` (the room's project directory) under their
    names, each checked against the hash it was added with."""
    for entry in check.get("files") or []:
        name = str(entry.get("name", ""))
        target = where / name
        if not name or Path(name).is_absolute() or ".." in Path(name).parts:
            raise RalphstateError(
                f"the held-out file name {name!r} is not a path inside the project."
            )
        data = heldoutstore.file_content(paths, str(entry.get("sha256", "")))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _failed_to_run(
    paths: LoopPaths, check: dict[str, Any], why: str, by: str, session: str | None
) -> Failed:
    criterion = str(check.get("criterion"))
    run_record = {"check": check.get("id"), "criterion": criterion, "passed": False, "summary": why}
    _tell(paths, run_record, by, session)
    return Failed(criterion, str(check.get("hint") or ""))


def _tell(paths: LoopPaths, run_record: dict[str, Any], by: str, session: str | None) -> None:
    """Keep a run for the person: who ran it (`by`), in which session, when."""
    from ralphstate.core import actor

    if session is None:
        session = actor.current().get("session")
    run_record.update(by=by, session=session, at=clock.now_iso())
    heldoutstore.note_run(paths, run_record)


def mark(state: st.State, failed: Sequence[Failed], by: str) -> list[Event]:
    """Inside the state's update: each criterion a held-out check failed is set back to
    not verified (its evidence says a held-out check failed, never which), with a
    `heldout_failed` event each, and the fix steps a failing check earns
    (core/fixsteps.py). Criteria no longer in the loop are skipped."""
    events: list[Event] = []
    failing: dict[str, bool] = {}
    for failure in failed:
        name = failure.criterion
        if name not in state["criteria"] or name in failing:
            continue
        failing[name] = False
        state["criteriaStatus"][name] = False
        found = state["evidence"].get(name)
        if found is not None:
            found["result"] = "failing"
            found["summary"] = said(name, failure.hint)
        events.append({"event": "heldout_failed", "criterion": name, "by": by})
    return events + fixsteps.fix_steps(cast(st.Raw, state), failing)
