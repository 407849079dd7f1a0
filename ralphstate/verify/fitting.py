"""The verification a hook can afford: the Stop hook at a claimed completion, and the
task gate (docs/explanation/hooks.md, "Long test suites").

    found = fitting.verify(store, names, by="stop")
    found.results      # the checks that ran to a result, in the loop's order
    found.fresh        # not run: verified on the code the work tree holds now
    found.deferred     # not run, or cut short: they do not fit the hook's budget

A hook has a time limit, and a test suite may take longer. So a hook runs only what it
must, and only what fits:

- a check verified on the code the work tree holds now is not run again
  (`queries.fresh`: its evidence and the ledger's last pass name that tree, and, where
  the checks run in a clean room, a clean room of the same tracked files), when that
  pass was ralphstate's own (core/provenance.py): one an agent's `verify` recorded is
  run again;
- the rest run side by side within the loop's budget (`verifyBudget`, 120 s by
  default), except those whose last run says they cannot finish within it
  (`checkrun.fit`): those are deferred, and so is a check the budget cuts short.

A deferred check proves nothing either way: it is not recorded here; the hook verifies
it in the background (verify/background.py) and blocks until that ends
(core/unfinished.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ralphstate.core import checkrun, queries
from ralphstate.core import state as st
from ralphstate.core.provenance import counts
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import ledger, truststore
from ralphstate.storage.repo import git
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.verify import execute, firsts, isolation, onecheck, pool


@dataclass
class Deferred:
    """A check left to `ralphstate verify`: its criterion, the seconds its last run took
    (None: not known), and whether it began here and the budget cut it short."""

    criterion: str
    last: float | None
    cut: bool = False


@dataclass
class Verification:
    """What a hook's verification did (see the module), within `budget` seconds;
    `clean`: its checks run in a clean room."""

    results: list[onecheck.CheckResult] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)
    deferred: list[Deferred] = field(default_factory=list)
    budget: float = 0.0
    clean: bool = False


def verify(
    store: Store,
    names: Sequence[str] | None = None,
    *,
    restore: tuple[str, list[str]] | None = None,
    by: str = "stop",
) -> Verification:
    """Verify the loop's trusted checks (`names`, else all) as a hook can afford (see
    the module), in a clean room where the loop is in a git repository and its
    `cleanVerify` is not false, with `restore`'s paths as that tree holds them (else
    the guarded files as approved). Nothing is recorded but an interruption
    (`execute.run_checks`); the results are judged (`firsts.judge`).

    Raises `execute.Untrusted` when the checks are not trusted here, `pool.Interrupted`
    on KeyboardInterrupt, RalphstateError when the clean room cannot be made."""
    state = store.load()
    todo = execute.plan(state, names)
    seconds = checkrun.budget(state)
    found = Verification(budget=seconds, clean=queries.clean_verify(state))
    if not todo:
        return found
    if not truststore.is_trusted(store.paths, state):
        raise execute.Untrusted(execute.untrusted_message(store))
    try:
        _verify(store, state, todo, found, restore, by)
    except pool.Interrupted:
        raise
    except KeyboardInterrupt as exc:  # before any check ran: all of them are unfinished
        names = [c for c, _ in todo]
        stopped = execute.stopped(exc, names)
        execute.record_interrupted(store, [], names, by, stopped.how)
        raise stopped from None
    if found.deferred and found.clean:  # the command the model is told must work here
        found.clean = git.toplevel(store.paths.root) is not None
    return found


def _verify(
    store: Store,
    state: st.State,
    todo: list[tuple[str, str]],
    found: Verification,
    restore: tuple[str, list[str]] | None,
    by: str,
) -> None:
    deadline = time.monotonic() + found.budget
    names = [c for c, _ in todo]
    entry = ledger.of_loop(store.paths, state) or {}
    found.fresh, restore = _fresh(store.paths, state, names, found, restore, entry)
    alone = checkrun.alone(state)
    jobs = [
        pool.Job(c, command, execute.own_limit(state, c), c in alone, _last(entry, c, command))
        for c, command in todo
        if c not in found.fresh
    ]
    planned = [(job.criterion, job.last, job.alone) for job in jobs]
    left = set(checkrun.fit(planned, checkrun.jobs(state), found.budget))
    found.deferred = [Deferred(jobs[i].criterion, jobs[i].last) for i in sorted(left)]
    jobs = [job for i, job in enumerate(jobs) if i not in left]
    if not jobs:
        return
    where = execute.Where(None, restore, deadline)
    results = execute.run_jobs(store, state, jobs, where, record=False, progress=None, by=by)
    last = {job.criterion: job.last for job in jobs}
    cut = [Deferred(r.criterion, last[r.criterion], True) for r in results if r.budget_cut]
    found.deferred += cut
    found.results = [r for r in results if not r.budget_cut]
    firsts.judge(store, found.results)  # a check cut short proved nothing, red or green


def _fresh(
    paths: LoopPaths,
    state: st.State,
    names: list[str],
    found: Verification,
    restore: tuple[str, list[str]] | None,
    entry: dict[str, Any],
) -> tuple[list[str], tuple[str, list[str]] | None]:
    """The criteria of `names` verified on the code the work tree holds now (the
    ledger's `entry` holds their last passes), and what the clean room restores
    (computed here once, when the checks run in one). git is asked only when some
    check could be fresh."""
    passes = entry.get("lastPass")
    if isinstance(passes, dict):  # only ralphstate's own passes are reused, never an agent's
        passes = {n: p for n, p in passes.items() if isinstance(p, dict) and _counts(p)}
    if not isinstance(passes, dict) or not any(n in passes for n in names):
        return [], restore
    if not found.clean:
        code = git.snapshot(paths)
        return queries.fresh(state, names, code.tree if code else None, None, passes), restore
    both = git.tracked_snapshot(paths)
    if both is None:  # outside git: no tree to compare
        return [], restore
    code, tracked = both
    fresh = queries.fresh(state, names, code.tree, tracked, passes)
    if fresh and restore is None:  # the guarded files are compared only when it matters
        restore = isolation.approved_guards(paths, state) or isolation.NOTHING
    if not fresh or restore is None or restore[1]:  # a room that would differ from the tree
        return [], restore
    return fresh, restore


def _last(entry: dict[str, Any], criterion: str, command: str) -> float | None:
    """The seconds the last run of `command` took, as the ledger kept it (a claim made
    since does not forget it); None when it never ran."""
    took = (entry.get("lastRun") or {}).get(criterion)
    if not isinstance(took, dict) or took.get("command") != command:
        return None
    ms = took.get("ms")
    return ms / 1000 if isinstance(ms, int) and not isinstance(ms, bool) else None


def _counts(last: dict[str, Any]) -> bool:
    """Whether a check's last pass, as the ledger keeps it, may be reused: only one
    ralphstate's own verification produced, never an agent's (core/provenance.py)."""
    return counts(last.get("by"))
