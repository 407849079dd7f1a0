"""A running loop's settings, `ralphstate config [KEY [VALUE]]`: shown, and changed
through the store (locked, each change a `config` line in the history). A bad value is
refused with one sentence and changes nothing."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from ralphstate.core import budgets, checkrun, grading, limits, schema
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.marker import marker_problem
from ralphstate.core.ownership import DEFAULT_OWNER_TIMEOUT
from ralphstate.core.text import visible, visible_lines
from ralphstate.storage.loopdir.store import Event, Store

# How much of a long value (the spec) a history line keeps.
HISTORY_VALUE_CHARS = 200
TRUE_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@dataclass(frozen=True)
class Setting:
    field: str  # the state's key
    parse: Callable[[str], Any]  # the command line's text -> the value; RalphstateError
    show: Callable[[Any], str]  # the value as `config` prints it


def parse_bool(text: str) -> bool:
    """A boolean as the command line takes it: true/false, yes/no or 1/0."""
    try:
        return TRUE_WORDS[text.strip().lower()]
    except KeyError:
        raise RalphstateError(
            f"{text!r} is not true or false (use true/false, yes/no or 1/0)."
        ) from None


def _default_or_bool(text: str) -> bool | None:
    """`default` (null: on, the default) or a boolean the person chose."""
    return None if text.strip().lower() == "default" else parse_bool(text)


def _on_off(text: str) -> bool | None:
    """`on`/`off` (or a boolean the person chose), or `default` (null: on)."""
    word = text.strip().lower()
    if word in ("on", "off"):
        return word == "on"
    return _default_or_bool(text)


def _count(name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        return _whole(name, text, limits.MAX_ITERATIONS_CEILING)

    return parse


def _whole(name: str, text: str, most: int, other: str = "") -> int:
    """`text` as a whole number from 1 to `most`; else one sentence naming `name` and
    what it may be (`other`: another word it takes)."""
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if not 1 <= value <= most:
        raise RalphstateError(
            f"{name} must be a whole number from 1 to {most}{other}, not {visible(text)[:40]!r}."
        )
    return value


def _marker(text: str) -> str:
    problem = marker_problem(text)
    if problem:
        raise RalphstateError(problem)
    return text


def _message(text: str) -> str | None:
    return text if text.strip() else None  # empty: no continue message


# The most `max-tokens` takes: as much as `ralphstate run --max-tokens` does.
MAX_TOKENS = limits.MAX_USAGE_TOKENS


def _tokens(text: str) -> int | None:
    """A token budget, or `none` (null: no budget)."""
    if text.strip().lower() == "none":
        return None
    try:
        value = int(text.strip().replace(",", "").replace("_", ""))
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_TOKENS:
        raise RalphstateError(
            f"max-tokens must be a whole number from 1 to {MAX_TOKENS:,}, or none, not"
            f" {visible(text)[:40]!r}."
        )
    return value


def _spec(text: str) -> str:
    if not text.strip():
        raise RalphstateError("a loop needs a spec; it cannot be empty.")
    return text


def _none(text: str) -> bool:
    return text.strip().lower() == "none"


def _dollars(text: str) -> float | None:
    """The loop's cost budget: US dollars above 0, or `none`."""
    if _none(text):
        return None
    try:
        value = float(text.strip())
    except ValueError:
        value = 0.0
    if not math.isfinite(value) or value <= 0:
        raise RalphstateError(
            f"max-cost must be US dollars above 0, or none, not {visible(text)[:40]!r}."
        )
    return value


def _duration(text: str) -> float | None:
    if _none(text):
        return None
    seconds = budgets.parse_duration(text)
    if seconds is None:
        raise RalphstateError(
            "max-duration must be a duration such as 8h, 90m or 1h30m, or none,"
            f" not {visible(text)[:40]!r}."
        )
    return seconds


def _owner_timeout(text: str) -> float | None:
    """How long an owner may leave the loop untouched: a duration, `off` (0: never
    handed over by time) or `default` (null)."""
    word = text.strip().lower()
    if word == "default":
        return None
    if word in ("off", "never"):
        return 0.0
    seconds = budgets.parse_duration(text)
    if seconds is None:
        raise RalphstateError(
            "owner-timeout must be a duration such as 30m or 2h, off, or default,"
            f" not {visible(text)[:40]!r}."
        )
    return seconds


def _owner_timeout_shown(value: float | None) -> str:
    if value is None:
        return f"default ({budgets.span(DEFAULT_OWNER_TIMEOUT)})"
    return budgets.span(value) if value else "off"


def _budget_seconds(text: str) -> float | None:
    """The Stop hook's seconds for checks, or `default` (null: 120)."""
    if text.strip().lower() == "default":
        return None
    try:
        value = float(text.strip().rstrip("s"))
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or not 0 <= value <= limits.MAX_STOP_VERIFY_BUDGET:
        raise RalphstateError(
            f"verify-budget must be seconds from 0 to {limits.MAX_STOP_VERIFY_BUDGET:g}, or"
            f" default, not {visible(text)[:40]!r}."
        )
    return value


def _jobs(text: str) -> int | None:
    """How many checks run at once, or `default` (null: the processors, at least 16)."""
    if text.strip().lower() == "default":
        return None
    return _whole("verify-jobs", text, limits.MAX_CHECK_JOBS, ", or default")


def _reviewer(text: str) -> str | None:
    """The reviewer's command; `default` (or nothing) for Claude Code with no tools."""
    if not text.strip() or text.strip() == "default":
        return None
    if len(text) > MAX_REVIEWER_CHARS:
        raise RalphstateError(f"a reviewer command has at most {MAX_REVIEWER_CHARS} characters.")
    return text


MAX_REVIEWER_CHARS = 2_000
# The settings only the person may change (loop/person.py): who grades the rubrics.
PERSON_ONLY = ("reviewer",)


def _shown(show: Callable[[Any], str]) -> Callable[[Any], str]:
    return lambda value: "none" if value is None else show(value)


# How `config` reads and shows each field it sets, in the order it lists them (its --help
# says what each is). The name `config` sets a field by is its row's (core/schema.py,
# `CONFIG_KEYS`); tests/core/test_schema.py holds the two together.
_HOW: dict[str, tuple[Callable[[str], Any], Callable[[Any], str]]] = {
    "maxIterations": (_count("max-iterations"), str),
    "stallLimit": (_count("stall-limit"), str),
    "completionMarker": (_marker, visible),
    "continueMessage": (_message, lambda value: "(none)" if value is None else visible(value)),
    "spec": (_spec, visible_lines),
    "verifyOnStop": (
        _default_or_bool,
        lambda value: "default (on)" if value is None else "true" if value else "false",
    ),
    "cleanVerify": (
        _on_off,
        lambda value: "default (on)" if value is None else "on" if value else "off",
    ),
    "verifyBudget": (
        _budget_seconds,
        lambda value: (
            f"default ({limits.STOP_VERIFY_BUDGET:g}s)" if value is None else f"{value:g}s"
        ),
    ),
    "verifyJobs": (
        _jobs,
        lambda value: f"default ({checkrun.default_jobs()} here)" if value is None else str(value),
    ),
    # The loop's budgets (a run's own are its options: docs/how-to/overnight.md, "Budgets").
    "maxCost": (_dollars, _shown(lambda value: f"${value:g}")),
    "maxTokens": (_tokens, _shown(str)),
    "maxDuration": (_duration, _shown(budgets.span)),
    # When a session that starts here may take the loop from an owner that went quiet.
    "ownerTimeout": (_owner_timeout, _owner_timeout_shown),
    # Who grades the rubrics (core/grading.py): a command, or the default.
    "reviewer": (
        _reviewer,
        lambda value: (
            f"default ({visible(grading.DEFAULT_REVIEWER)})" if value is None else visible(value)
        ),
    ),
}
# The names `config` takes, in the order it lists them.
SETTINGS: dict[str, Setting] = {
    schema.CONFIG_KEYS[field]: Setting(field, parse, show) for field, (parse, show) in _HOW.items()
}


def setting(key: str) -> Setting:
    try:
        return SETTINGS[key]
    except KeyError:
        raise RalphstateError(
            f"no setting {visible(key)[:40]!r}; the settings are: {', '.join(SETTINGS)}."
        ) from None


def get(state: st.State, key: str) -> str:
    found = setting(key)
    return found.show(cast(st.Raw, state)[found.field])


def summary(state: st.State, key: str) -> str:
    """The value on one line, for the list of every setting (a long spec: its start)."""
    found = setting(key)
    value = cast(st.Raw, state)[found.field]
    if not isinstance(value, str):
        return found.show(value)
    first = value.splitlines()[0] if value else ""
    return found.show(first[:80]) + ("…" if len(first) > 80 or first != value else "")


def _kept(value: object) -> object:
    return value[:HISTORY_VALUE_CHARS] if isinstance(value, str) else value


def change(store: Store, key: str, text: str) -> tuple[str, bool]:
    """Set one setting from its text: (the value as shown, whether it changed)."""
    found = setting(key)
    value = found.parse(text)
    if key in PERSON_ONLY:
        from ralphstate.loop.person import require_person

        require_person(store.paths, f"`ralphstate config {key}`")

    def fn(state: st.State, events: list[Event]) -> bool:
        raw = cast(st.Raw, state)
        if raw[found.field] == value:
            return False
        old = raw[found.field]
        raw[found.field] = value
        events.append(
            {"event": "config", "key": found.field, "value": _kept(value), "from": _kept(old)}
        )
        return True

    changed = store.update(fn)
    return found.show(value), changed


# `config guard ACTION [PATH]...`: what each action does to the guarded files.
GUARD_ACTIONS = ("add", "remove", "off", "on")


def guards_shown(guards: list[str] | None) -> str:
    """The guards on one line, as `config` lists them."""
    if guards is None:
        return "off"
    return ", ".join(visible(g) for g in guards) if guards else "(none)"


def change_guards(store: Store, action: str, paths: list[str]) -> tuple[list[str] | None, bool]:
    """`config guard add PATH...`, `remove PATH...`, `off` or `on` (the default set, when
    the loop guards nothing): the guards after it, and whether they changed. Each change
    is a `guard_added` or `guard_removed` line in the history."""
    from ralphstate.storage.repo import testfiles

    if action not in GUARD_ACTIONS:
        raise RalphstateError(
            f"config guard takes {', '.join(GUARD_ACTIONS)}, not {visible(action)[:40]!r}."
        )
    if (action in ("add", "remove")) != bool(paths):
        need = "one PATH or more" if action in ("add", "remove") else "no PATH"
        raise RalphstateError(f"config guard {action} takes {need}.")
    try:
        given = [testfiles.checked(path) for path in paths]
    except testfiles.BadGuard as exc:
        raise RalphstateError(f"{exc}.") from None
    refused = testfiles.refusal(store.paths.root, given) if action == "add" else None
    if refused:
        raise RalphstateError(f"{refused.rstrip('.')}.")
    defaults: list[str] = []
    if action == "on":
        state = store.load()
        defaults = testfiles.default_guards(store.paths.root, dict(state["checks"]))

    def fn(state: st.State, events: list[Event]) -> tuple[list[str] | None, bool]:
        before = state["guards"]
        now = _guards_after(before, action, given, defaults)
        if now == before:
            return now, False
        state["guards"] = now
        gone = [g for g in before or [] if g not in (now or [])]
        new = [g for g in now or [] if g not in (before or [])]
        if gone or now is None:
            events.append({"event": "guard_removed", "paths": gone, "off": now is None})
        if new or before is None:
            events.append({"event": "guard_added", "paths": new, "on": before is None})
        return now, True

    return store.update(fn)


def _guards_after(
    guards: list[str] | None, action: str, given: list[str], defaults: list[str]
) -> list[str] | None:
    if action == "off":
        return None
    if action == "on":
        return defaults if guards is None else guards
    if action == "add":
        return list(dict.fromkeys([*(guards or []), *given]))
    missing = [g for g in given if g not in (guards or [])]
    if missing:
        raise RalphstateError(
            f"{visible(missing[0])!r} is not guarded; the guards are: {guards_shown(guards)}."
        )
    return [g for g in guards or [] if g not in given]
