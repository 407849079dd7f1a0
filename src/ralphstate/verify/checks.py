"""Operations on check commands and verification settings, with no knowledge of click:
set or remove a criterion's check and its timeout, trust the checks, switch
verify-on-stop. Changes go through the store (locked, logged); a change made here
keeps the checks trusted if they were (see `trust.carry`)."""

from __future__ import annotations

from typing import Any, cast

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.loop.ops import find_criterion
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
        before.update(state["checks"])
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
    trust.carry(store.paths, before, new)
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


def trust_checks(store: Store) -> st.State:
    """Trust the loop's current checks on this machine, and say so in history."""
    state = store.load()
    trust.record(store.paths, state)
    append_history(
        store.paths.history,
        [
            {
                "event": "trusted",
                "checks": len(state["checks"]),
                "checksHash": trust.checks_hash(state["checks"])[:16],
            }
        ],
        state["iteration"],
        loop_id=state["loopId"],
    )
    return state


# -- settings: `ralphstate config KEY [VALUE]` ------------------------------------------

# name on the command line -> (state key, parse the text, show the value)
SETTINGS: dict[str, tuple[str, Any, Any]] = {
    "verify-on-stop": (
        "verifyOnStop",
        lambda text: _parse_default_or_bool(text),
        lambda value: "default (on)" if value is None else "true" if value else "false",
    ),
}


def _parse_default_or_bool(text: str) -> bool | None:
    """`default` (null: on, the default) or a boolean the person chose."""
    from ralphstate.loop.ops import parse_bool

    return None if text.strip().lower() == "default" else parse_bool(text)


def _setting(key: str) -> tuple[str, Any, Any]:
    try:
        return SETTINGS[key]
    except KeyError:
        raise RalphstateError(
            f"no setting {key!r}; the settings are: {', '.join(SETTINGS)}."
        ) from None


def get_setting(state: st.State, key: str) -> str:
    field, _parse, show = _setting(key)
    return str(show(cast(st.Raw, state)[field]))


def set_setting(store: Store, key: str, text: str) -> str:
    """Set one setting from its text; returns the value as shown."""
    field, parse, show = _setting(key)
    value = parse(text)

    def fn(state: st.State, events: list[Event]) -> None:
        raw = cast(st.Raw, state)  # the setting's key comes from SETTINGS
        if raw[field] != value:
            raw[field] = value
            events.append({"event": "config", "key": field, "value": value})

    store.update(fn)
    return str(show(value))
