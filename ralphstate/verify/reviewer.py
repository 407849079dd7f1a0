"""Running the reviewer of graded criteria: one command, in a fresh context, bounded
(core/grading.py says what it is given and how its answer is read).

The command is the person's (`ralphstate config reviewer`) or the default, Claude Code in
print mode with no tools. It runs through the shell, as a check does, in an empty
scratch directory (never the project: it reads only the prompt on its stdin), with the
person's environment less the variables of the agent session it judges, within
`grading.REVIEWER_TIMEOUT` seconds, its output kept up to `grading.MAX_OUTPUT_BYTES`.
When it reports what it spent (Claude Code's `--output-format json`: `total_cost_usd`,
`usage`, `modelUsage`) that is its cost; else its time is.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any

import orjson

from ralphstate.core import grading
from ralphstate.core.actor import AGENT_PREFIXES
from ralphstate.storage.system import children

# Claude Code's own variables the reviewer needs to run as a client of its own.
_KEPT = ("CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")


def environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the reviewer gets: the person's, without the variables that say
    an agent session or a run is the caller (it is a fresh context, not the author's)."""
    return {
        k: v
        for k, v in environ.items()
        if k in _KEPT or not k.upper().startswith((*AGENT_PREFIXES, "RALPHSTATE"))
    }


def _argv(command: str) -> list[str]:
    if sys.platform == "win32":  # pragma: no cover - cmd.exe reads the line
        return [os.environ.get("COMSPEC", "cmd.exe"), "/d", "/s", "/c", command]
    return ["/bin/sh", "-c", command]


def run(
    command: str,
    criterion: str,
    prompt: str,
    *,
    timeout: float = grading.REVIEWER_TIMEOUT,
    environ: Mapping[str, str] | None = None,
) -> grading.Verdict:
    """Ask the reviewer about one criterion: its verdict, never an exception (a command
    that cannot start, times out or answers in no known shape gives no verdict)."""
    env = environment(os.environ if environ is None else environ)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ralphstate-review-") as room:
        try:
            done = children.run(
                _argv(command),
                cwd=room,
                env=env,
                input=prompt.encode("utf-8"),
                timeout=timeout,
                limit=grading.MAX_OUTPUT_BYTES,
            )
        except OSError as exc:
            seconds = time.monotonic() - started
            why = f"the reviewer could not be started ({exc})"
            return grading.Verdict(criterion, grading.NONE, why, command, seconds=seconds)
    seconds = time.monotonic() - started
    if done.code is None:
        why = f"the reviewer did not answer within {timeout:g} seconds"
        return grading.Verdict(criterion, grading.NONE, why, command, seconds=seconds)
    out = done.out.decode("utf-8", "replace")
    text, spent = _reported(out)
    if done.code != 0:
        said = grading.clip(done.err.decode("utf-8", "replace") or text, 300)
        why = f"the reviewer exited with code {done.code}: {said or '(nothing said)'}"
        return grading.Verdict(criterion, grading.NONE, why, command, seconds=seconds, **spent)
    result, reasons = grading.parse(text)
    return grading.Verdict(criterion, result, reasons, command, seconds=seconds, **spent)


def _reported(out: str) -> tuple[str, dict[str, Any]]:
    """The reviewer's answer, and what it says it spent: a JSON result (Claude Code's
    `--output-format json`) gives its `result`, cost, tokens and model; any other
    output is the answer itself."""
    try:
        found = orjson.loads(out)
    except orjson.JSONDecodeError:
        return out, {}
    if not isinstance(found, dict) or not isinstance(found.get("result"), str):
        return out, {}
    spent: dict[str, Any] = {}
    cost = found.get("total_cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        spent["cost"] = float(cost)
    usage = found.get("usage")
    if isinstance(usage, dict):
        keys = ("input_tokens", "output_tokens", "cache_read_input_tokens")
        tokens = sum(int(v) for k in keys if isinstance(v := usage.get(k), int) and v >= 0)
        if tokens:
            spent["tokens"] = tokens
    models = found.get("modelUsage")
    if isinstance(models, dict) and models:
        spent["model"] = grading.clip(str(next(iter(models))), 100)
    return found["result"], spent
