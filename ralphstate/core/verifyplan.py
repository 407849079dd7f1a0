"""What a verification runs, decided from plain facts: the pipeline's `plan` step
(verify/pipeline.py; docs/explanation/design.md, "The verification pipeline").

    todo = verifyplan.choose(state, ["tests pass"])       # (criterion, command) pairs
    made = verifyplan.plan(verifyplan.Facts(state, todo, afford=True, ...))
    made.jobs, made.fresh, made.deferred, made.budget

Nothing here reads a file, a clock or a process: the facts come in (the state, the
ledger's entry, the trees git named), the plan goes out. Two ways to plan:

- every chosen check runs, each within its own limit (or `timeout` for all), within
  `budget` seconds together when one is given (`ralphstate verify`, `run`, CI, `init`);
- as a hook can afford (`afford`: the Stop hook and the task gate; docs/explanation/
  hooks.md, "Long test suites"): a check whose pass ralphstate produced on the code the
  work tree holds now is not run again (`fresh`), and a check whose last run says it
  cannot finish within the loop's budget (`verifyBudget`) is left to `ralphstate
  verify` (`deferred`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ralphstate.core import checkrun, limits, queries
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.provenance import counts
from ralphstate.core.typos import pick


@dataclass(frozen=True)
class Planned:
    """One check to run: its criterion and command, its time limit (seconds), whether it
    runs alone, and the seconds its last run took (None: not known or not asked)."""

    criterion: str
    command: str
    limit: float
    alone: bool = False
    last: float | None = None


@dataclass
class Deferred:
    """A check left to the hook's background verification (verify/background.py): its
    criterion, the seconds its last run took (None: not known), and whether it began
    here and the budget cut it short."""

    criterion: str
    last: float | None
    cut: bool = False


@dataclass
class Facts:
    """What the pipeline's `gather` found. `todo`: the chosen (criterion, command)
    pairs in the loop's order; `entry`: the loop's ledger entry ({} when none);
    `tree`/`tracked`: the work tree's id and its tracked files' tree (None: not asked or
    not known); `differs`: a clean room would put guarded files back as approved."""

    state: st.State
    todo: list[tuple[str, str]]
    trusted: bool = True
    afford: bool = False
    timeout: float | None = None
    budget: float | None = None
    clean: bool = False
    entry: Mapping[str, Any] = field(default_factory=dict)
    tree: str | None = None
    tracked: str | None = None
    differs: bool = True


@dataclass
class Plan:
    """What runs (`jobs`), what need not (`fresh`), what is left to the background verification
    (`deferred`), and the seconds all of it may take (`budget`; None: no bound).
    `untrusted`: the chosen checks are not trusted here, so nothing runs."""

    jobs: list[Planned] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)
    deferred: list[Deferred] = field(default_factory=list)
    budget: float | None = None
    untrusted: bool = False


def choose(state: st.State, names: Sequence[str] | None) -> list[tuple[str, str]]:
    """(criterion, command) for each criterion `names` names (by its text or its 1-based
    number), or every criterion with a check, in the loop's order. A name that is no
    criterion, or a criterion without a check, is a mistake (RalphstateError)."""
    if names is None:
        return [(c, state["checks"][c]) for c in state["criteria"] if c in state["checks"]]
    chosen: list[str] = []
    for ref in names:
        name = pick(state["criteria"], ref, "criterion", "criteria")
        chosen.append(name)
        if name not in state["checks"]:
            from ralphstate.core.render import command

            give = command("criteria check", name, '"COMMAND"')
            raise RalphstateError(f"criterion {name!r} has no check; give it one with `{give}`.")
    return [(c, state["checks"][c]) for c in state["criteria"] if c in chosen]


def plan(facts: Facts) -> Plan:
    """The plan for `facts` (see the module)."""
    state = facts.state
    alone = checkrun.alone(state)
    seconds = checkrun.budget(state) if facts.afford else facts.budget
    if not facts.todo or not facts.trusted:
        return Plan(budget=seconds, untrusted=bool(facts.todo))
    if not facts.afford:
        jobs = [
            Planned(c, command, limit(state, c, facts.timeout), c in alone)
            for c, command in facts.todo
        ]
        return Plan(jobs, budget=facts.budget)
    seconds = checkrun.budget(state)
    fresh = reused(facts)
    jobs = [
        Planned(c, command, limit(state, c), c in alone, last(facts.entry, c, command))
        for c, command in facts.todo
        if c not in fresh
    ]
    planned = [(job.criterion, job.last, job.alone) for job in jobs]
    left = set(checkrun.fit(planned, checkrun.jobs(state), seconds))
    deferred = [Deferred(jobs[i].criterion, jobs[i].last) for i in sorted(left)]
    jobs = [job for i, job in enumerate(jobs) if i not in left]
    return Plan(jobs, fresh, deferred, seconds)


def passes(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The ledger's last passes that a stop may reuse: ralphstate's own, never an
    agent's (core/provenance.py)."""
    found = entry.get("lastPass")
    if not isinstance(found, dict):
        return {}
    return {n: p for n, p in found.items() if isinstance(p, dict) and _counts(p)}


def may_reuse(entry: Mapping[str, Any], names: Sequence[str]) -> bool:
    """Whether some of `names` has a pass that could be reused: only then is git asked."""
    found = passes(entry)
    return any(n in found for n in names)


def candidates(facts: Facts) -> list[str]:
    """The chosen criteria verified on the code the work tree holds now, before a clean
    room's guarded files are weighed (`reused` weighs them)."""
    names = [c for c, _ in facts.todo]
    found = passes(facts.entry)
    if not any(n in found for n in names):
        return []
    if facts.clean and facts.tracked is None:  # outside git: no tree to compare
        return []
    tracked = facts.tracked if facts.clean else None
    return queries.fresh(facts.state, names, facts.tree, tracked, found)


def reused(facts: Facts) -> list[str]:
    """The chosen criteria that need not run again: verified on this code, and, where
    the checks run in a clean room, one that would hold the same files."""
    fresh = candidates(facts)
    if facts.clean and facts.differs:
        return []
    return fresh


def limit(state: st.State, criterion: str, timeout: float | None = None) -> float:
    """The seconds a check may run: `timeout` for every check, else its own."""
    if timeout is not None:
        return timeout
    return float(state["checkTimeouts"].get(criterion, limits.CHECK_TIMEOUT))


def last(entry: Mapping[str, Any], criterion: str, command: str) -> float | None:
    """The seconds the last run of `command` took, as the ledger kept it (a claim made
    since does not forget it); None when it never ran."""
    took = (entry.get("lastRun") or {}).get(criterion)
    if not isinstance(took, dict) or took.get("command") != command:
        return None
    ms = took.get("ms")
    return ms / 1000 if isinstance(ms, int) and not isinstance(ms, bool) else None


def _counts(last: Mapping[str, Any]) -> bool:
    """Whether a check's last pass, as the ledger keeps it, may be reused: only one
    ralphstate's own verification produced, never an agent's (core/provenance.py)."""
    return counts(last.get("by"))
