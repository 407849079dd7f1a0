"""The table of usage limits, rate limits and overloads: the real clients' recorded
outputs, the other shapes they print, and when each may try again."""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest

from ralphstate.core import limits
from ralphstate.run import ratelimits, usage
from tests.helpers import FIXTURES

OUTPUTS = FIXTURES / "outputs"
NOW = dt.datetime(2026, 12, 31, 22, 0, tzinfo=dt.timezone.utc)


def recognise(text: str, exit_code: int = 1) -> ratelimits.Limit | None:
    return ratelimits.recognise(text, exit_code, usage.parse(text), NOW)


# Every recorded failure (tests/fixtures/outputs/README.md): the exit code the client
# ended with, the kind, and the reset time when the output gives one.
RECORDED = [
    ("claude_json_429.json", 1, "rate_limit", None),
    ("claude_stream_429.jsonl", 1, "rate_limit", None),
    ("claude_json_529.json", 1, "overloaded", None),
    ("claude_json_credit.json", 1, "billing", None),
    (
        "codex_exec_json_usage_limit.jsonl",
        1,
        "usage_limit",
        # printed in the recording machine's zone (UTC), read in this machine's
        dt.datetime(2027, 1, 1, 10, 0).astimezone(dt.timezone.utc),
    ),
    ("codex_exec_json_429.jsonl", 1, "rate_limit", None),
    ("codex_exec_json_insufficient_quota.jsonl", 1, "billing", None),
    ("codex_exec_json_503.jsonl", 1, "overloaded", None),
    ("codex_exec_json_overloaded.jsonl", 1, "overloaded", None),
    ("gemini_json_quota.json", 173, "rate_limit", NOW + dt.timedelta(seconds=39.033478657)),
    ("gemini_json_daily_quota.json", 173, "usage_limit", None),
    ("gemini_json_capacity.json", 173, "usage_limit", NOW + dt.timedelta(seconds=8073)),
    ("gemini_json_503.json", 247, "overloaded", None),
]


@pytest.mark.parametrize(("name", "exit_code", "kind", "resets_at"), RECORDED)
def test_the_recorded_failures_are_recognised(
    name: str, exit_code: int, kind: str, resets_at: dt.datetime | None
) -> None:
    found = recognise((OUTPUTS / name).read_text(encoding="utf-8"), exit_code)
    assert found is not None, name
    assert (found.kind, found.resets_at) == (kind, resets_at)
    assert found.message and "\n" not in found.message


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "claude_json_429.json",
            (
                "API Error: Request rejected (429) · This request would exceed your account's"
                " rate limit. Please try again later."
            ),
        ),
        ("codex_exec_json_429.jsonl", "exceeded retry limit, last status: 429 Too Many Requests"),
        ("gemini_json_503.json", "The model is overloaded. Please try again later."),
        ("gemini_json_daily_quota.json", "You have exhausted your daily quota on this model."),
    ],
)
def test_the_message_is_the_agents_words_alone(name: str, message: str) -> None:
    """Not prefixed with the kind of error the report names (`rate_limit_error`, `429`,
    `turn.failed`): the message goes to history, the next prompt and the notifier."""
    text = (OUTPUTS / name).read_text(encoding="utf-8")
    found = recognise(text, 173 if name.startswith("gemini") else 1)
    assert found is not None and found.message == message


@pytest.mark.parametrize(
    "name",
    [
        "claude_json_ok.json",
        "claude_stream_ok.jsonl",
        "codex_exec_json_ok.jsonl",
        "gemini_json_ok.json",
    ],
)
def test_the_recorded_answers_are_no_limit(name: str) -> None:
    assert recognise((OUTPUTS / name).read_text(encoding="utf-8"), 0) is None


def test_codex_says_when_to_try_again_in_local_time() -> None:
    found = recognise((OUTPUTS / "codex_exec_json_usage_limit.jsonl").read_text("utf-8"))
    assert found is not None
    assert "hit your usage limit" in found.message


def test_gemini_says_how_long_until_the_quota_resets() -> None:
    found = recognise((OUTPUTS / "gemini_json_capacity.json").read_text("utf-8"))
    assert found is not None
    assert "quota will reset after 2h14m33s" in found.message


@pytest.mark.parametrize(
    ("text", "resets_at"),
    [
        ("Claude AI usage limit reached|1798797600", dt.datetime(2027, 1, 1, 10, 0)),
        (
            "You've hit your limit · resets 3am (UTC)",
            dt.datetime(2027, 1, 1, 3, 0),
        ),
        (
            "5-hour limit reached ∙ resets 11:30pm (UTC)",
            dt.datetime(2026, 12, 31, 23, 30),
        ),
    ],
)
def test_claude_subscription_limits_and_their_reset(text: str, resets_at: dt.datetime) -> None:
    found = recognise(text + "\n")
    assert found is not None and found.kind == "usage_limit"
    assert found.resets_at == resets_at.replace(tzinfo=dt.timezone.utc)


def test_a_successful_iteration_is_never_a_limit() -> None:
    text = "I fixed the rate limit handling (429 Too Many Requests) in client.py\n"
    assert recognise(text, exit_code=0) is None
    assert recognise(text, exit_code=1) is not None
    ok = (OUTPUTS / "claude_json_ok.json").read_text("utf-8")
    assert recognise(ok, exit_code=0) is None


def test_a_crash_without_limit_words_is_not_a_limit() -> None:
    assert recognise("Traceback (most recent call last):\nValueError: boom\n") is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("try again in 2 hours 5 minutes", 7500),
        ("Rate limited. Retry after 45s", 45),
        ("resets in 1d 2h", 93600),
    ],
)
def test_spans_of_time(text: str, seconds: int) -> None:
    assert ratelimits.reset_time(text, NOW) == NOW + dt.timedelta(seconds=seconds)


def test_a_bare_number_is_not_a_time_of_day() -> None:
    assert ratelimits.reset_time("resets 3 things", NOW) is None


def test_how_long_to_wait() -> None:
    soon = ratelimits.Limit("usage_limit", "x", NOW + dt.timedelta(hours=1))
    assert ratelimits.wait_for(soon, 1, NOW) == 3600 + ratelimits.MARGIN
    past = ratelimits.Limit("usage_limit", "x", NOW - dt.timedelta(hours=1))
    assert ratelimits.wait_for(past, 1, NOW) == ratelimits.MARGIN
    far = ratelimits.Limit("usage_limit", "x", NOW + dt.timedelta(days=3))
    assert ratelimits.wait_for(far, 1, NOW) is None
    assert ratelimits.wait_for(ratelimits.Limit("billing", "x"), 1, NOW) is None
    busy = ratelimits.Limit("overloaded", "x")
    waits = [ratelimits.wait_for(busy, n, NOW) for n in range(1, 10)]
    assert waits[:3] == [60, 120, 240]
    assert max(w for w in waits if w is not None) == ratelimits.BACKOFF_MOST


@pytest.mark.parametrize(
    "text",
    [
        "try again in 3000000 days",
        "retry after 99999999999999999999 hours",
        f"retry in {'9' * 400} seconds",  # a float of that is infinite
        "Claude AI usage limit reached|99999999999",
    ],
)
def test_a_reset_past_its_bound_is_read_as_that_far_and_not_waited_for(text: str) -> None:
    latest = NOW + dt.timedelta(seconds=limits.MAX_RESET_SECONDS)
    assert ratelimits.reset_time(text, NOW) == latest
    assert ratelimits.wait_for(ratelimits.Limit("usage_limit", text, latest), 1, NOW) is None


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="time.tzset is POSIX's")
def test_a_date_past_the_last_one_python_holds_is_no_reset() -> None:
    before = os.environ.get("TZ")
    os.environ["TZ"] = "America/Los_Angeles"  # 9999-12-31 23:59 here is year 10000 in UTC
    time.tzset()
    try:
        assert ratelimits.reset_time("try again at Dec 31, 9999 11:59 pm", NOW) is None
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()
