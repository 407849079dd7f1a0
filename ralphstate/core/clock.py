"""The one place ralphstate reads the clock, so tests can freeze it."""

from __future__ import annotations

import datetime as dt
import time


def now() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    return dt.datetime.now(dt.timezone.utc)


def sleep(seconds: float) -> None:
    """Wait; the seam through which tests pass time without sleeping."""
    time.sleep(max(0.0, seconds))


def now_iso() -> str:
    """The current time as ISO-8601 UTC with a trailing Z, to the second."""
    return now().strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: object) -> dt.datetime | None:
    """Parse a timestamp written by `now_iso` (or by hand); None when it is not one."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value


def age(text: object) -> str:
    """How long ago a timestamp was, as a short human string ("3m", "2h", "5d")."""
    then = parse_iso(text)
    if then is None:
        return "?"
    seconds = max(0, int((now() - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
