"""Operations on check commands and verification settings, with no knowledge of click:
set or remove a criterion's check and its timeout, trust the checks, switch
verify-on-stop. Changes go through the store (locked, logged); a change made here
keeps the checks trusted if they were (see `truststore.carry`)."""

from __future__ import annotations

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.loop.checklist import find_criterion
from ralphstate.storage.loopdir.store import Event, Store, append_history
from ralphstate.storage.peruser import truststore


def set_check(
    store: Store,
    name: str,
    command: str | None = None,
    *,
    timeout: float | None = None,
    remove: bool = False,
    expect_fail: bool | None = None,
    alone: bool | None = None,
) -> tuple[str, st.State]:
    """Give criterion `name` the check `command` and/or `timeout`; or `remove` both.
    `expect_fail`: the check must fail once before a pass counts (True), or no longer
    (False); `alone`: it runs with no other check beside it (True), or beside them
    (False); None leaves either as it is.

    A new command drops the criterion's evidence (it proved another command); the
    criterion's status is left as it is."""
    _refuse_bad(command, timeout)
    before: dict[str, str] = {}

    def fn(state: st.State, events: list[Event]) -> tuple[str, st.State]:
        crit = find_criterion(state, name)
        before.clear()
        before.update(truststore.armed(state))
        old = _setting(state, crit)
        if expect_fail is not None:
            _expect(state, crit, expect_fail)
        if alone is not None or remove:
            _alone(state, crit, bool(alone) and not remove)
        if remove:
            state["checks"].pop(crit, None)
            state["checkTimeouts"].pop(crit, None)
        else:
            if command is not None:
                state["checks"][crit] = command
            elif timeout is not None and crit not in state["checks"]:
                raise RalphstateError(
                    f"criterion {crit!r} has no check to give a timeout to;"
                    ' give the command too: ralphstate criteria check NAME "COMMAND".'
                )
            if timeout is not None:
                state["checkTimeouts"][crit] = timeout
        new = _setting(state, crit)
        if new == old:
            return crit, state
        if new[0] != old[0] and state["evidence"].get(crit, {}).get("result") != "claimed":
            state["evidence"].pop(crit, None)
        events.append(_event(crit, remove, old, new))
        return crit, state

    found, new = store.update(fn)
    from ralphstate.loop import person

    if person.confirm_first_checks(store.paths, before, new, "`ralphstate criteria check`"):
        truststore.carry(store.paths, before, new, {found})
    return found, new


def _event(criterion: str, remove: bool, old: Setting, new: Setting) -> Event:
    """The history line of a change of a criterion's check from `old` to `new`."""
    entry: Event = {"event": "check_removed" if remove else "check_set", "criterion": criterion}
    if not remove:
        entry.update(command=new[0], timeout=new[1])
    if new[2] != old[2]:
        entry["expectFail"] = new[2]
    if new[3] != old[3]:
        entry["alone"] = new[3]
    return entry


def _refuse_bad(command: str | None, timeout: float | None) -> None:
    """RalphstateError for a blank command or a timeout out of range."""
    if command is not None and not command.strip():
        raise RalphstateError("a check needs a command; to drop one use --remove.")
    if timeout is not None and not 0 < timeout <= limits.MAX_CHECK_TIMEOUT:
        raise RalphstateError(
            f"a check timeout is a number of seconds above 0 and at most"
            f" {limits.MAX_CHECK_TIMEOUT:g}, not {timeout:g}."
        )


# A criterion's check: its command, its timeout, whether it must fail first, whether it
# runs alone.
Setting = tuple[str | None, float | None, bool, bool]


def _setting(state: st.State, criterion: str) -> Setting:
    """A criterion's check: its command, its timeout, whether it must fail first,
    whether it runs alone."""
    return (
        state["checks"].get(criterion),
        state["checkTimeouts"].get(criterion),
        criterion in state["expectFail"],
        criterion in state["runAlone"],
    )


def _expect(state: st.State, criterion: str, on: bool) -> None:
    """Put `criterion` in `expectFail`, or take it out."""
    kept = [c for c in state["expectFail"] if c != criterion]
    state["expectFail"] = [*kept, criterion] if on else kept


def _alone(state: st.State, criterion: str, on: bool) -> None:
    """Put `criterion` in `runAlone`, or take it out."""
    kept = [c for c in state["runAlone"] if c != criterion]
    state["runAlone"] = [*kept, criterion] if on else kept


def describe(state: st.State, name: str) -> str:
    """One line: the criterion's check and the timeout it runs under."""
    crit = find_criterion(state, name)
    command = state["checks"].get(crit)
    if command is None:
        later = "; the check it gets must fail first" if crit in state["expectFail"] else ""
        return f"{visible(crit)}: no check{later}"
    own = state["checkTimeouts"].get(crit)
    limit = (
        f"timeout {own:g}s" if own is not None else f"timeout {limits.CHECK_TIMEOUT:g}s, default"
    )
    if crit in state["expectFail"]:
        limit += "; must fail before a pass counts"
    if crit in state["runAlone"]:
        limit += "; runs alone"
    return f"{visible(crit)}: {visible(command)}  ({limit})"


def trust_checks(
    store: Store, run: dict[str, object] | None = None, env: list[str] | None = None
) -> st.State:
    """Trust the loop's current checks (and the run settings `run`, with the variables
    `env` names, see `truststore.record`) on this machine, approving its contract and
    guarded files as they are now (loop/proofreview.py `approve`), and say so in
    history."""
    from ralphstate.core import actor
    from ralphstate.loop import proofreview

    state = proofreview.approve(store, actor.current(), run, env)
    armed = truststore.armed(state)
    event: Event = {
        "event": "trusted",
        "checks": len(armed),
        "checksHash": truststore.checks_hash(armed)[:16],
    }
    if run:
        event["run"] = truststore.run_hash(run)[:16]
    append_history(
        store.paths.history,
        [event],
        state["iteration"],
        loop_id=state["loopId"],
    )
    return state
