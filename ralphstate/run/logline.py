"""History entries as `ralphstate log` and `ralphstate watch` show them: one line an
entry that fits a terminal, in words.

The line is `AT  #ITERATION EVENT [WHO] DETAILS`. The entries a run and the checks
write (an iteration, a check, a commit, the run's start and end, an approval) say
their details in words; any other entry lists them as `key: value` (text in double
quotes, a list as its items). Either way a value
that says nothing (null, false, empty) is left out, an id of 16 hex digits or more (a
commit, a tree, a loop) is cut to its first `ID_CHARS`, and a value is cut at
`VALUE_CHARS`. Text of several lines (a check's output) follows on indented lines,
as it was printed. `log --json` keeps every entry whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ralphstate.core import limits
from ralphstate.core.actor import describe
from ralphstate.core.render import clip
from ralphstate.core.text import noun, visible

ID_CHARS = 10
VALUE_CHARS = 60
_HEX_ID = re.compile(r"\b[0-9a-f]{16,}\b")
# What the frame of the line takes, not the details.
_FRAME = ("at", "event", "iteration", "loop", "actor")

Entry = dict[str, Any]


def line(entry: Entry) -> str:
    """One history entry as a person reads it; control characters shown as `\\xNN`."""
    details = {k: v for k, v in entry.items() if k not in _FRAME}
    long = {k: v for k, v in details.items() if isinstance(v, str) and "\n" in v}
    short = {k: v for k, v in details.items() if k not in long}
    name = entry.get("event", "?")
    said = _SAY.get(str(name), _pairs)(short)
    at, it = entry.get("at", "?"), entry.get("iteration", "?")
    who = f"[{describe(entry['actor'])}] " if "actor" in entry else ""
    lines = [f"{at}  #{it!s:<3} {name!s:<16} {who}{said}".rstrip()]
    for key, value in long.items():
        lines.append(f"    {key}:")
        lines += [f"      {text}".rstrip() for text in value.strip("\n").split("\n")]
    return "\n".join(visible(text) for text in lines)


def value(found: object) -> str:
    """A value as it is shown: ids cut short, long text cut."""
    if isinstance(found, str):
        return clip(_HEX_ID.sub(lambda m: m.group()[:ID_CHARS], found), VALUE_CHARS)
    return clip(str(found), VALUE_CHARS)


def _said(found: object) -> bool:
    return found is not None and found is not False and found not in ("", [], {})


def _pairs(details: Entry) -> str:
    """`key: value` for each detail that says something, as words: text in double
    quotes, a list as its items, a flag as `true`; never Python's `key='value'`."""
    shown = []
    for key, found in details.items():
        if _said(found):
            shown.append(f"{key}: {_worded(found)}")
    return " · ".join(shown)


def _worded(found: object) -> str:
    """A detail's value as `_pairs` says it."""
    if isinstance(found, bool):
        return "true" if found else "false"
    if isinstance(found, str):
        return _quoted(found)
    if isinstance(found, list):
        return clip(", ".join(_worded(item) for item in found), VALUE_CHARS)
    return value(found)


def _quoted(found: object) -> str:
    return f'"{value(found)}"'


def _seconds(found: object) -> str:
    """A duration a history line holds; `?` past any a loop can take (a hand edit)."""
    from ralphstate.run.result import format_duration

    seconds = _figure(found, limits.MAX_USAGE_SECONDS)
    return "?" if seconds is None else format_duration(seconds)


def _figure(found: object, most: float) -> float | None:
    """A number from 0 to `most` (core/limits.py) a history line holds, else None."""
    if isinstance(found, bool) or not isinstance(found, int | float):
        return None
    return float(found) if 0 <= found <= most else None


def _rest(details: Entry, *known: str) -> list[str]:
    """The details no phrase below names, as `key: value`."""
    rest = _pairs({k: v for k, v in details.items() if k not in known})
    return [rest] if rest else []


def _check(d: Entry) -> str:
    by = f" by {value(d['by'])}" if d.get("by") else ""
    parts = [f"{_quoted(d.get('criterion'))} {value(d.get('result', '?'))}{by}"]
    ran = d.get("summary") or (f"exit code {d['exitCode']}" if "exitCode" in d else None)
    if ran is not None:
        duration = d.get("durationMs")
        took = f", {_seconds(duration / 1000)}" if isinstance(duration, int | float) else ""
        parts.append(f"{value(ran)}{took}")
    if d.get("timedOut"):
        parts.append("timed out")
    if d.get("commit"):
        parts.append(f"on {value(d['commit'])}" + (" (dirty)" if d.get("dirty") else ""))
    if d.get("clean"):
        parts.append("clean room")
    known: tuple[str, ...] = ("criterion", "result", "summary", "exitCode", "durationMs")
    known += ("timedOut", "by", "commit", "dirty", "tree", "clean", "cleanTree", "command")
    known += ("outputBytes", "strength", "weakened")  # the summary says both
    return " · ".join(parts + _rest(d, *known))


def _commit(d: Entry) -> str:
    parts = [f"{value(d.get('commit'))} {_quoted(d.get('subject'))}"]
    if isinstance(d.get("files"), int):
        parts.append(f"{d['files']} {noun(d['files'], 'file')}")
    if d.get("evidence"):
        parts.append(f"evidence: {', '.join(map(_quoted, d['evidence']))}")
    return " · ".join(parts + _rest(d, "commit", "subject", "files", "evidence"))


def _iteration(d: Entry) -> str:
    ran = f"run {d.get('run', '?')}: {value(d.get('result', '?'))}"
    parts = [f"{ran} in {_seconds(d.get('duration'))}, then {value(d.get('decision', '?'))}"]
    for done, total, what in (
        ("criteriaMet", "criteriaTotal", "criterion"),
        ("stepsDone", "stepsTotal", "step"),
    ):
        if isinstance(d.get(total), int):
            parts.append(f"{d.get(done, '?')}/{d[total]} {noun(d[total], what)}")
    tokens = d.get("tokens")
    if isinstance(tokens, int) and _figure(tokens, limits.MAX_ITERATION_TOKENS) is not None:
        parts.append(f"{tokens:,} tokens")
    cost = _figure(d.get("cost"), limits.MAX_ITERATION_COST)
    if cost is not None:
        parts.append(f"${cost:.4f}")
    parts += [words for key, words in _FLAGS if d.get(key)]
    if d.get("noProgress"):
        parts.append(f"no progress {d['noProgress']}")
    if d.get("log"):
        parts.append(value(d["log"]))
    known: tuple[str, ...] = ("run", "exit", "result", "duration", "decision", "criteriaMet")
    known += ("criteriaTotal", "stepsDone", "stepsTotal", "tokens", "cost", "noProgress", "log")
    known += ("stops",)
    return " · ".join(parts + _rest(d, *known, *(key for key, _ in _FLAGS)))


_FLAGS = (("timedOut", "timed out"), ("idle", "idle"), ("interrupted", "interrupted"))


def _started(d: Entry) -> str:
    parts = [f"agent {_quoted(d.get('agent'))}"]
    if isinstance(d.get("limit"), int):
        parts.append(f"up to {d['limit']} {noun(d['limit'], 'iteration')}")
    if d.get("timeout"):
        parts.append(f"timeout {_seconds(d['timeout'])}")
    for key, whose in (("budget", "this run's"), ("loopBudget", "the loop's")):
        if isinstance(d.get(key), dict):
            given = ", ".join(f"{k} {value(v)}" for k, v in d[key].items())
            parts.append(f"{whose} budget: {given}")
    if d.get("fallbacks"):
        parts.append(f"then {', '.join(_quoted(f) for f in d['fallbacks'])}")
    known = ("agent", "limit", "timeout", "budget", "loopBudget", "fallbacks", "promptMode")
    return " · ".join(parts + _rest(d, *known, "maxIterations", "pid"))


def _finished(d: Entry) -> str:
    head = value(d.get("outcome", "?"))
    if d.get("reason"):
        detail = f": {value(d['detail'])}" if d.get("detail") else ""
        head += f" ({value(d['reason'])}{detail})"
    elif d.get("detail"):
        head += f" ({value(d['detail'])})"
    count = d.get("iterations")
    parts = [head]
    if isinstance(count, int):
        parts.append(f"{count} {noun(count, 'iteration')} in {_seconds(d.get('duration'))}")
    known = ("outcome", "reason", "detail", "iterations", "duration")
    return " · ".join(parts + _rest(d, *known))


def _approved(d: Entry) -> str:
    contract = d.get("contract")
    if not isinstance(contract, dict):
        return _pairs(d)
    criteria, checks = contract.get("criteria") or [], contract.get("checks") or {}
    said = f"the proof: {len(criteria)} {noun(len(criteria), 'criterion')}"
    said += f", {len(checks)} {noun(len(checks), 'check')}"
    return " · ".join([said, *_rest(d, "contract")])


def _started_iteration(d: Entry) -> str:
    said = f"run {d.get('run', '?')} of {d.get('of', '?')}"
    return " · ".join([said, *_rest(d, "run", "of")])


_SAY: dict[str, Callable[[Entry], str]] = {
    "check": _check,
    "commit": _commit,
    "run_iteration": _iteration,
    "run_started": _started,
    "run_finished": _finished,
    "iteration_started": _started_iteration,
    "approved": _approved,
}
