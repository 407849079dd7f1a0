"""What one agent process reported about itself: tokens, cost, and the error it ended
on, read from the end of its output in the agent's own machine-readable format.

Each agent prints this only with its JSON output switched on (docs/run.md, "What each
iteration cost"):

- Claude Code `-p --output-format json` (or `stream-json --verbose`): a `result`
  object with `total_cost_usd`, `usage` (input, cache and output tokens), `is_error`,
  `api_error_status`, `api_error_type` and `result` (the error text);
- Codex `exec --json`: `turn.completed` events with `usage`, and `turn.failed` or
  `error` events with the message;
- Gemini CLI `--output-format json`: one (indented) object with `stats.models.*.tokens`
  and, on a failure, `error`.

Only the last `limits.RUN_USAGE_TAIL_BYTES` of the output are read; an agent that
reports nothing gets None (its iteration has a duration only).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphstate.core import limits

# How many places in the tail are tried as the start of a JSON object.
_MAX_CANDIDATES = 400


@dataclass(frozen=True)
class Usage:
    """Figures one agent process reported; `cost` in US dollars when it says."""

    agent: str
    tokens: int
    cost: float | None = None
    # The error the agent's report ended on, and its kind (`rate_limit_error`, an HTTP
    # status, ...), when it says.
    error: str | None = None
    error_kind: str | None = None


def tail(path: Path, size: int = limits.RUN_USAGE_TAIL_BYTES) -> str:
    """The last `size` bytes of a file as text ("" when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            end = handle.tell()
            handle.seek(max(0, end - size))
            data = handle.read(size)
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


def objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects that start at the beginning of a line, last first.

    A line-per-object stream and one indented object (whose `{` opens a line) are both
    found; text around them (stderr merged in, progress lines) is skipped.
    """
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    end = len(text)
    tried = 0
    while end > 0 and tried < _MAX_CANDIDATES:
        start = text.rfind("\n{", 0, end)
        at = start + 1 if start >= 0 else (0 if text.startswith("{") else -1)
        if at < 0:
            break
        tried += 1
        try:
            value, _ = decoder.raw_decode(text, at)
        except ValueError:
            value = None
        if isinstance(value, dict):
            found.append(value)
        end = max(start, 0)
    return found


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def _money(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _claude(obj: dict[str, Any]) -> Usage | None:
    if obj.get("type") != "result" or not isinstance(obj.get("usage"), dict):
        return None
    usage = obj["usage"]
    tokens = sum(
        _count(usage.get(key))
        for key in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
    )
    error = kind = None
    if obj.get("is_error") is True:
        result = obj.get("result")
        error = result if isinstance(result, str) else "error"
        found = obj.get("api_error_type") or obj.get("api_error_status") or obj.get("subtype")
        kind = str(found) if found is not None else None
    return Usage("claude", tokens, _money(obj.get("total_cost_usd")), error, kind)


def _codex(found: list[dict[str, Any]]) -> Usage | None:
    tokens, seen, error = 0, False, None
    for obj in found:
        kind = obj.get("type")
        if kind == "turn.completed" and isinstance(obj.get("usage"), dict):
            usage = obj["usage"]
            tokens += _count(usage.get("input_tokens")) + _count(usage.get("output_tokens"))
            seen = True
        elif kind == "turn.failed" and isinstance(obj.get("error"), dict):
            message = obj["error"].get("message")
            if error is None and isinstance(message, str):
                error = message
            seen = True
        elif kind == "error" and isinstance(obj.get("message"), str):
            error = error or obj["message"]
            seen = True
    if not seen:
        return None
    return Usage("codex", tokens, None, error, "turn.failed" if error else None)


def _gemini(obj: dict[str, Any]) -> Usage | None:
    stats = obj.get("stats")
    failure = obj.get("error")
    if not isinstance(stats, dict) and not isinstance(failure, dict):
        return None
    tokens = 0
    models = stats.get("models") if isinstance(stats, dict) else None
    if isinstance(models, dict):
        for model in models.values():
            counted = model.get("tokens") if isinstance(model, dict) else None
            if isinstance(counted, dict):
                tokens += _count(counted.get("total"))
    error = kind = None
    if isinstance(failure, dict):
        message = failure.get("message")
        error = message if isinstance(message, str) else "error"
        found = failure.get("code") or failure.get("type")
        kind = str(found) if found is not None else None
    return Usage("gemini", tokens, None, error, kind)


def parse(text: str) -> Usage | None:
    """The figures an agent's output ends with, or None when it reports none."""
    found = objects(text)
    for obj in found:  # last first: the final report wins
        usage = _claude(obj)
        if usage is not None:
            return usage
    codex = _codex(found)
    if codex is not None:
        return codex
    for obj in found:
        usage = _gemini(obj)
        if usage is not None:
            return usage
    return None


def read(path: Path) -> Usage | None:
    """The figures at the end of an iteration's log."""
    return parse(tail(path))
