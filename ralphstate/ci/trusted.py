"""Trust on a runner: what proves the loop done comes from what a person committed,
never from the loop's branch (docs/how-to/github-action.md, "Trust on a runner";
SECURITY.md, promise 23).

A fresh runner has no trust store and no ledger, and the loop's branch is written by
the agent: a check it changed there would run, and be approved, if the job took the
branch as it found it. So before each job's run the contract (criteria, checks, their
timeouts, the switches of docs/explanation/proof.md) is read from the trusted source,
the workflow's own inputs or `.loop/state.json` as the base commit holds it, and put
back into the branch's state where the two differ; a check the branch added that the
source does not have is taken out. Only then is the contract approved and its checks
trusted on this runner, as the person's, and the job says what it put back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from ralphstate.core import actor, limits, proof, schema
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState, RalphstateError
from ralphstate.core.render import quote
from ralphstate.core.text import visible
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.repo import git

STATE_PATH = ".loop/state.json"
# The loop's own budgets (core/schema.py, `BUDGET_KEYS`), which hold across every job,
# are trusted as the contract is: this is their place in a trusted contract.
BUDGET = "loopBudget"


def budget_of(state: st.State) -> dict[str, Any]:
    """The loop's budgets as `state` holds them (None: no budget of that figure)."""
    raw: dict[str, Any] = dict(state)
    return {key: raw.get(key) for key in schema.BUDGET_KEYS}


def from_inputs(
    criteria: list[str], checks: dict[str, str], budget: dict[str, Any] | None = None
) -> proof.Contract:
    """The contract the workflow file states: its criteria, their checks, and the
    loop's budgets (none when it gives none); every other field of the contract as a
    new loop holds it, at its default."""
    unknown = [name for name in checks if name not in criteria]
    if unknown:
        raise RalphstateError(
            f"the workflow gives a check for {quote(unknown[0])}, which is not one of its criteria."
        )
    contract = proof.contract_of(cast(st.State, schema.defaults()))
    contract["criteria"] = list(criteria)
    contract["checks"] = dict(checks)
    contract[BUDGET] = {key: (budget or {}).get(key) for key in schema.BUDGET_KEYS}
    return contract


def from_commit(root: Path, commit: str) -> proof.Contract | None:
    """The contract of the loop `commit` holds in `.loop/state.json`; None when it holds
    none. RalphstateError when the file there cannot be read as a loop."""
    shown = git.run_git(["show", f"{commit}:{STATE_PATH}"], root, limit=limits.MAX_STATE_BYTES + 1)
    if shown is None or not shown.ok:
        return None
    try:
        state = st.parse(shown.out_bytes)
    except CorruptState as exc:
        raise RalphstateError(f"{STATE_PATH} at {commit[:10]} cannot be used: {exc}") from None
    return {**proof.contract_of(state), BUDGET: budget_of(state)}


def differences(trusted: proof.Contract, state: st.State) -> list[str]:
    """How the loop's contract differs from the trusted one, one sentence each: what
    weakens it, and checks the trusted source does not have."""
    current = proof.contract_of(state)
    found = proof.weakenings(trusted, current)
    allowed: dict[str, str] = trusted.get("checks", {})
    for name, command in current["checks"].items():
        if name not in allowed:
            found.append(
                f"a check for {quote(name)} (`{visible(command)}`) that the trusted"
                " contract does not have"
            )
    allowed_budget: dict[str, Any] = trusted.get(BUDGET) or {}
    for key, value in budget_of(state).items():
        if key in allowed_budget and allowed_budget[key] != value:
            found.append(f"{key} was {value}, not {allowed_budget[key]}")
    return found


def put_back(store: Store, trusted: proof.Contract, source: str) -> list[str]:
    """Put the trusted contract (from `source`, as a person reads it) back into the
    loop where it differs, and say so in history; the differences found."""

    def change(state: st.State, events: list[Event]) -> list[str]:
        found = differences(trusted, state)
        if not found:
            return found
        proof.restored(state, trusted)
        allowed: dict[str, Any] = trusted.get("checks", {})
        for name in [n for n in state["checks"] if n not in allowed]:
            del state["checks"][name]
            state["checkTimeouts"].pop(name, None)
            state["evidence"].pop(name, None)
            state["criteriaStatus"][name] = False
        cast(dict[str, Any], state).update(trusted.get(BUDGET) or {})
        events.append({"event": "reverted", "contract": trusted, "from": source})
        return found

    return store.update(change)


def approve(store: Store, base: str) -> None:
    """Approve the loop's contract as it now stands and trust its checks on this runner,
    as the person's: the job does it for the person who wrote the workflow. The guarded
    files are approved as the commit `base` holds them, not as the branch does: a test
    the agent changed on the branch in an earlier job is a change to review, as it is
    within one run."""
    from ralphstate.loop import proofreview
    from ralphstate.loop.person import require_ci
    from ralphstate.storage.loopdir.store import append_history
    from ralphstate.storage.peruser import ledger, truststore

    require_ci("`ralphstate ci`")
    by = actor.current()
    state = proofreview.approve(store, by, None)
    if state.get("guards"):
        tree = git.run_git(
            ["rev-parse", "--verify", "--quiet", f"{base}^{{tree}}"], store.paths.root
        )
        if tree is None or not tree.ok:
            raise RalphstateError(f"git does not know the base commit {base[:10]}.")
        ledger.approve(store.paths, state, by, proof.contract_of(state), tree.out.strip())
    armed = truststore.armed(state)
    event: Event = {
        "event": "trusted",
        "checks": len(armed),
        "checksHash": truststore.checks_hash(armed)[:16],
    }
    append_history(store.paths.history, [event], state["iteration"], loop_id=state["loopId"])


def run_checks(
    store: Store, names: list[str], clean: bool | None
) -> tuple[dict[str, bool], list[str]]:
    """Run the loop's trusted checks as the job (`by: ci`): whether each of `names`
    passed, and the problems, one phrase each (a check that could not run, or failed)."""
    from ralphstate.verify import pipeline

    problems: list[str] = []
    try:
        results = pipeline.verify(store, pipeline.Ask(by="ci", clean=clean)).results
    except RalphstateError as exc:
        problems.append(f"the trusted checks could not run: {str(exc).rstrip('.')}")
        results = []
    ran = {r.criterion: r.passed for r in results}
    passed = {name: ran.get(name, False) for name in names}
    problems += [
        f"the trusted check of {quote(n)} does not pass" for n, ok in passed.items() if not ok
    ]
    return passed, problems
