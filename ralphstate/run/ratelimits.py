"""Recognising an agent that stopped on a usage limit, a rate limit, an overloaded API
or a billing problem, and when it may try again.

The table below is what the clients print (recorded samples in
tests/fixtures/outputs/, docs/how-to/overnight.md, "Usage and rate limits"): each agent's own words
(`Agent.limit_patterns`), then the API's, which any of them may print. Only an iteration that
failed (non-zero exit, or the agent's own report says error) is looked at, so an agent
that merely talks about rate limits in its work is never taken for one.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ralphstate.agents import table
from ralphstate.core import limits
from ralphstate.run.usage import Usage

# usage_limit: the plan's quota is used up until a reset; rate_limit: too many requests
# for now; overloaded: the API is busy; billing: no credit, a person must act.
LimitKind = Literal["usage_limit", "rate_limit", "overloaded", "billing"]
LIMIT_KINDS: tuple[LimitKind, ...] = ("usage_limit", "rate_limit", "overloaded", "billing")
# Each kind in a sentence: "Iteration 3 stopped on an overloaded API: ...".
PHRASES: dict[LimitKind, str] = {
    "usage_limit": "a usage limit",
    "rate_limit": "a rate limit",
    "overloaded": "an overloaded API",
    "billing": "a billing problem",
}

# Waiting without a reset time: the first wait, doubled each time, at most this long.
BACKOFF_FIRST = 60.0
BACKOFF_MOST = 30 * 60.0
# A reset further away than this is not waited for: the loop pauses instead.
MOST_WAIT = 24 * 3600.0
# After the reset, a little more, so the agent's clock and ours need not agree.
MARGIN = 30.0


@dataclass(frozen=True)
class Limit:
    kind: LimitKind
    # The agent's words, one line, as found.
    message: str
    # When the agent said it may try again (None: it did not say).
    resets_at: dt.datetime | None = None


@dataclass(frozen=True)
class _Row:
    agent: str
    kind: LimitKind
    pattern: re.Pattern[str]


def _rx(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


# The kinds by name, for the agents' rows (a name that is no kind fails at import).
_KINDS: dict[str, LimitKind] = {kind: kind for kind in LIMIT_KINDS}
# What each client prints; the first row that matches wins, so the specific rows
# (a usage limit with its reset) come before the general ones.
TABLE: tuple[_Row, ...] = (
    *(
        _Row(agent.name, _KINDS[kind], _rx(pattern))
        for agent in table.every().values()
        for kind, pattern in agent.limit_patterns
    ),
    # Any of them: the API's own error kinds, as Claude Code -p JSON reports them
    # (`api_error_type`) or the text says them.
    _Row("any", "rate_limit", _rx(r"rate_limit_error|\brate limit|\b429\b|too many requests")),
    _Row("any", "overloaded", _rx(r"overloaded_error|\boverloaded\b|\b529\b|\b503\b")),
    _Row("any", "rate_limit", _rx(r"resource_exhausted|\bquota\b")),
    _Row("any", "billing", _rx(r"billing_error|insufficient_quota|payment required")),
)


def recognise(
    text: str,
    exit_code: int,
    report: Usage | None,
    now: dt.datetime,
) -> Limit | None:
    """The limit an iteration stopped on, from the end of its output, or None."""
    failed = exit_code != 0 or (report is not None and report.error is not None)
    if not failed:
        return None
    # Each place to look: the words matched (the report's error with its kind before it,
    # such as `rate_limit_error` or `429`), and how many of them are that kind.
    candidates: list[tuple[str, int]] = []
    if report is not None and report.error is not None:
        prefix = f"{report.error_kind or ''} "
        candidates.append((prefix + report.error, len(prefix)))
    candidates.append((text[-8192:], 0))
    for candidate, skip in candidates:
        for row in TABLE:
            found = row.pattern.search(candidate)
            if found is None:
                continue
            words = candidate[skip:]  # the agent's words, without the kind
            at = max(found.start() - skip, 0)
            return Limit(row.kind, _line_of(words, at), reset_time(candidate, now))
    return None


def _line_of(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    line = text[start : end if end >= 0 else len(text)].strip()
    return line[:300]


# -- when it resets ------------------------------------------------------------------------

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_EPOCH = _rx(r"limit reached\|(\d{9,11})")
_DATE = _rx(
    r"(?:try again|resets?)(?: at| on)?\s+([a-z]{3,9})\.? (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}),?"
    r"\s+(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)?"
)
_CLOCK = _rx(r"resets?(?: at)?\s+(\d{1,2})(?::(\d{2}))?\s*([ap]m)?\s*(?:\(([\w/+-]+)\))?")
_SPAN = _rx(
    r"(?:try again in|reset after|resets in|retry after|retry in)\s+"
    r"((?:\d+(?:\.\d+)?\s*(?:days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])[\s,and]*)+)"
)
_PART = _rx(r"(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])")
_UNIT = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def reset_time(text: str, now: dt.datetime) -> dt.datetime | None:
    """When the message says the limit resets, as an aware UTC time, or None; at most
    `limits.MAX_RESET_SECONDS` from `now` (a reset said to lie further away is read as
    that far)."""
    latest = now + dt.timedelta(seconds=limits.MAX_RESET_SECONDS)
    for reader in _READERS:
        found = reader(text, now)
        if found is not None:
            return min(found, latest)
    return None


def _epoch(text: str, now: dt.datetime) -> dt.datetime | None:
    found = _EPOCH.search(text)
    if found is None:
        return None
    # at most 11 digits: year 5138 at the latest, a date Python can hold
    return dt.datetime.fromtimestamp(int(found.group(1)), dt.timezone.utc)


def _local(now: dt.datetime, tz_name: str | None) -> dt.tzinfo:
    """The zone a message's wall-clock time is in: the named one, else this machine's."""
    if tz_name:
        try:
            from zoneinfo import ZoneInfo

            return ZoneInfo(tz_name)
        except (ValueError, KeyError, OSError, ImportError):
            pass
    zone = now.astimezone().tzinfo
    return zone if zone is not None else dt.timezone.utc


def _hour(hour: int, meridiem: str | None) -> int:
    if meridiem:
        pm = meridiem.lower().startswith("p")
        hour = hour % 12 + (12 if pm else 0)
    return hour


def _date(text: str, now: dt.datetime) -> dt.datetime | None:
    found = _DATE.search(text)
    if found is None:
        return None
    month = _MONTHS.get(found.group(1).lower())
    if month is None:
        return None
    try:
        local = dt.datetime(
            int(found.group(3)),
            month,
            int(found.group(2)),
            _hour(int(found.group(4)), found.group(6)),
            int(found.group(5)),
            tzinfo=_local(now, None),
        ).astimezone(dt.timezone.utc)
    except (ValueError, OverflowError):  # no such date, or past the last one (9999)
        return None
    return local


def _clock(text: str, now: dt.datetime) -> dt.datetime | None:
    found = _CLOCK.search(text)
    if found is None or (found.group(2) is None and found.group(3) is None):
        return None  # a bare number is not a time of day
    hour = _hour(int(found.group(1)), found.group(3))
    minute = int(found.group(2) or 0)
    if hour > 23 or minute > 59:
        return None
    zone = _local(now, found.group(4))
    here = now.astimezone(zone)
    then = here.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if then <= here:
        then += dt.timedelta(days=1)
    return then.astimezone(dt.timezone.utc)


def _span(text: str, now: dt.datetime) -> dt.datetime | None:
    found = _SPAN.search(text)
    if found is None:
        return None
    seconds = 0.0
    for number, unit in _PART.findall(found.group(1)):
        seconds += float(number) * _UNIT[unit[0].lower()]
    # "try again in 3000000 days" is past any date: bounded before it becomes one
    seconds = min(seconds, limits.MAX_RESET_SECONDS)
    return now + dt.timedelta(seconds=seconds) if seconds else None


_READERS: tuple[Callable[[str, dt.datetime], dt.datetime | None], ...] = (
    _epoch,
    _date,
    _span,
    _clock,
)


def wait_for(limit: Limit, attempt: int, now: dt.datetime) -> float | None:
    """Seconds to wait before trying again (attempt 1, 2, ... in a row), or None when
    waiting cannot help: a billing problem, or a reset further away than MOST_WAIT."""
    if limit.kind == "billing":
        return None
    if limit.resets_at is not None:
        seconds = (limit.resets_at - now).total_seconds() + MARGIN
        if seconds > MOST_WAIT:
            return None
        return max(seconds, MARGIN)
    return float(min(BACKOFF_FIRST * 2.0 ** max(0, attempt - 1), BACKOFF_MOST))
