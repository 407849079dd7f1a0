"""The loop state: schema version 1, tolerant reading, stable writing.

The state is a plain dict with the camelCase keys of the schema, because agents
and people write the file by hand. `normalise` turns whatever was read into a
complete, checked state (defaults filled, `remainingSteps` derived, unknown keys
kept); `dumps` writes it back in the schema's order, unknown keys last. The fields
themselves, their defaults, checks, meanings and roles, are the rows of `schema.ROWS`;
`State` gives their types. The checks are in `scalars` and `fields` (with the records
some fields hold); what the state answers is in `queries`, what it has spent against
its budgets in `budgets`.

Schema versions:
- (none): the seed's format, before `version` existed; read as version 1.
- 1: the table in docs/reference/state-file.md, generated from `schema.ROWS`.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict, cast

import orjson

from ralphstate.core import fields, schema
from ralphstate.core.errors import CorruptState
from ralphstate.core.limits import MAX_ERRORS, MAX_PROBLEM_CHARS, MAX_STATE_DEPTH
from ralphstate.core.schema import Status

# The defaults `init` takes when neither its options nor a template says (the rows').
DEFAULT_MAX_ITERATIONS: int = schema.FIELDS["maxIterations"].default
DEFAULT_STALL_LIMIT: int = schema.FIELDS["stallLimit"].default
DEFAULT_MARKER: str = schema.FIELDS["completionMarker"].default

# The statuses of a loop that is not over: SessionStart restores it, `init` keeps it.
ACTIVE: tuple[Status, ...] = ("in_progress", "paused")
# Why ralphstate itself pauses a loop; `ralphstate pause --reason` may write any text.
PauseReason = Literal[
    "max_iterations",
    "stall",
    "untrusted_checks",
    "user",
    "budget",
    "agent_errors",
    "step_retries",
    "review",
    "agent",
]


class State(TypedDict):
    """A normalised state.json: the types of `schema.ROWS`, one key a row, in their order
    (docs/reference/state-file.md). Keys a file has beyond these are kept as they are and
    written back after them."""

    version: int
    spec: str
    criteria: list[str]
    criteriaStatus: dict[str, bool]
    checks: dict[str, str]
    # ralphstate: criterion → the rubric a reviewer grades it by (core/grading.py).
    rubrics: dict[str, str]
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
    # null: the default, on; false only when the person turned it off (docs/explanation/design.md).
    verifyOnStop: bool | None
    # ralphstate: the checks that accept a completion run in a clean room (a temporary
    # worktree of the tracked files); null: the default, on wherever the loop is in a git
    # repository; false only when the person turned it off.
    cleanVerify: bool | None
    checkTimeouts: dict[str, float]
    evidence: dict[str, fields.Evidence]
    # ralphstate: the agent whose session (`sessionId`) owns the loop: claude, codex, ...
    ownerAgent: str | None
    # ralphstate: the person started the loop without criteria (`init --no-criteria`): the
    # completion marker alone ends it. Without it, a loop with no criteria never completes.
    noCriteria: bool
    # ralphstate: what the loop has spent (`tokens`, `cost` in US dollars, `seconds`
    # of runs), and the budgets that pause it once reached (null: none).
    usage: fields.Usage | None
    maxCost: float | None
    maxTokens: int | None
    maxDuration: float | None
    # ralphstate: the API error the last turn ended on (StopFailure: `at`, `error`,
    # `message`), until the next SessionStart has told the model and the person.
    lastFailure: dict[str, Any] | None
    # ralphstate: a markdown file of checkboxes, relative to the project root, whose boxes
    # are the loop's steps (loop/taskfile.py); null: the steps are this file's own.
    tasksFile: str | None
    # ralphstate: the criteria that are boxes of the task file (`init --contract boxes`):
    # met when every box with that name is ticked (a claim), or by their check.
    boxCriteria: list[str]
    # ralphstate: the agent's task list (TaskCreate/TaskUpdate, TodoWrite), mirrored by the
    # PostToolUse hook into the steps; restored at SessionStart (hooks/post_tool_use.py).
    taskList: list[fields.Task]
    # ralphstate: where the Stop hook stopped reading the session's transcript for its
    # tokens (agents/transcript_usage.py); null until a stop has read one.
    transcriptUsage: fields.TranscriptUsage | None
    # ralphstate: the guarded files, git pathspecs relative to the project root whose
    # changes a person reviews (storage/repo/guarded.py); null: not guarded.
    guards: list[str] | None
    # ralphstate: the criteria whose check must fail once before a pass counts (red before
    # green, core/redgreen.py): a check that passes before it ever failed proves nothing.
    expectFail: list[str]
    # ralphstate: the reviewer's command (null: the default), and its last verdicts.
    reviewer: str | None
    grades: dict[str, dict[str, Any]]
    # ralphstate: seconds without a change to the loop after which its owner counts as
    # gone and a new session takes it (core/ownership.py); null: 30 minutes, 0: never.
    ownerTimeout: float | None
    # ralphstate: the seconds the Stop hook may spend running checks (null: 120), how many
    # checks run at once (null: the processors, at least 16), and the criteria whose check
    # runs alone (core/checkrun.py).
    verifyBudget: float | None
    verifyJobs: int | None
    runAlone: list[str]
    # ralphstate: a verification stopped before its checks finished (`at`, `by`, `how`,
    # the `criteria` whose check did not finish), until each of those checks ran again.
    verifyInterrupted: dict[str, Any] | None
    stepRetries: dict[str, int]
    fixSteps: list[str]
    readiness: fields.Readiness | None


Raw = dict[str, Any]

# The schema's order, the table's: files are written in it so diffs stay readable.
FIELD_ORDER = schema.FIELD_ORDER
# The fields a loop's life writes (its progress, owner, times, evidence), which a new
# loop always starts afresh: `init --from` ignores them in a template.
RUN_FIELDS = schema.RUN_FIELDS


# What a command says when it is given a name that is empty or only spaces.
BLANK = {
    "criterion": "a criterion needs a name, not only spaces.",
    "step": "a step needs some text, not only spaces.",
}


def blank(name: str) -> bool:
    """A criterion or step name that is empty or only whitespace: refused everywhere."""
    return not name.strip()


def normalise(raw: object) -> State:
    """A complete, checked state from what was read; raises CorruptState if unusable."""
    return _checked(raw)[0]


def _checked(raw: object) -> tuple[State, bool]:
    """`normalise`, and whether a float in it may have been written as a whole number
    too wide to keep (`check_tree`)."""
    if not isinstance(raw, dict):
        raise CorruptState(f"state.json must hold a JSON object, not {type(raw).__name__}")
    try:
        wide = check_tree(raw)
        return _normalise(raw), wide
    except fields.Invalid as exc:
        raise CorruptState(f"state.json: {fields.clipped(str(exc))}") from None


def _normalise(raw: Raw) -> State:
    """Each field of the table read by its check, in the table's order (a field read
    with others, by their group's check, at the first of them); None from a check is
    the field's default. Then the unknown keys, as they were."""
    state: Raw = {}
    for row in schema.ROWS:
        if row.name in state:
            continue  # read with its group
        if row.group is not None:
            state.update(row.group(raw))
            continue
        assert row.read is not None
        value = row.read(raw, row.name)
        state[row.name] = row.initial() if value is None else value
    for key, value in raw.items():
        if key not in state:
            state[key] = value
    return _in_schema_order(state)


def _in_schema_order(state: Raw) -> State:
    """The schema's keys in the schema's order, then unknown keys in the order found."""
    ordered = {key: state[key] for key in FIELD_ORDER if key in state}
    ordered.update((k, v) for k, v in state.items() if k not in ordered)
    return cast(State, ordered)


# -- what can be written back as it was read -----------------------------------------

# The whole numbers orjson writes exactly; it reads a wider one as a float.
_INT_LOW = -(2**63)
_INT_HIGH = 2**64 - 1


def check_tree(raw: dict[str, Any]) -> bool:
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
                    raise fields.Invalid(
                        f"it nests values more than {MAX_STATE_DEPTH} levels deep, which"
                        " ralphstate could not write back"
                    )
                stack.append((item, depth + 1))
            elif isinstance(item, int) and not _INT_LOW <= item <= _INT_HIGH:
                raise fields.Invalid(_too_wide(str(item)))
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


def refuse_wide_integers(data: bytes) -> None:
    """Raise CorruptState when the file writes a whole number wider than 64 bits (orjson
    read it as a float, and would write it back as one). Only asked when `check_tree`
    saw a float that could be one, so the standard json module is imported rarely."""
    import json

    def whole(text: str) -> int:
        if not _INT_LOW <= int(text) <= _INT_HIGH:
            raise fields.Invalid(_too_wide(text))
        return 0

    try:
        json.loads(data, parse_int=whole)
    except fields.Invalid as exc:
        raise CorruptState(f"state.json: {fields.clipped(str(exc))}") from None
    except (ValueError, RecursionError):
        pass  # orjson read it; what json makes of it does not matter


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
        refuse_wide_integers(data)
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
    """A fresh in-progress loop, whose id is `loop_id` (`init` draws a random one), with
    the fields of `extra` a new loop does not start afresh (`RUN_FIELDS` take their
    defaults: iteration 0, in progress, no pause reason, ...)."""
    raw: Raw = {k: v for k, v in (extra or {}).items() if k not in RUN_FIELDS}
    raw.update(
        spec=spec,
        criteria=criteria,
        criteriaStatus={c: bool((extra or {}).get("criteriaStatus", {}).get(c)) for c in criteria},
        steps=steps,
        maxIterations=max_iterations,
        stallLimit=stall_limit,
        completionMarker=marker,
        sessionId=session_id,
        ownerAgent=agent if session_id else None,
        noCriteria=bool(raw.get("noCriteria")),  # written by this version: its choices stand
        loopId=loop_id,
        startedAt=now,
        updatedAt=now,
    )
    state = normalise(raw)
    state["lastProgress"] = progress(state)
    return state


def progress(state: State, marker_seen: bool = False) -> str:
    """A short fingerprint of everything that counts as progress."""
    import hashlib  # OpenSSL's module: only the Stop decision needs it

    basis = orjson.dumps(
        [
            [[c, state["criteriaStatus"].get(c) is True] for c in state["criteria"]],
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
