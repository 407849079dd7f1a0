"""The state's fields one at a time: the records some of them hold (a criterion's
evidence, a mirrored task, what was spent, how far a transcript was read, the spec's
readiness) and the checks of the fields that hold records, lists and maps.

Every check takes the raw state as read and the field's key (core/schema.py names the
check of each field) and returns the field's value, or raises `Invalid` with a sentence
that names the field; `state` turns that into CorruptState. A few fields are read
together, because one's value depends on another's (`criteria`, `plan`): those return
the fields they read. The fields that hold one value are checked in core/scalars.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal, TypedDict, cast

from ralphstate.core.limits import (
    MAX_CHECK_TIMEOUT,
    MAX_ERRORS,
    MAX_GUARD_CHARS,
    MAX_GUARDS,
    MAX_MIRRORED_TASKS,
    MAX_PROBLEM_CHARS,
    MAX_TASK_ID_CHARS,
    MAX_TASK_SUBJECT_CHARS,
)
from ralphstate.core.typos import near_miss

# What backs a criterion's status: its check passed or failed, or someone said so.
EvidenceResult = Literal["verified", "claimed", "failing"]
EVIDENCE_RESULTS: tuple[EvidenceResult, ...] = ("verified", "claimed", "failing")


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
    # id of the tree the work tree held (storage/repo/git.py, `snapshot`).
    commit: str | None
    dirty: bool
    tree: str
    # The criterion's first check result, for this command, passed before the loop did
    # any work (core/redgreen.py): this proof says nothing about the work.
    alreadyTrue: bool
    # The check ran in a clean room (storage/repo/cleanroom.py): a temporary worktree of the
    # tracked files, whose tree was `cleanTree`; absent: it ran in the project itself.
    clean: bool
    cleanTree: str
    # How many tests the check's output said ran (verify/strength.py): `runner`,
    # `collected`, `ran`, `passed`, `failed`, `skipped`; null: exit code only. `weakened`:
    # why this pass ran fewer tests than its baseline (docs/explanation/proof.md).
    strength: dict[str, Any] | None
    weakened: str
    # Who produced it (core/provenance.py), and whether it ran confined
    # (verify/confine.py: no write outside its room, no home, no store, no network).
    by: str
    confined: bool


# A task of the agent's task list, as the loop mirrors it (`taskList`).
TaskStatus = Literal["pending", "in_progress", "completed"]
TASK_STATUSES: tuple[TaskStatus, ...] = ("pending", "in_progress", "completed")


class Task(TypedDict):
    """One task of the agent's task list (`taskList[i]`, docs/explanation/design.md "Task tools"):
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
    docs/explanation/design.md, "Tokens inside a session")."""

    session: str
    file: str
    offset: int
    lastMessageId: str | None
    resync: bool
    midLine: bool
    countedAt: str | None


class Readiness(TypedDict):
    """The spec's readiness `init` gave it (`readiness`; loop/readiness.py): a score from 0
    to 10, and its shape, one of SHAPES."""

    score: int
    shape: str


# What a spec is shaped for: a tool run unattended, or a colleague checked in with.
SHAPES = ("tool", "colleague")


class Invalid(Exception):
    """A field the state cannot hold: the text says which, and why."""


def str_list(raw: dict[str, Any], key: str) -> list[str]:
    value = raw.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Invalid(f"'{key}' must be a list of strings")
    _no_blank(key, value)
    return list(dict.fromkeys(value))  # duplicates read as one


def _no_blank(key: str, names: Iterable[str]) -> None:
    if any(not name.strip() for name in names):
        raise Invalid(f"'{key}' holds a blank name; give every item some text, or remove it")


def task_list(raw: dict[str, Any], key: str) -> list[Task]:
    """The mirrored task list, checked: at most MAX_MIRRORED_TASKS tasks, each an object
    with a subject; a key it lacks takes its default, a key it adds is kept."""
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise Invalid(f"'{key}' must be a list of tasks, each an object with a 'subject'")
    if len(value) > MAX_MIRRORED_TASKS:
        raise Invalid(f"'{key}' holds {len(value)} tasks, more than {MAX_MIRRORED_TASKS}")
    tasks: list[Task] = []
    for i, item in enumerate(value):
        task: dict[str, Any] = {
            "list": None,
            "id": None,
            "subject": None,
            "status": "pending",
            "step": None,
            "added": False,
        }
        task.update(item)  # the schema's keys in its order, then the task's own
        where = f"{key}[{i}]"
        subject = task.get("subject")
        if (
            not isinstance(subject, str)
            or not subject.strip()
            or len(subject) > MAX_TASK_SUBJECT_CHARS
        ):
            raise Invalid(
                f"{where}.subject must be some text of at most {MAX_TASK_SUBJECT_CHARS} characters"
            )
        for name in ("list", "id"):
            if task[name] is not None and (
                not isinstance(task[name], str) or len(task[name]) > MAX_TASK_ID_CHARS
            ):
                raise Invalid(
                    f"{where}.{name} must be null or a string of at most {MAX_TASK_ID_CHARS}"
                    " characters"
                )
        if task["status"] not in TASK_STATUSES:
            raise Invalid(f"{where}.status must be one of {', '.join(TASK_STATUSES)}")
        if task["step"] is not None and (
            not isinstance(task["step"], str) or not task["step"].strip()
        ):
            raise Invalid(f"{where}.step must be null or the text of a step")
        if not isinstance(task["added"], bool):
            raise Invalid(f"{where}.added must be true or false")
        tasks.append(cast(Task, task))
    return tasks


def criteria(raw: dict[str, Any]) -> dict[str, Any]:
    """`criteria` and `criteriaStatus`, read together. The design notes' shape keeps the
    criteria in `criteriaStatus` alone, so every key of it is a criterion, after the
    list's."""
    listed = str_list(raw, "criteria")
    status_map = raw.get("criteriaStatus") or {}
    if not isinstance(status_map, dict):
        raise Invalid("'criteriaStatus' must be an object of criterion: true/false")
    for name, value in status_map.items():
        if not isinstance(value, bool):
            raise Invalid(f"criteriaStatus[{name!r}] must be true or false, not {value!r}")
    _no_blank("criteriaStatus", status_map)
    known = set(listed)  # one lookup a key: scanning the list for each was quadratic
    typo = near_miss([n for n in status_map if known and n not in known], listed)
    if typo:  # a hand edit's typo would add a criterion
        raise Invalid(
            f"criteriaStatus[{typo[0]!r}] is not in 'criteria'; did you mean"
            f" {typo[1]!r}? (a new criterion goes in 'criteria' too)"
        )
    return {
        "criteria": list(dict.fromkeys([*listed, *status_map])),
        "criteriaStatus": dict(status_map),
    }


def plan(raw: dict[str, Any]) -> dict[str, Any]:
    """`steps`, `completedSteps` and `remainingSteps`, read together: a step named in any
    of them is a step (the plan's, then those only added elsewhere), the steps done are
    in the plan's order, and the steps left are derived, never trusted."""
    listed = str_list(raw, "steps")
    completed = str_list(raw, "completedSteps")
    remaining = str_list(raw, "remainingSteps")
    steps = list(dict.fromkeys([*listed, *completed, *remaining]))
    done = set(completed)
    return {
        "steps": steps,
        "completedSteps": [s for s in steps if s in done],
        "remainingSteps": [s for s in steps if s not in done],
    }


def checks(raw: dict[str, Any], key: str) -> dict[str, str]:
    """Criterion → the command whose exit code 0 proves it."""
    value = raw.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise Invalid(f"'{key}' must be an object of criterion: command")
    return dict(value)


def rubrics(raw: dict[str, Any], key: str) -> dict[str, str]:
    """Criterion → the rubric a reviewer grades it by (core/grading.py)."""
    value = raw.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise Invalid(f"'{key}' must be an object of criterion: rubric")
    return dict(value)


def grades(raw: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    """Criterion → the reviewer's last verdict, as ralphstate recorded it (a record to
    read: no completion counts it, core/grading.py)."""
    value = raw.get(key) or {}
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise Invalid(f"'{key}' must be an object of criterion: {{result, ...}}")
    return {name: dict(entry) for name, entry in value.items()}


def timeouts(raw: dict[str, Any], key: str) -> dict[str, float]:
    value = raw.get(key) or {}
    if not isinstance(value, dict):
        raise Invalid(f"'{key}' must be an object of criterion: seconds")
    for name, seconds in value.items():
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not 0 < seconds <= MAX_CHECK_TIMEOUT
        ):
            raise Invalid(
                f"{key}[{name!r}] must be a number of seconds above 0 and at most"
                f" {MAX_CHECK_TIMEOUT:g}, not {seconds!r}"
            )
    return dict(value)


def evidence(raw: dict[str, Any], key: str) -> dict[str, Evidence]:
    value = raw.get(key) or {}
    if not isinstance(value, dict):
        raise Invalid(f"'{key}' must be an object of criterion: {{result, ...}}")
    for name, entry in value.items():
        if not isinstance(entry, dict) or entry.get("result") not in EVIDENCE_RESULTS:
            raise Invalid(
                f"{key}[{name!r}] must be an object whose 'result' is {', '.join(EVIDENCE_RESULTS)}"
            )
    return {name: cast(Evidence, dict(entry)) for name, entry in value.items()}


def guards(raw: dict[str, Any], key: str) -> list[str] | None:
    """The guarded files' pathspecs (`guards`): null (not guarded), or at most MAX_GUARDS
    of them, each some text of at most MAX_GUARD_CHARS characters."""
    value = raw.get(key)
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not all(isinstance(v, str) and v.strip() for v in value)
        or len(value) > MAX_GUARDS
        or any(len(v) > MAX_GUARD_CHARS for v in value)
    ):
        raise Invalid(
            f"'{key}' must be null or a list of at most {MAX_GUARDS} paths, each some text"
            f" of at most {MAX_GUARD_CHARS} characters"
        )
    return list(dict.fromkeys(value))


def errors(raw: dict[str, Any], key: str) -> list[Any]:
    """The most recent MAX_ERRORS of `errors`."""
    found = raw.get(key) or []
    if not isinstance(found, list):
        raise Invalid(f"'{key}' must be a list")
    return found[-MAX_ERRORS:]


def step_retries(raw: dict[str, Any], key: str) -> dict[str, int]:
    """Step → a count, 0 or more (`stepRetries`)."""
    retries = raw.get(key) or {}
    if not isinstance(retries, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in retries.items()
    ):
        raise Invalid(f"'{key}' must map steps to whole numbers")
    return dict(retries)


def step_list(raw: dict[str, Any], key: str) -> list[str]:
    """A list of steps, each some text; duplicates read as one (`fixSteps`)."""
    steps = raw.get(key) or []
    if not isinstance(steps, list) or not all(isinstance(s, str) and s.strip() for s in steps):
        raise Invalid(f"'{key}' must be a list of steps")
    return list(dict.fromkeys(steps))


def readiness(raw: dict[str, Any], key: str) -> Readiness | None:
    value = raw.get(key)
    if value is None:
        return None
    score = value.get("score") if isinstance(value, dict) else None
    if (
        not isinstance(score, int)
        or isinstance(score, bool)
        or not 0 <= score <= 10
        or value.get("shape") not in SHAPES
    ):
        raise Invalid(
            f"'{key}' must be null or an object with 'score' (0 to 10) and"
            " 'shape' (tool or colleague)"
        )
    return cast(Readiness, value)


def number(value: Any) -> bool:
    """A number of 0 or more, finite, never a bool: what a count, a cost or a span is."""
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and value >= 0
    )


def usage(raw: dict[str, Any], key: str) -> Usage | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        number(value.get(key, 0)) for key in ("tokens", "cost", "seconds")
    ):
        raise Invalid(f"'{key}' must be an object of tokens, cost and seconds, each 0 or more")
    return {
        "tokens": int(value.get("tokens", 0)),
        "cost": float(value.get("cost", 0)),
        "seconds": float(value.get("seconds", 0)),
    }


# The widest offset `transcriptUsage` may hold: a file position.
_MAX_OFFSET = 2**63 - 1


def transcript_usage(raw: dict[str, Any], key: str) -> TranscriptUsage | None:
    value = raw.get(key)
    if value is None:
        return None
    bad = Invalid(
        f"'{key}' must be null or an object of session, file (strings), offset"
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


def clipped(problem: str) -> str:
    """A problem quotes the file's values, which can be huge: one short line."""
    if len(problem) > MAX_PROBLEM_CHARS:
        problem = problem[: MAX_PROBLEM_CHARS - 1] + "…"
    return problem
