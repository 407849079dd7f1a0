"""Each check's first result, kept in the loop's ledger (core/redgreen.py has the rules;
docs/explanation/proof.md, "Red before green").

    progress = firsts.judging(state, entry, progress)   # as each check finishes
    firsts.judge(store, results)      # before results are written to the state
    firsts.start(store, state)        # at `init`: the tree the loop started on

`judge` sees every batch of check results before the state records them (verify/pipeline.py
calls it wherever checks run: `verify`, `run`, the Stop hook, the task gate). In one
change of the ledger it records each criterion's first result for its current command
and the commands that failed; then it holds back a pass that must fail first
(`expectFail`: the result fails, its summary says why) and marks the results of a
criterion already true at the start (`alreadyTrue` in the evidence), and names a pass
that ran fewer tests than its baseline (`weakened`: loop/proofreview.py pauses the loop
for review on it, core/redgreen.py `weakened_passes`). A ledger that
cannot be written never fails the command: it is said on stderr and in the log, and a
pass that must fail first is judged by what the ledger held.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ralphstate.core import actor, clock, limits, redgreen
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import ledger
from ralphstate.storage.repo import git

# How long `init` may spend finding the tree the loop starts on (git); past it the rule
# without a tree applies (core/redgreen.py).
START_TREE_SECONDS = min(2.0, limits.GIT_SNAPSHOT_SECONDS)


class Result(Protocol):
    """A check's result as verify/onecheck.py makes it (`CheckResult`)."""

    criterion: str
    command: str
    passed: bool
    held: bool
    already_true: bool
    code: git.Snapshot | None
    clean_tree: str | None
    duration_ms: int
    strength: dict[str, Any] | None
    weakened: str | None
    by: str
    confined: bool


def say(message: str) -> None:
    """One warning on stderr and in the log; neither may fail the command."""
    line = f"ralphstate: warning: {message}."
    try:
        from ralphstate.storage.peruser import logs

        logs.write(line)
    except Exception:  # noqa: BLE001 - the log is a convenience; stderr still says it
        pass
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr closed
        sys.stderr.write(line + "\n")


def judging(
    state: st.State, entry: Any, progress: Callable[[Any], None] | None
) -> Callable[[Any], None]:
    """`progress` for checks about to run on `state`, each result judged first: a pass
    that must fail first is held before anyone is shown it (`entry`: the loop
    directory's ledger entry, as read before they ran)."""
    if entry is not None and entry.get("loop") not in (None, state["loopId"]):
        entry = None

    def judged(result: Any) -> None:
        _hold(state, entry, result)
        if progress is not None:
            progress(result)

    return judged


def _hold(state: st.State, entry: Any, result: Result) -> None:
    if result.passed and not redgreen.counts(state, entry, result.criterion, result.command):
        result.passed, result.held = False, True
    if result.passed:
        name, command = result.criterion, result.command
        result.weakened = redgreen.weakened(entry, name, command, result.strength)


def judge(store: Store, results: Sequence[Result]) -> None:
    """Record `results` in the ledger and judge them (see the module's docstring)."""
    if not results:
        return
    try:
        state = store.load()
    except RalphstateError:
        return  # the update that follows says what is wrong with the state
    outcomes = [
        redgreen.Outcome(
            r.criterion,
            r.command,
            r.passed or r.held,
            r.code.tree if r.code else None,
            r.clean_tree,
            r.duration_ms,
            r.strength,
            r.by,
            r.confined,
        )
        for r in results
    ]
    entry = _record(store, state, outcomes)
    for result in results:
        _hold(state, entry, result)
        result.already_true = redgreen.first_already_true(entry, result.criterion, result.command)


def _record(store: Store, state: st.State, outcomes: list[redgreen.Outcome]) -> Any:
    """The loop's ledger entry with `outcomes` recorded (written only when that changes
    it); None when the ledger holds another loop's. When it cannot be written, the entry
    as read, and a warning."""
    by = actor.current().get("kind", "unknown")
    at = clock.now_iso()
    found = ledger.read(store.paths)
    if found is not None and found.get("loop") not in (None, state["loopId"]):
        return None  # state.json is another loop than the ledger's: nothing is kept
    if found is not None and redgreen.noted(found, state, outcomes, by, at) == found:
        return found
    kept: list[dict[str, Any]] = []

    def edit(entry: ledger.Entry) -> None:
        kept.clear()
        if entry.get("loop") not in (None, state["loopId"]):
            return
        new = redgreen.noted(entry, state, outcomes, by, at)
        new["loop"] = state["loopId"]
        entry.clear()
        entry.update(new)
        kept.append(dict(entry))

    try:
        ledger.change(store.paths, edit)
    except RalphstateError as exc:
        say(
            f"{str(exc).rstrip('.')}; the checks' first results are not kept, and a check"
            " that must fail first does not count until they can be"
        )
        return found
    return kept[0] if kept else None


def start(store: Store, state: st.State, tree: str | None = None) -> None:
    """Record where the loop starts: the tree its work tree holds (`tree`, else found
    now within START_TREE_SECONDS; none outside git) and the steps already done."""
    if tree is None:
        code = git.snapshot(store.paths, START_TREE_SECONDS)
        tree = code.tree if code else None

    def edit(entry: ledger.Entry) -> None:
        if entry.get("loop") in (None, state["loopId"]):
            entry.update(loop=state["loopId"], startTree=tree)
            entry["startSteps"] = len(state["completedSteps"])

    try:
        ledger.change(store.paths, edit)
    except RalphstateError as exc:
        say(f"{str(exc).rstrip('.')}; the tree the loop started on is not kept")
