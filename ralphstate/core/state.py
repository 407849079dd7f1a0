"""The loop state: schema version 1, tolerant reading, stable writing.

The state is a plain dict with the camelCase keys of the schema, because agents
and people write the file by hand. `normalise` turns whatever was read into a
complete, checked state (defaults filled, `remainingSteps` derived, unknown keys
kept); `dumps` writes it back in the schema's order, unknown keys last. Each field's
check, and the records fields hold, are in `fields`; what the state answers is in
`queries`, what it has spent against its budgets in `budgets`.

Schema versions:
- (none): the seed's format, before `version` existed; read as version 1.
- 1: the table in docs/explanation/design.md ("The state"), in `State` below.
"""

from __future__ import annotations

import math
from typing import Any, Literal, TypedDict, cast

import orjson

from ralphstate.core import checkrun, fields, workfields
from ralphstate.core.errors import CorruptState
from ralphstate.core.limits import MAX_ERRORS, MAX_PROBLEM_CHARS
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
# The agents whose sessions can own a loop: a module each in agents/, named by
# agents/table.py (tests/agents/test_table.py holds the two lists together).
AgentName = Literal["claude", "codex", "gemini", "cursor", "copilot", "opencode"]
# The agent a `sessionId` belongs to when the file does not say.
DEFAULT_AGENT: AgentName = "claude"


class State(TypedDict):
    """A normalised state.json (docs/explanation/design.md, "The state"). Keys a file has beyond
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
    # changes a person reviews (storage/guarded.py); null: not guarded.
    guards: list[str] | None
    # ralphstate: the criteria whose check must fail once before a pass counts (red before
    # green, core/redgreen.py): a check that passes before it ever failed proves nothing.
    expectFail: list[str]
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
    stepRetries: dict[str, int]  # ralphstate: these three are core/workfields.py's
    fixSteps: list[str]
    readiness: workfields.Readiness | None


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
    "verifyInterrupted",
    *workfields.RUN_KEYS,
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
        "cleanVerify": None,
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
        "boxCriteria": [],
        "taskList": [],
        "transcriptUsage": None,
        "guards": None,
        "expectFail": [],
        "ownerTimeout": None,
        "verifyBudget": None,
        "verifyJobs": None,
        "runAlone": [],
        "verifyInterrupted": None,
    }


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
        raise fields.Invalid(f"'{key}' must be a whole number")
    if value < lowest or value > MAX_ITERATIONS_CEILING:
        raise fields.Invalid(
            f"'{key}' must be between {lowest} and {MAX_ITERATIONS_CEILING}, not {value}"
        )
    return value


def normalise(raw: object) -> State:
    """A complete, checked state from what was read; raises CorruptState if unusable."""
    return _checked(raw)[0]


def _checked(raw: object) -> tuple[State, bool]:
    """`normalise`, and whether a float in it may have been written as a whole number
    too wide to keep (`fields.check_tree`)."""
    if not isinstance(raw, dict):
        raise CorruptState(f"state.json must hold a JSON object, not {type(raw).__name__}")
    try:
        wide = fields.check_tree(raw)
        return _normalise(raw), wide
    except fields.Invalid as exc:
        raise CorruptState(f"state.json: {fields.clipped(str(exc))}") from None


# The fields that hold a string or null.
_TEXTS = (
    "continueMessage",
    "pauseReason",
    "sessionId",
    "ownerAgent",
    "loopId",
    "startedAt",
    "updatedAt",
    "lastCheckpoint",
    "lastProgress",
)


def _normalise(raw: Raw) -> State:
    version = raw.get("version", SCHEMA_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise fields.Invalid(f"'version' must be a positive whole number, not {version!r}")
    if version > SCHEMA_VERSION:
        raise CorruptState(
            f"state.json has schema version {version}, newer than this ralphstate"
            f" understands ({SCHEMA_VERSION}); upgrade ralphstate to use it"
        )
    state = _defaults()
    state.update(fields.verification(raw))
    steps, completed, remaining = (
        fields.str_list(raw, key) for key in ("steps", "completedSteps", "remainingSteps")
    )
    # A step named anywhere is a step; order: the plan, then what was only added elsewhere.
    set_steps(cast(State, state), [*steps, *completed, *remaining], completed)
    _counts(raw, state)
    for key in _TEXTS:
        state[key] = fields.opt_str(raw, key)
    state["tasksFile"] = fields.tasks_file(raw)
    state["boxCriteria"] = fields.str_list(raw, "boxCriteria")
    state["taskList"] = fields.task_list(raw)
    state["guards"] = fields.guards(raw)
    state["expectFail"] = fields.expect_fail(raw)
    state.update(checkrun.settings(raw), **workfields.read(raw))
    # An owner is a session of one agent; files from before `ownerAgent` were Claude Code's.
    state["ownerAgent"] = (state["ownerAgent"] or DEFAULT_AGENT) if state["sessionId"] else None
    fields.spending(raw, state)
    state["ownerTimeout"] = _seconds(raw, "ownerTimeout")
    state["errors"] = fields.errors(raw)
    for key, value in raw.items():
        if key not in state:
            state[key] = value
    state["version"] = SCHEMA_VERSION
    return _in_schema_order(state)


def _counts(raw: Raw, state: Raw) -> None:
    """The iteration and its limits, the completion marker and the status, checked."""
    state["iteration"] = _int(raw, "iteration", 0, 0)
    state["maxIterations"] = _int(raw, "maxIterations", DEFAULT_MAX_ITERATIONS, 1)
    state["stallLimit"] = _int(raw, "stallLimit", DEFAULT_STALL_LIMIT, 1)
    state["blocksWithoutProgress"] = _int(raw, "blocksWithoutProgress", 0, 0)
    marker = raw.get("completionMarker") or DEFAULT_MARKER
    if not isinstance(marker, str) or not marker.strip():
        raise fields.Invalid("'completionMarker' must be a non-empty string")
    problem = marker_problem(marker)
    if problem:
        raise fields.Invalid(f"'completionMarker' is refused: {problem.rstrip('.')}")
    state["completionMarker"] = marker
    status = raw.get("status", "in_progress")
    if status not in STATUSES:
        raise fields.Invalid(f"'status' must be one of {', '.join(STATUSES)}, not {status!r}")
    state["status"] = status


def _seconds(raw: Raw, key: str) -> float | None:
    """A span of seconds, 0 or more, or null."""
    value = raw.get(key)
    if value is None:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not (math.isfinite(value) and value >= 0):
        raise fields.Invalid(f"'{key}' must be a number of seconds, 0 or more, or null")
    return float(value)


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
        fields.refuse_wide_integers(data)
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
