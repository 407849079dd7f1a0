"""What a verification leaves behind: the pipeline's `record` step
(verify/pipeline.py). The results go into the loop's ledger first (red before green:
verify/firsts.py), then into the state (`criteriaStatus`, `evidence`) and history (one
`check` event each) in one locked update; a verification stopped before its checks
finished is recorded as such (`verifyInterrupted`, a `verify_interrupted` line).

    records.results(store, results, "verify")
    events = records.apply(state, results, "stop")   # inside a hook's own update
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from ralphstate.core import clock, verdict
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.verify import firsts
from ralphstate.verify.onecheck import CheckResult


def apply(state: st.State, results: Sequence[CheckResult], by: str) -> list[Event]:
    """`results` applied to `state` as of now (core/verdict.py `apply`): for a hook that
    records them in an update of its own."""
    return verdict.apply(state, results, by, clock.now_iso())


def results(store: Store, found: Sequence[CheckResult], by: str = "verify") -> st.State:
    """Write `found` to the state and history in one update (see `apply`), once the
    ledger has recorded and judged them (verify/firsts.py)."""
    firsts.judge(store, found)

    def change(state: st.State, events: list[Event]) -> st.State:
        events += apply(state, found, by)
        return state

    return store.update(change)


def interrupted(
    store: Store, finished: Sequence[CheckResult], names: Sequence[str], by: str, how: str
) -> None:
    """A verification of the checks of `names` was stopped (`how`: terminated,
    interrupted, killed) after the `finished` ones: those are recorded as `verify`
    records them, and the rest in `verifyInterrupted` and a `verify_interrupted` line in
    history, in one update. A state that cannot be written is said on stderr and in
    the log, never raised: the process is on its way out. A check a time budget cut
    short proved nothing, and is counted as not finished."""
    kept, left = verdict.unfinished(finished, names)
    firsts.judge(store, kept)

    def change(state: st.State, events: list[Event]) -> None:
        events += verdict.interrupted(state, kept, left, by, how, clock.now_iso())

    try:
        store.update(change)
    except RalphstateError as exc:
        firsts.say(f"the stopped verification could not be recorded ({str(exc).rstrip('.')})")


def killed(head: dict[str, Any]) -> None:
    """In a verification's watchdog (verify/watchdog.py), once the process that ran the
    checks died before the verification ended: record it as killed (`head`: what the
    watchdog was told first). Never raises; what fails is said in the log."""
    try:
        from ralphstate.core import actor

        actor.set_current(head["actor"])
        store = Store(LoopPaths(head["loop"], head["dir"]))
        interrupted(store, [], head["criteria"], head["by"], "killed")
    except Exception as exc:  # noqa: BLE001 - nobody is there to tell but the log
        with contextlib.suppress(Exception):
            from ralphstate.storage.peruser import logs

            logs.write(f"ralphstate watchdog: could not record a killed verification ({exc})")
