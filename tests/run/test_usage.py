"""Reading an agent's own report of tokens, cost and errors from its recorded output."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphstate.core import limits
from ralphstate.run import usage
from tests.helpers import FIXTURES

OUTPUTS = FIXTURES / "outputs"


def sample(name: str) -> str:
    return (OUTPUTS / name).read_text(encoding="utf-8")


def test_claude_json_output_gives_tokens_and_cost() -> None:
    found = usage.parse("some stderr line\n" + sample("claude_json_ok.json") + "\n")
    assert found == usage.Usage("claude", tokens=240, cost=0.0016)


def test_claude_stream_json_output_gives_the_final_result() -> None:
    found = usage.parse(sample("claude_stream_ok.jsonl"))
    assert found == usage.Usage("claude", tokens=240, cost=0.0016)


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("claude_json_429.json", "rate_limit_error", "rate limit"),
        ("claude_stream_429.jsonl", "rate_limit_error", "rate limit"),
        ("claude_json_529.json", "overloaded_error", "Overloaded"),
        ("claude_json_credit.json", "invalid_request_error", "Credit balance"),
    ],
)
def test_claude_errors_carry_their_kind_and_text(name: str, kind: str, words: str) -> None:
    found = usage.parse(sample(name))
    assert found is not None
    assert (found.agent, found.tokens, found.cost, found.error_kind) == ("claude", 0, 0.0, kind)
    assert found.error is not None and words in found.error


def test_codex_exec_json_gives_tokens_without_cost() -> None:
    assert usage.parse(sample("codex_exec_json_ok.jsonl")) == usage.Usage("codex", tokens=15)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("codex_exec_json_usage_limit.jsonl", "hit your usage limit"),
        ("codex_exec_json_429.jsonl", "last status: 429 Too Many Requests"),
        ("codex_exec_json_insufficient_quota.jsonl", "Quota exceeded."),
        ("codex_exec_json_503.jsonl", "503 Service Unavailable"),
        ("codex_exec_json_overloaded.jsonl", "Selected model is at capacity"),
    ],
)
def test_codex_turn_failed_gives_the_message(name: str, words: str) -> None:
    found = usage.parse(sample(name))
    assert found is not None
    assert (found.agent, found.tokens, found.cost, found.error_kind) == (
        "codex",
        0,
        None,
        "turn.failed",
    )
    assert found.error is not None and words in found.error


def test_gemini_json_gives_the_models_total() -> None:
    # Two requests of 15 tokens (the routing side request and the answer) under one model;
    # the per-role figures below it are not counted again.
    text = sample("gemini_json_ok.json") + "stderr after\n"
    assert usage.parse(text) == usage.Usage("gemini", tokens=30)


@pytest.mark.parametrize(
    ("name", "code", "words"),
    [
        ("gemini_json_quota.json", "429", "Please retry in 39.033478657s."),
        ("gemini_json_daily_quota.json", "429", "exhausted your daily quota"),
        ("gemini_json_capacity.json", "429", "quota will reset after 2h14m33s"),
        ("gemini_json_503.json", "503", "The model is overloaded."),
    ],
)
def test_gemini_error_object(name: str, code: str, words: str) -> None:
    # On stderr, after the client's stack trace.
    found = usage.parse(sample(name))
    assert found is not None and (found.agent, found.tokens, found.error_kind) == (
        "gemini",
        0,
        code,
    )
    assert found.error is not None and words in found.error


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain text only\n",
        "{not json\n",
        '{"type": "result"}\n',  # no usage
        '{"type": "result", "usage": "x"}\n',
        "[1, 2]\n",
        '{"stats": 3}\n',
    ],
)
def test_output_without_a_report_gives_nothing(text: str) -> None:
    assert usage.parse(text) is None


def test_nonsense_figures_count_as_zero() -> None:
    text = (
        '{"type": "result", "total_cost_usd": -1, "usage": {"input_tokens": true,'
        ' "output_tokens": 1e400, "cache_read_input_tokens": "9"}}\n'
    )
    assert usage.parse(text) == usage.Usage("claude", tokens=0, cost=None)


def test_only_the_end_of_a_large_log_is_read(tmp_path: Path) -> None:
    log = tmp_path / "0001.log"
    early = sample("claude_json_ok.json").replace("0.0016", "9.5")
    filler = b"x" * (limits.RUN_USAGE_TAIL_BYTES + 10) + b"\n"
    log.write_bytes(early.encode() + b"\n" + filler)
    assert usage.read(log) is None  # the report is beyond the tail read
    log.write_bytes(filler + sample("claude_json_ok.json").encode())
    assert usage.read(log) == usage.Usage("claude", tokens=240, cost=0.0016)
    assert usage.read(tmp_path / "missing.log") is None
