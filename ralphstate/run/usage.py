"""What one agent process reported about itself: tokens, cost, and the error it ended
on, read from the end of its output in the agent's own machine-readable format.

Each agent prints this only with its JSON output switched on (docs/reference/run.md, "What each
iteration cost"): Claude Code's `-p --output-format json`, Codex's `exec --json`,
Gemini CLI's `--output-format json`. The JSON objects at the end of the output are
found here; each agent's module reads its own (`Agent.run_report`), asked in the
table's order.

Only the last `limits.RUN_USAGE_TAIL_BYTES` of the output are read; an agent that
reports nothing gets None (its iteration has a duration only).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ralphstate.agents import table
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
    # The figures it reported past their bounds, left out (`believed`), as sentences.
    doubted: tuple[str, ...] = ()


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


def parse(text: str) -> Usage | None:
    """The figures an agent's output ends with, or None when it reports none."""
    found = objects(text)
    for agent in table.every().values():
        report = agent.run_report(found) if agent.run_report is not None else None
        if report is not None:
            return believed(Usage(agent.name, *report))
    return None


def believed(found: Usage) -> Usage:
    """`found` without the figures no iteration can have spent (past
    `limits.MAX_ITERATION_TOKENS` or `limits.MAX_ITERATION_COST`, or not a finite
    number from 0): each left out, as if not reported, and said in `doubted`."""
    tokens = found.tokens
    cost = found.cost
    doubted = list(found.doubted)
    if not 0 <= tokens <= limits.MAX_ITERATION_TOKENS:
        most = f"{limits.MAX_ITERATION_TOKENS:,} tokens"
        doubted.append(f"the agent reported more than {most} for one iteration")
        tokens = 0
    if cost is not None and not 0 <= cost <= limits.MAX_ITERATION_COST:  # NaN too
        most = f"${limits.MAX_ITERATION_COST:,.0f}"
        doubted.append(f"the agent reported a cost of more than {most} for one iteration")
        cost = None
    if not doubted:
        return found
    said = tuple(f"{d}, which is not believed: it is not counted" for d in doubted)
    return replace(found, tokens=tokens, cost=cost, doubted=said)


def read(path: Path) -> Usage | None:
    """The figures at the end of an iteration's log."""
    return parse(tail(path))
