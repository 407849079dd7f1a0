"""The loop state: schema version 1, tolerant reading, stable writing.

The state is a plain dict with the camelCase keys of the schema, because agents
and people write the file by hand. `normalise` turns whatever was read into a
complete, checked state (defaults filled, `remainingSteps` derived, unknown keys
kept); `dumps` writes it back in the schema's order, unknown keys last.

Schema versions:
- (none): the seed's format, before `version` existed; read as version 1.
- 1: the table in docs/design.md ("The state"), in `State` below.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any, Literal, TypedDict, cast

import orjson

from ralphstate.core.errors import CorruptState
from ralphstate.core.limits import (
    MAX_CHECK_TIMEOUT,
    MAX_ERRORS,
    MAX_MIRRORED_TASKS,
    MAX_PROBLEM_CHARS,
    MAX_STATE_DEPTH,
    MAX_TASK_ID_CHARS,
    MAX_TASK_SUBJECT_CHARS,
)
from ralphstate.core.marker import marker_problem

SCHEMA_VERSION = 1
DEFAULT_MAX_ITERATIONS = 20
DEFAULT_STALL_LIMIT = 5
DEFAULT_MARKER = "<loop-complete>"
# Iterations beyond this are refused: the cap exists to be a cap.
MAX_ITERATIONS_CEILING = 100_000

Status = Literal["in_progress", "paused", "complete", "cancelled"]
STATUSES: tuple[Status, ...] = ("in_progress", "paused", "complete", "cancelled")
# The statuses of a loop that is not over: SessionStart restores it, `init` keeps it.
ACTIVE: tuple[Status, ...] = ("in_progress", "paused")
# Why ralphstate itself pauses a loop; `ralphstate pause --reason` may write any text.
PauseReason = Literal[
    "max_iterations", "stall", "untrusted_checks", "user", "budget", "agent_errors", "step_retries"
]
# The agents whose sessions can own a loop (agents/table.py holds their details).
AgentName = Literal["claude", "codex", "gemini", "cursor", "copilot", "opencode"]
# The agent a `sessionId` belongs to when the file does not say.
DEFAULT_AGENT: AgentName = "claude"
# What backs a criterion's status: its check passed or failed, or someone said so.
EvidenceResult = Literal["verified", "claimed", "failing"]
EVIDENCE_RESULTS: tuple[EvidenceResult, ...] = ("verified", "claimed", "failing")
# What a criterion's status rests on, as `standing` reports it.
Standing = Literal["verified", "claimed", "failing", "unchecked"]


class Evidence(TypedDict, total=False):
    """What backs one criterion's status (`evidence[NAME]`); `result` is always there."""

    result: EvidenceResult
    at: str
    command: str
    exitCode: int | None
    timedOut: bool
    durationMs: int
    summary: str
    outputTail: str
    outputBytes: int
    # The code the check ran on: HEAD, whether the work tree differed from it, and the
    # id of the tree the work tree held (storage/git.py, `snapshot`).
    commit: str | None
    dirty: bool
    tree: str


# A task of the agent's task list, as the loop mirrors it (`taskList`).
TaskStatus = Literal["pending", "in_progress", "completed"]
TASK_STATUSES: tuple[TaskStatus, ...] = ("pending", "in_progress", "completed")


class Task(TypedDict):
    """One task of the agent's task list (`taskList[i]`, docs/design.md "Task tools"):
    the list it is in (the session, or the list Claude Code was told to share) and its id
    there (null for a TodoWrite item, which has none), its subject, its status, the step
    it is mirrored to (null: none, a task file without that box), and whether the mirror
    added that step to the plan (only such a step leaves with its task)."""

    list: str | None
    id: str | None
    subject: str
    status: TaskStatus
    step: str | None
    added: bool


class Usage(TypedDict):
    """What a loop has spent (`usage`): every figure a sum over its iterations."""

    tokens: int
    cost: float
    seconds: float


class TranscriptUsage(TypedDict):
    """How far the Stop hook has counted a session's transcript (`transcriptUsage`;
    docs/design.md, "Tokens inside a session")."""

    session: str
    file: str
    offset: int
    lastMessageId: str | None
    resync: bool
    midLine: bool
    countedAt: str | None


class State(TypedDict):
    """A normalised state.json (docs/design.md, "The state"). Keys a file has beyond
    these are kept as they are and written back after them."""

    version: int
    spec: str
    criteria: list[str]
    criteriaStatus: dict[str, bool]
    checks: dict[str, str]
    steps: list[str]
    completedSteps: list[str]
    remainingSteps: list[str]
    iteration: int
    maxIterations: int
    stallLimit: int
    completionMarker: str
    continueMessage: str | None
    status: Status
    pauseReason: str | None
    sessionId: str | None
    # ralphstate: the loop's own id, random, set by `init`; null in a file from before it.
    loopId: str | None
    startedAt: str | None
    updatedAt: str | None
    lastCheckpoint: str | None
    errors: list[dict[str, Any]]
    # ralphstate: consecutive blocks with no progress, and the progress they saw.
    blocksWithoutProgress: int
    lastProgress: str | None
    # ralphstate: run the checks before the Stop hook allows a claimed completion;
    # per-criterion check timeouts (seconds); what backs each criterion's status.
    # null: the default, on; false only when the person turned it off (docs/design.md).
    verifyOnStop: bool | None
    checkTimeouts: dict[str, float]
    evidence: dict[str, Evidence]
    # ralphstate: the agent whose session (`sessionId`) owns the loop: claude, codex, ...
    ownerAgent: str | None
    # ralphstate: the person started the loop without criteria (`init --no-criteria`): the
    # completion marker alone ends it. Without it, a loop with no criteria never completes.
    noCriteria: bool
    # ralphstate: what the loop has spent (`tokens`, `cost` in US dollars, `seconds`
    # of runs), and the budgets that pause it once reached (null: none).
    usage: Usage | None
    maxCost: float | None
    maxTokens: int | None
    maxDuration: float | None
    # ralphstate: the API error the last turn ended on (StopFailure: `at`, `error`,
    # `message`), until the next SessionStart has told the model and the person.
    lastFailure: dict[str, Any] | None
    # ralphstate: a markdown file of checkboxes, relative to the project root, whose boxes
    # are the loop's steps (loop/taskfile.py); null: the steps are this file's own.
    tasksFile: str | None
    # ralphstate: the agent's task list (TaskCreate/TaskUpdate, TodoWrite), mirrored by the
    # PostToolUse hook into the steps; restored at SessionStart (hooks/tasks.py).
    taskList: list[Task]
    # ralphstate: where the Stop hook stopped reading the session's transcript for its
    # tokens (agents/transcript_usage.py); null until a stop has read one.
    transcriptUsage: TranscriptUsage | None


# A state as read, before `normalise` has checked it: any JSON object.
Raw = dict[str, Any]

# The schema's order, `State`'s: files are written in it so diffs stay readable.
FIELD_ORDER: tuple[str, ...] = tuple(State.__annotations__)


# The fields a loop's life writes (its progress, owner, times, evidence), which a new
# loop always starts afresh: `init --from` ignores them in a template.
RUN_FIELDS = (
    "version",
    "iteration",
    "status",
    "pauseReason",
    "sessionId",
    "ownerAgent",
    "loopId",
    "startedAt",
    "updatedAt",
    "lastCheckpoint",
    "errors",
    "blocksWithoutProgress",
    "lastProgress",
    "evidence",
    "usage",
    "lastFailure",
    "taskList",
    "transcriptUsage",
)


def _defaults() -> Raw:
    return {
        "version": SCHEMA_VERSION,
        "spec": "",
        "criteria": [],
        "criteriaStatus": {},
        "checks": {},
        "steps": [],
        "completedSteps": [],
        "remainingSteps": [],
        "iteration": 0,
        "maxIterations": DEFAULT_MAX_ITERATIONS,
        "stallLimit": DEFAULT_STALL_LIMIT,
        "completionMarker": DEFAULT_MARKER,
        "continueMessage": None,
        "status": "in_progress",
        "pauseReason": None,
        "sessionId": None,
        "loopId": None,
        "startedAt": None,
        "updatedAt": None,
        "lastCheckpoint": None,
        "errors": [],
        "blocksWithoutProgress": 0,
        "lastProgress": None,
        "verifyOnStop": None,
        "checkTimeouts": {},
        "evidence": {},
        "ownerAgent": None,
        "noCriteria": False,
        "usage": None,
        "maxCost": None,
        "maxTokens": None,
        "maxDuration": None,
        "lastFailure": None,
        "tasksFile": None,
        "taskList": [],
        "transcriptUsage": None,
    }


class _Bad(Exception):
    pass


def _str_list(raw: Raw, key: str) -> list[str]:
    value = raw.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(f"'{key}' must be a list of strings")
    _no_blank(key, value)
    return list(dict.fromkeys(value))  # duplicates read as one


def _no_blank(key: str, names: Iterable[str]) -> None:
    if any(not name.strip() for name in names):
        raise _Bad(f"'{key}' holds a blank name; give every item some text, or remove it")


# What a command says when it is given a name that is empty or only spaces.
BLANK = {
    "criterion": "a criterion needs a name, not only spaces.",
    "step": "a step needs some text, not only spaces.",
}


def blank(name: str) -> bool:
    """A criterion or step name that is empty or only whitespace: refused everywhere."""
    return not name.strip()


def _int(raw: Raw, key: str, default: int, lowest: int) -> int:
    value = raw.get(key, default)
    if value is None:
        return default
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(f"'{key}' must be a whole number")
    if value < lowest or value > MAX_ITERATIONS_CEILING:
        raise _Bad(f"'{key}' must be between {lowest} and {MAX_ITERATIONS_CEILING}, not {value}")
    return value


def _opt_str(raw: Raw, key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise _Bad(f"'{key}' must be a string or null")
    return value


def _tasks_file(raw: Raw) -> str | None:
    name = _opt_str(raw, "tasksFile")
    if name is not None and not name.strip():
        raise _Bad("'tasksFile' must name a file or be null")
    return name


def _task_list(raw: Raw) -> list[Task]:
    """The mirrored task list, checked: at most MAX_MIRRORED_TASKS tasks, each an object
    with a subject; a key it lacks takes its default, a key it adds is kept."""
    value = raw.get("taskList")
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise _Bad("'taskList' must be a list of tasks, each an object with a 'subject'")
    if len(value) > MAX_MIRRORED_TASKS:
        raise _Bad(f"'taskList' holds {len(value)} tasks, more than {MAX_MIRRORED_TASKS}")
    tasks: list[Task] = []
    for i, item in enumerate(value):
        task: Raw = {"list": None, "id": None, "subject": None, "status": "pending"}
        task.update(step=None, added=False)
        task.update(item)  # the schema's keys in its order, then the task's own
        where = f"taskList[{i}]"
        subject = task.get("subject")
        if not isinstance(subject, str) or blank(subject) or len(subject) > MAX_TASK_SUBJECT_CHARS:
            raise _Bad(
                f"{where}.subject must be some text of at most {MAX_TASK_SUBJECT_CHARS} characters"
            )
        for key in ("list", "id"):
            if task[key] is not None and (
                not isinstance(task[key], str) or len(task[key]) > MAX_TASK_ID_CHARS
            ):
                raise _Bad(
                    f"{where}.{key} must be null or a string of at most {MAX_TASK_ID_CHARS}"
                    " characters"
                )
        if task["status"] not in TASK_STATUSES:
            raise _Bad(f"{where}.status must be one of {', '.join(TASK_STATUSES)}")
        if task["step"] is not None and (not isinstance(task["step"], str) or blank(task["step"])):
            raise _Bad(f"{where}.step must be null or the text of a step")
        if not isinstance(task["added"], bool):
            raise _Bad(f"{where}.added must be true or false")
        tasks.append(cast(Task, task))
    return tasks


def _criteria(raw: Raw) -> tuple[list[str], dict[str, bool]]:
    """The criteria and their status. The design notes' shape keeps the criteria in
    `criteriaStatus` alone, so every key of it is a criterion, after the list's."""
    listed = _str_list(raw, "criteria")
    status_map = raw.get("criteriaStatus") or {}
    if not isinstance(status_map, dict):
        raise _Bad("'criteriaStatus' must be an object of criterion: true/false")
    for name, value in status_map.items():
        if not isinstance(value, bool):
            raise _Bad(f"criteriaStatus[{name!r}] must be true or false, not {value!r}")
    _no_blank("criteriaStatus", status_map)
    return list(dict.fromkeys([*listed, *status_map])), dict(status_map)


def _timeouts(raw: Raw) -> dict[str, float]:
    value = raw.get("checkTimeouts") or {}
    if not isinstance(value, dict):
        raise _Bad("'checkTimeouts' must be an object of criterion: seconds")
    for name, seconds in value.items():
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not 0 < seconds <= MAX_CHECK_TIMEOUT
        ):
            raise _Bad(
                f"checkTimeouts[{name!r}] must be a number of seconds above 0 and at most"
                f" {MAX_CHECK_TIMEOUT:g}, not {seconds!r}"
            )
    return dict(value)


def _evidence(raw: Raw) -> dict[str, Evidence]:
    value = raw.get("evidence") or {}
    if not isinstance(value, dict):
        raise _Bad("'evidence' must be an object of criterion: {result, ...}")
    for name, entry in value.items():
        if not isinstance(entry, dict) or entry.get("result") not in EVIDENCE_RESULTS:
            raise _Bad(
                f"evidence[{name!r}] must be an object whose 'result' is"
                f" {', '.join(EVIDENCE_RESULTS)}"
            )
    return {name: cast(Evidence, dict(entry)) for name, entry in value.items()}


def _number(value: Any) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and value >= 0
    )


def _usage(raw: Raw) -> Usage | None:
    value = raw.get("usage")
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        _number(value.get(key, 0)) for key in ("tokens", "cost", "seconds")
    ):
        raise _Bad("'usage' must be an object of tokens, cost and seconds, each 0 or more")
    return {
        "tokens": int(value.get("tokens", 0)),
        "cost": float(value.get("cost", 0)),
        "seconds": float(value.get("seconds", 0)),
    }


def _spending(raw: Raw, state: Raw) -> None:
    """`usage` and the budgets, checked."""
    state["usage"] = _usage(raw)
    for key in ("maxCost", "maxTokens", "maxDuration"):
        state[key] = _budget(raw, key)
    failure = raw.get("lastFailure")
    if failure is not None and not isinstance(failure, dict):
        raise _Bad("'lastFailure' must be an object or null")
    state["lastFailure"] = failure
    state["transcriptUsage"] = _transcript_usage(raw)


# The widest offset `transcriptUsage` may hold: a file position.
_MAX_OFFSET = 2**63 - 1


def _transcript_usage(raw: Raw) -> TranscriptUsage | None:
    value = raw.get("transcriptUsage")
    if value is None:
        return None
    bad = _Bad(
        "'transcriptUsage' must be null or an object of session, file (strings), offset"
        " (a whole number, 0 or more), lastMessageId (a string or null), resync and"
        " midLine (true or false), countedAt (a string or null)"
    )
    if not isinstance(value, dict):
        raise bad
    offset = value.get("offset")
    if isinstance(offset, float) and math.isfinite(offset) and offset.is_integer():
        offset = int(offset)
    last = value.get("lastMessageId")
    counted_at = value.get("countedAt")
    flags = [value.get(key, False) for key in ("resync", "midLine")]
    if (
        not isinstance(value.get("session"), str)
        or not isinstance(value.get("file"), str)
        or isinstance(offset, bool)
        or not isinstance(offset, int)
        or not 0 <= offset <= _MAX_OFFSET
        or (last is not None and not isinstance(last, str))
        or (counted_at is not None and not isinstance(counted_at, str))
        or not all(isinstance(flag, bool) for flag in flags)
    ):
        raise bad
    return {
        "session": value["session"],
        "file": value["file"],
        "offset": offset,
        "lastMessageId": last,
        "resync": flags[0],
        "midLine": flags[1],
        "countedAt": counted_at,
    }


def _budget(raw: Raw, key: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    if not _number(value) or value == 0:
        raise _Bad(f"'{key}' must be a number above 0, or null, not {value!r}")
    return int(value) if key == "maxTokens" else float(value)


def spent(state: State) -> Usage:
    """What the loop has spent so far (zeros when nothing was recorded)."""
    return state["usage"] or {"tokens": 0, "cost": 0.0, "seconds": 0.0}


def add_usage(state: State, tokens: int = 0, cost: float = 0.0, seconds: float = 0.0) -> None:
    """Add one iteration's figures to the loop's `usage`."""
    now = spent(state)
    state["usage"] = {
        "tokens": now["tokens"] + max(0, tokens),
        "cost": round(now["cost"] + max(0.0, cost), 6),
        "seconds": round(now["seconds"] + max(0.0, seconds), 3),
    }


def dollars(amount: float) -> str:
    """`$12.40`, or `$0.0032` for less than a dollar."""
    return f"${amount:.2f}" if amount >= 1 else f"${amount:.4f}"


# Budgets (docs/run.md, "Budgets"). The loop's are `maxCost`, `maxTokens` and
# `maxDuration` in the state, measured from its `usage`; a run's are its options (or its
# configuration file's), measured from what that run spent, and never written here.
BUDGET_KEYS = ("maxCost", "maxTokens", "maxDuration")
LOOPS = "the loop's"
RUNS = "this run's"


class Budget(TypedDict):
    """Limits on what may be spent: dollars, tokens, seconds; None is no limit."""

    cost: float | None
    tokens: int | None
    seconds: float | None


def loop_budget(state: State) -> Budget:
    return {"cost": state["maxCost"], "tokens": state["maxTokens"], "seconds": state["maxDuration"]}


def used_since(now: Usage, start: Usage) -> Usage:
    """What was spent between two readings of `usage` (never below zero: a hand edit
    may have lowered it)."""
    return {
        "tokens": max(0, now["tokens"] - start["tokens"]),
        "cost": round(max(0.0, now["cost"] - start["cost"]), 6),
        "seconds": round(max(0.0, now["seconds"] - start["seconds"]), 3),
    }


def span(seconds: float) -> str:
    """`0.1s`, `45s`, `1m30s`, `1h30m`, `8h`, `2d4h`: a duration as a person writes one."""
    if round(seconds, 1) < 60:
        return f"{round(seconds, 1):g}s"
    whole = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    return "".join(parts)


_SPAN = re.compile(r"(\d+(?:\.\d+)?)([dhms])")


def parse_duration(text: str) -> float | None:
    """`8h`, `90m`, `1h30m`, `45s`, `2d` or a plain number of seconds; None if not one."""
    text = text.strip().lower().replace(" ", "")
    try:
        seconds = float(text)
    except ValueError:
        parts = _SPAN.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        seconds = sum(float(n) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def reached(used: Usage, budget: Budget, whose: str) -> str | None:
    """The budget `used` has reached, as a person reads it (`cost $0.0032 of this
    run's $0.0030`: the figure and the budget on one scale), or None."""
    cost, tokens, seconds = budget["cost"], budget["tokens"], budget["seconds"]
    if cost is not None and used["cost"] >= cost:
        digits = 2 if max(used["cost"], cost) >= 1 else 4
        return f"cost ${used['cost']:.{digits}f} of {whose} ${cost:.{digits}f}"
    if tokens is not None and used["tokens"] >= tokens:
        return f"tokens {used['tokens']:,} of {whose} {tokens:,}"
    if seconds is not None and used["seconds"] >= seconds:
        return f"duration {span(used['seconds'])} of {whose} {span(seconds)}"
    return None


def over_budget(state: State) -> str | None:
    """The loop's budget it has reached, as a person reads it, or None."""
    return reached(spent(state), loop_budget(state), LOOPS)


def left(used: Usage, budget: Budget, key: Literal["cost", "tokens", "seconds"]) -> float | None:
    """What `budget` leaves of one figure after `used`, or None without a limit."""
    limit = budget[key]
    return None if limit is None else limit - used[key]


def normalise(raw: object) -> State:
    """A complete, checked state from what was read; raises CorruptState if unusable."""
    return _checked(raw)[0]


def _checked(raw: object) -> tuple[State, bool]:
    """`normalise`, and whether a float in it may have been written as a whole number
    too wide to keep (`_check_tree`)."""
    if not isinstance(raw, dict):
        raise CorruptState(f"state.json must hold a JSON object, not {type(raw).__name__}")
    try:
        wide = _check_tree(raw)
        return _normalise(raw), wide
    except _Bad as exc:
        raise CorruptState(f"state.json: {_clipped(str(exc))}") from None


def _clipped(problem: str) -> str:
    """A problem quotes the file's values, which can be huge: one short line."""
    if len(problem) > MAX_PROBLEM_CHARS:
        problem = problem[: MAX_PROBLEM_CHARS - 1] + "…"
    return problem


# The whole numbers orjson writes exactly; it reads a wider one as a float.
_INT_LOW, _INT_HIGH = -(2**63), 2**64 - 1


def _check_tree(raw: Raw) -> bool:
    """Refuse what could be read but never written back as it was: a value nested
    deeper than MAX_STATE_DEPTH, a whole number wider than 64 bits. True when a float
    is whole and that wide: orjson reads a wide whole number as one, so `parse` looks
    at how the file wrote it."""
    wide = False
    stack: list[tuple[Any, int]] = [(raw, 1)]
    while stack:
        value, depth = stack.pop()
        for item in value.values() if isinstance(value, dict) else value:
            if isinstance(item, (dict, list)):
                if depth >= MAX_STATE_DEPTH:
                    raise _Bad(
                        f"it nests values more than {MAX_STATE_DEPTH} levels deep, which"
                        " ralphstate could not write back"
                    )
                stack.append((item, depth + 1))
            elif isinstance(item, int) and not _INT_LOW <= item <= _INT_HIGH:
                raise _Bad(_too_wide(str(item)))
            elif isinstance(item, float) and abs(item) >= 2**63 and item.is_integer():
                wide = True
    return wide


def _too_wide(number: str) -> str:
    if len(number) > 40:
        number = number[:20] + "…" + number[-19:]
    return (
        f"the whole number {number} is wider than 64 bits, which ralphstate could not"
        " write back exactly"
    )


def _refuse_wide_integers(data: bytes) -> None:
    """Raise CorruptState when the file writes a whole number wider than 64 bits (orjson
    read it as a float, and would write it back as one). Only asked when `_check_tree`
    saw a float that could be one, so the standard json module is imported rarely."""
    import json

    def whole(text: str) -> int:
        if not _INT_LOW <= int(text) <= _INT_HIGH:
            raise _Bad(_too_wide(text))
        return 0

    try:
        json.loads(data, parse_int=whole)
    except _Bad as exc:
        raise CorruptState(f"state.json: {_clipped(str(exc))}") from None
    except (ValueError, RecursionError):
        pass  # orjson read it; what json makes of it does not matter


def _normalise(raw: Raw) -> State:
    version = raw.get("version", SCHEMA_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _Bad(f"'version' must be a positive whole number, not {version!r}")
    if version > SCHEMA_VERSION:
        raise CorruptState(
            f"state.json has schema version {version}, newer than this ralphstate"
            f" understands ({SCHEMA_VERSION}); upgrade ralphstate to use it"
        )
    state = _defaults()
    spec = raw.get("spec", "")
    if not isinstance(spec, str):
        raise _Bad("'spec' must be a string")
    state["spec"] = spec
    state["criteria"], state["criteriaStatus"] = _criteria(raw)
    checks = raw.get("checks") or {}
    if not isinstance(checks, dict) or not all(isinstance(v, str) for v in checks.values()):
        raise _Bad("'checks' must be an object of criterion: command")
    state["checks"] = dict(checks)
    state["checkTimeouts"] = _timeouts(raw)
    state["evidence"] = _evidence(raw)
    verify_on_stop = raw.get("verifyOnStop")
    if verify_on_stop is not None and not isinstance(verify_on_stop, bool):
        raise _Bad(f"'verifyOnStop' must be true, false or null, not {verify_on_stop!r}")
    if verify_on_stop is False and "noCriteria" not in raw:
        # Written before verify-on-stop became the default (with `noCriteria`, which every
        # file since holds): that `false` was the old default, not the person's choice.
        verify_on_stop = None
    state["verifyOnStop"] = verify_on_stop
    no_criteria = raw.get("noCriteria", False)
    if no_criteria is not None and not isinstance(no_criteria, bool):
        raise _Bad(f"'noCriteria' must be true or false, not {no_criteria!r}")
    state["noCriteria"] = bool(no_criteria)

    steps = _str_list(raw, "steps")
    completed = _str_list(raw, "completedSteps")
    remaining = _str_list(raw, "remainingSteps")
    # A step named anywhere is a step; order: the plan, then what was only added elsewhere.
    steps = list(dict.fromkeys([*steps, *completed, *remaining]))
    done = set(completed)
    state["steps"] = steps
    state["completedSteps"] = [s for s in steps if s in done]
    state["remainingSteps"] = [s for s in steps if s not in done]

    state["iteration"] = _int(raw, "iteration", 0, 0)
    state["maxIterations"] = _int(raw, "maxIterations", DEFAULT_MAX_ITERATIONS, 1)
    state["stallLimit"] = _int(raw, "stallLimit", DEFAULT_STALL_LIMIT, 1)
    state["blocksWithoutProgress"] = _int(raw, "blocksWithoutProgress", 0, 0)
    marker = raw.get("completionMarker") or DEFAULT_MARKER
    if not isinstance(marker, str) or not marker.strip():
        raise _Bad("'completionMarker' must be a non-empty string")
    problem = marker_problem(marker)
    if problem:
        raise _Bad(f"'completionMarker' is refused: {problem.rstrip('.')}")
    state["completionMarker"] = marker
    status = raw.get("status", "in_progress")
    if status not in STATUSES:
        raise _Bad(f"'status' must be one of {', '.join(STATUSES)}, not {status!r}")
    state["status"] = status
    for key in (
        "continueMessage",
        "pauseReason",
        "sessionId",
        "ownerAgent",
        "loopId",
        "startedAt",
        "updatedAt",
        "lastCheckpoint",
        "lastProgress",
    ):
        state[key] = _opt_str(raw, key)
    state["tasksFile"] = _tasks_file(raw)
    state["taskList"] = _task_list(raw)
    # An owner is a session of one agent; files from before `ownerAgent` were Claude Code's.
    state["ownerAgent"] = (state["ownerAgent"] or DEFAULT_AGENT) if state["sessionId"] else None
    _spending(raw, state)
    errors = raw.get("errors") or []
    if not isinstance(errors, list):
        raise _Bad("'errors' must be a list")
    state["errors"] = errors[-MAX_ERRORS:]  # the most recent, bounded
    for key, value in raw.items():
        if key not in state:
            state[key] = value
    state["version"] = SCHEMA_VERSION
    return _in_schema_order(state)


def _in_schema_order(state: Raw) -> State:
    """The schema's keys in the schema's order, then unknown keys in the order found."""
    ordered = {key: state[key] for key in FIELD_ORDER if key in state}
    ordered.update((k, v) for k, v in state.items() if k not in ordered)
    return cast(State, ordered)


def parse(data: bytes) -> State:
    """Parse and normalise state.json's bytes; CorruptState names line and column."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptState(
            f"state.json is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from None
    state, wide = _checked(raw)
    if wide:
        _refuse_wide_integers(data)
    return state


def dumps(state: State) -> bytes:
    """The file's bytes: indented, schema order, unknown keys after, newline-terminated."""
    return orjson.dumps(_in_schema_order(cast(Raw, state)), option=orjson.OPT_INDENT_2) + b"\n"


def new(
    spec: str,
    criteria: list[str],
    steps: list[str],
    *,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    stall_limit: int = DEFAULT_STALL_LIMIT,
    marker: str = DEFAULT_MARKER,
    session_id: str | None = None,
    agent: str | None = None,
    now: str,
    loop_id: str | None = None,
    extra: Raw | None = None,
) -> State:
    """A fresh in-progress loop, whose id is `loop_id` (`init` draws a random one)."""
    raw: Raw = dict(extra or {})
    raw.update(
        spec=spec,
        criteria=criteria,
        criteriaStatus={c: bool((extra or {}).get("criteriaStatus", {}).get(c)) for c in criteria},
        steps=steps,
        maxIterations=max_iterations,
        stallLimit=stall_limit,
        completionMarker=marker,
        status="in_progress",
        sessionId=session_id,
        ownerAgent=agent if session_id else None,
        noCriteria=bool(raw.get("noCriteria")),  # written by this version: its choices stand
        loopId=loop_id,
        startedAt=now,
        updatedAt=now,
        iteration=0,
        blocksWithoutProgress=0,
        pauseReason=None,
    )
    state = normalise(raw)
    state["lastProgress"] = progress(state)
    return state


# A loop blocked on a person: its pauseReason is "blocked: WHAT THEY MUST DO".
BLOCKED = "blocked"


def blocked_reason(text: str) -> str:
    return f"{BLOCKED}: {' '.join(text.split())[:MAX_PROBLEM_CHARS]}"


def is_blocked(reason: str | None) -> bool:
    return bool(reason) and (reason == BLOCKED or str(reason).startswith(BLOCKED + ":"))


def verify_on_stop(state: State) -> bool:
    """The Stop hook runs the checks before it lets a claimed completion end the loop:
    the default (null) and `true`; only an explicit `false` turns it off."""
    return state["verifyOnStop"] is not False


def met(state: State, criterion: str) -> bool:
    return state["criteriaStatus"].get(criterion) is True


def unmet(state: State) -> list[str]:
    """Criteria not verified yet, in order; a criterion missing from the map is unmet."""
    return [c for c in state["criteria"] if not met(state, c)]


def standing(state: State, criterion: str) -> Standing | None:
    """What backs a criterion's status: `verified`, `claimed`, `failing`, `unchecked`
    (unmet, with a check that has not proven anything yet) or None (unmet, no check).

    Read from `criteriaStatus` first, so evidence a later change left behind never
    makes a criterion look better than its status."""
    result = state["evidence"].get(criterion, {}).get("result")
    if met(state, criterion):
        return "verified" if result == "verified" else "claimed"
    if result == "failing":
        return "failing"
    return "unchecked" if criterion in state["checks"] else None


def stale(state: State, tree: str | None) -> list[str]:
    """The verified criteria whose check passed on another tree than `tree`, the id of
    the tree the work tree holds now (None: not known, so nothing is stale). Evidence
    that records no tree (outside git, or written before trees were recorded) is
    never stale: nothing says the code changed."""
    if tree is None:
        return []
    found = []
    for name in state["criteria"]:
        evidence = state["evidence"].get(name, {})
        if (
            standing(state, name) == "verified"
            and name in state["checks"]
            and evidence.get("command") == state["checks"][name]
            and evidence.get("tree") not in (None, tree)
        ):
            found.append(name)
    return found


def progress(state: State, marker_seen: bool = False) -> str:
    """A short fingerprint of everything that counts as progress."""
    import hashlib  # OpenSSL's module: only the Stop decision needs it

    basis = orjson.dumps(
        [
            [[c, met(state, c)] for c in state["criteria"]],
            state["steps"],
            state["completedSteps"],
            marker_seen,
        ]
    )
    return hashlib.sha256(basis).hexdigest()[:16]


def set_steps(state: State, steps: list[str], completed: list[str]) -> None:
    """Replace the plan, keeping the three step lists consistent."""
    steps = list(dict.fromkeys(steps))
    done = set(completed)
    state["steps"] = steps
    state["completedSteps"] = [s for s in steps if s in done]
    state["remainingSteps"] = [s for s in steps if s not in done]


def add_error(state: State, message: str, *, at: str, **details: Any) -> None:
    """Remember an error in `errors`, keeping only the most recent MAX_ERRORS."""
    entry: dict[str, Any] = {
        "at": at,
        "iteration": state["iteration"],
        "message": message[:MAX_PROBLEM_CHARS],
    }
    entry.update(details)
    state["errors"] = [*state["errors"], entry][-MAX_ERRORS:]
