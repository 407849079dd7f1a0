"""What a verification's results make of the loop: the pipeline's `judge` step
(verify/pipeline.py; docs/explanation/design.md, "The verification pipeline").

    found = verdict.judge(plan, results)      # what proved something, what was cut short
    events = verdict.apply(state, found.results, "verify", at)   # the state, changed

Plain data in, plain data out: nothing here reads a file, a clock or a process (the
ledger's red-before-green judgement, which reads and writes the per-user ledger, is the
pipeline's `record` step: verify/firsts.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from ralphstate.core import checkrun, fields, fixsteps
from ralphstate.core import state as st
from ralphstate.core.verifyplan import Deferred, Plan

Event = dict[str, Any]


class Result(Protocol):
    """A check's result as verify/onecheck.py makes it (`CheckResult`)."""

    criterion: str
    command: str
    passed: bool
    budget_cut: bool

    def evidence(self, at: str) -> fields.Evidence: ...


R = Any  # a Result; kept as the caller's own type


@dataclass
class Verdict:
    """The results that proved something, pass or fail (`results`), and the checks the
    budget cut short (`cut`: left to the background verification when the plan affords)."""

    results: list[R] = field(default_factory=list)
    cut: list[Deferred] = field(default_factory=list)


def judge(made: Plan, results: Sequence[R], afford: bool) -> Verdict:
    """Sort `results` of `made`'s jobs: where the verification affords (a hook's), a
    check the budget cut short proved nothing, red or green, and is left to `ralphstate
    verify`; elsewhere it failed as timed out, and counts as a failure."""
    if not afford:
        return Verdict(list(results))
    last = {job.criterion: job.last for job in made.jobs}
    cut = [Deferred(r.criterion, last.get(r.criterion), True) for r in results if r.budget_cut]
    return Verdict([r for r in results if not r.budget_cut], cut)


def apply(state: st.State, results: Sequence[Result], by: str, at: str) -> list[Event]:
    """Set each result's criterion from its exit code and keep its evidence (as of
    `at`); return the history events. Results whose criterion is gone, or whose check
    changed since it ran, are skipped."""
    events: list[Event] = []
    for result in results:
        name = result.criterion
        if name not in state["criteria"] or state["checks"].get(name) != result.command:
            continue
        state["criteriaStatus"][name] = result.passed
        state["evidence"][name] = result.evidence(at)
        entry = result.evidence(at)
        del entry["at"]
        events.append({"event": "check", "criterion": name, "by": by, **entry})
    checkrun.ran(cast(st.Raw, state), [str(e["criterion"]) for e in events])
    ran = {str(e["criterion"]) for e in events}  # a check a time budget cut found no gap
    passed = {r.criterion: r.passed for r in results if r.criterion in ran and not r.budget_cut}
    return events + fixsteps.fix_steps(cast(st.Raw, state), passed)


def unfinished(finished: Sequence[Result], names: Sequence[str]) -> tuple[list[R], list[str]]:
    """Of a stopped verification of `names`: the results that proved something (a check
    a time budget cut short proved nothing) and the criteria left unfinished."""
    kept = [r for r in finished if not r.budget_cut]
    done = {r.criterion for r in kept}
    return kept, [n for n in names if n not in done]


def interrupted(
    state: st.State, finished: Sequence[Result], left: Sequence[str], by: str, how: str, at: str
) -> list[Event]:
    """The state of a verification stopped (`how`) with `left` unfinished: the
    `finished` results applied, and `verifyInterrupted` set (cleared when none is left);
    the history events."""
    events = apply(state, finished, by, at)
    mark = checkrun.interrupted(at, by, how, left)
    cast(st.Raw, state)["verifyInterrupted"] = mark if left else None
    if left:
        events.append(
            {"event": "verify_interrupted", "by": by, "how": how, "criteria": mark["criteria"]}
        )
    return events
