"""Operations on check commands and verification settings, with no knowledge of click:
set or remove a criterion's check and its timeout, trust the checks, switch
verify-on-stop. Changes go through the store (locked, logged); a change made here
keeps the checks trusted if they were (see `trust.carry`)."""

from __future__ import annotations

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.loop.checklist import find_criterion
from ralphstate.storage import trust
from ralphstate.storage.store import Event, Store, append_history


def set_check(
    store: Store,
    name: str,
    command: str | None = None,
    *,
    timeout: float | None = None,
    remove: bool = False,
) -> tuple[str, st.State]:
    """Give criterion `name` the check `command` and/or `timeout`; or `remove` both.

    A new command drops the criterion's evidence (it proved another command); the
    criterion's status is left as it is."""
    if command is not None and not command.strip():
        raise RalphstateError("a check needs a command; to drop one use --remove.")
    if timeout is not None and not 0 < timeout <= limits.MAX_CHECK_TIMEOUT:
        raise RalphstateError(
            f"a check timeout is a number of seconds above 0 and at most"
            f" {limits.MAX_CHECK_TIMEOUT:g}, not {timeout:g}."
        )
    before: dict[str, str] = {}

    def fn(state: st.State, events: list[Event]) -> tuple[str, st.State]:
        crit = find_criterion(state, name)
        before.clear()
        before.update(trust.armed(state))
        old = (state["checks"].get(crit), state["checkTimeouts"].get(crit))
        if remove:
            state["checks"].pop(crit, None)
            state["checkTimeouts"].pop(crit, None)
        else:
            if command is not None:
                state["checks"][crit] = command
            elif crit not in state["checks"]:
                raise RalphstateError(
                    f"criterion {crit!r} has no check to give a timeout to;"
                    ' give the command too: ralphstate criteria check NAME "COMMAND".'
                )
            if timeout is not None:
                state["checkTimeouts"][crit] = timeout
        new = (state["checks"].get(crit), state["checkTimeouts"].get(crit))
        if new == old:
            return crit, state
        if new[0] != old[0] and state["evidence"].get(crit, {}).get("result") != "claimed":
            state["evidence"].pop(crit, None)
        entry: Event = {"event": "check_removed" if remove else "check_set", "criterion": crit}
        if not remove:
            entry.update(command=new[0], timeout=new[1])
        events.append(entry)
        return crit, state

    found, new = store.update(fn)
    trust.carry(store.paths, before, new, {found})
    return found, new


def describe(state: st.State, name: str) -> str:
    """One line: the criterion's check and the timeout it runs under."""
    crit = find_criterion(state, name)
    command = state["checks"].get(crit)
    if command is None:
        return f"{visible(crit)}: no check"
    own = state["checkTimeouts"].get(crit)
    limit = (
        f"timeout {own:g}s" if own is not None else f"timeout {limits.CHECK_TIMEOUT:g}s, default"
    )
    return f"{visible(crit)}: {visible(command)}  ({limit})"


def trust_checks(store: Store, run: dict[str, object] | None = None) -> st.State:
    """Trust the loop's current checks (and the run settings `run`, see `trust.record`)
    on this machine, approving its contract and guarded files as they are now
    (verify/review.py `approve`), and say so in history."""
    from ralphstate.core import actor
    from ralphstate.loop import review

    state = review.approve(store, actor.current(), run)
    armed = trust.armed(state)
    event: Event = {
        "event": "trusted",
        "checks": len(armed),
        "checksHash": trust.checks_hash(armed)[:16],
    }
    if run:
        event["run"] = trust.run_hash(run)[:16]
    append_history(
        store.paths.history,
        [event],
        state["iteration"],
        loop_id=state["loopId"],
    )
    return state
