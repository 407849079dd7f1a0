"""The state's fields one at a time: the records some of them hold (a criterion's
evidence, a mirrored task, what was spent, how far a transcript was read) and the
checks `state.normalise` runs on each.

Every check takes the raw state as read and returns the field's value, or raises
`Invalid` with a sentence that names the field; `state` turns that into CorruptState.
Nothing here knows the whole state, so `state` builds on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal, TypedDict, cast

from ralphstate.core.errors import CorruptState
from ralphstate.core.limits import (
    MAX_CHECK_TIMEOUT,
    MAX_ERRORS,
    MAX_GUARD_CHARS,
    MAX_GUARDS,
    MAX_MIRRORED_TASKS,
    MAX_PROBLEM_CHARS,
    MAX_STATE_DEPTH,
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
    # id of the tree the work tree held (storage/git.py, `snapshot`).
    commit: str | None
    dirty: bool
    tree: str
    # The criterion's first check result, for this command, passed before the loop did
    # any work (core/redgreen.py): this proof says nothing about the work.
    alreadyTrue: bool
    # The check ran in a clean room (storage/cleanroom.py): a temporary worktree of the
    # tracked files, whose tree was `cleanTree`; absent: it ran in the project itself.
    clean: bool
    cleanTree: str


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


def expect_fail(raw: dict[str, Any]) -> list[str]:
    """`expectFail`: the criteria whose check must fail once before a pass counts."""
    return str_list(raw, "expectFail")


def opt_str(raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise Invalid(f"'{key}' must be a string or null")
    return value


def tasks_file(raw: dict[str, Any]) -> str | None:
    name = opt_str(raw, "tasksFile")
    if name is not None and not name.strip():
        raise Invalid("'tasksFile' must name a file or be null")
    return name


def task_list(raw: dict[str, Any]) -> list[Task]:
    """The mirrored task list, checked: at most MAX_MIRRORED_TASKS tasks, each an object
    with a subject; a key it lacks takes its default, a key it adds is kept."""
    value = raw.get("taskList")
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise Invalid("'taskList' must be a list of tasks, each an object with a 'subject'")
    if len(value) > MAX_MIRRORED_TASKS:
        raise Invalid(f"'taskList' holds {len(value)} tasks, more than {MAX_MIRRORED_TASKS}")
    tasks: list[Task] = []
    for i, item in enumerate(value):
        task: dict[str, Any] = {"list": None, "id": None, "subject": None, "status": "pending"}
        task.update(step=None, added=False)
        task.update(item)  # the schema's keys in its order, then the task's own
        where = f"taskList[{i}]"
        subject = task.get("subject")
        if (
            not isinstance(subject, str)
            or not subject.strip()
            or len(subject) > MAX_TASK_SUBJECT_CHARS
        ):
            raise Invalid(
                f"{where}.subject must be some text of at most {MAX_TASK_SUBJECT_CHARS} characters"
            )
        for key in ("list", "id"):
            if task[key] is not None and (
                not isinstance(task[key], str) or len(task[key]) > MAX_TASK_ID_CHARS
            ):
                raise Invalid(
                    f"{where}.{key} must be null or a string of at most {MAX_TASK_ID_CHARS}"
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


def _criteria(raw: dict[str, Any]) -> tuple[list[str], dict[str, bool]]:
    """The criteria and their status. The design notes' shape keeps the criteria in
    `criteriaStatus` alone, so every key of it is a criterion, after the list's."""
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
    return list(dict.fromkeys([*listed, *status_map])), dict(status_map)


def _timeouts(raw: dict[str, Any]) -> dict[str, float]:
    value = raw.get("checkTimeouts") or {}
    if not isinstance(value, dict):
        raise Invalid("'checkTimeouts' must be an object of criterion: seconds")
    for name, seconds in value.items():
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not 0 < seconds <= MAX_CHECK_TIMEOUT
        ):
            raise Invalid(
                f"checkTimeouts[{name!r}] must be a number of seconds above 0 and at most"
                f" {MAX_CHECK_TIMEOUT:g}, not {seconds!r}"
            )
    return dict(value)


def _evidence(raw: dict[str, Any]) -> dict[str, Evidence]:
    value = raw.get("evidence") or {}
    if not isinstance(value, dict):
        raise Invalid("'evidence' must be an object of criterion: {result, ...}")
    for name, entry in value.items():
        if not isinstance(entry, dict) or entry.get("result") not in EVIDENCE_RESULTS:
            raise Invalid(
                f"evidence[{name!r}] must be an object whose 'result' is"
                f" {', '.join(EVIDENCE_RESULTS)}"
            )
    return {name: cast(Evidence, dict(entry)) for name, entry in value.items()}


def verification(raw: dict[str, Any]) -> dict[str, Any]:
    """The spec, the criteria and their status, their checks with timeouts and evidence,
    `verifyOnStop`, `cleanVerify` and `noCriteria`: checked, in that order."""
    spec = raw.get("spec", "")
    if not isinstance(spec, str):
        raise Invalid("'spec' must be a string")
    criteria, status = _criteria(raw)
    checks = raw.get("checks") or {}
    if not isinstance(checks, dict) or not all(isinstance(v, str) for v in checks.values()):
        raise Invalid("'checks' must be an object of criterion: command")
    found: dict[str, Any] = {"spec": spec, "criteria": criteria, "criteriaStatus": status}
    found.update(checks=dict(checks), checkTimeouts=_timeouts(raw), evidence=_evidence(raw))
    verify_on_stop = raw.get("verifyOnStop")
    if verify_on_stop is not None and not isinstance(verify_on_stop, bool):
        raise Invalid(f"'verifyOnStop' must be true, false or null, not {verify_on_stop!r}")
    if verify_on_stop is False and "noCriteria" not in raw:
        # Written before verify-on-stop became the default (with `noCriteria`, which every
        # file since holds): that `false` was the old default, not the person's choice.
        verify_on_stop = None
    found["verifyOnStop"] = verify_on_stop
    clean = raw.get("cleanVerify")
    if clean is not None and not isinstance(clean, bool):
        raise Invalid(f"'cleanVerify' must be true, false or null, not {clean!r}")
    found["cleanVerify"] = clean
    no_criteria = raw.get("noCriteria", False)
    if no_criteria is not None and not isinstance(no_criteria, bool):
        raise Invalid(f"'noCriteria' must be true or false, not {no_criteria!r}")
    found["noCriteria"] = bool(no_criteria)
    return found


def guards(raw: dict[str, Any]) -> list[str] | None:
    """The guarded files' pathspecs (`guards`): null (not guarded), or at most MAX_GUARDS
    of them, each some text of at most MAX_GUARD_CHARS characters."""
    value = raw.get("guards")
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not all(isinstance(v, str) and v.strip() for v in value)
        or len(value) > MAX_GUARDS
        or any(len(v) > MAX_GUARD_CHARS for v in value)
    ):
        raise Invalid(
            f"'guards' must be null or a list of at most {MAX_GUARDS} paths, each some text"
            f" of at most {MAX_GUARD_CHARS} characters"
        )
    return list(dict.fromkeys(value))


def errors(raw: dict[str, Any]) -> list[Any]:
    """The most recent MAX_ERRORS of `errors`."""
    found = raw.get("errors") or []
    if not isinstance(found, list):
        raise Invalid("'errors' must be a list")
    return found[-MAX_ERRORS:]


def _number(value: Any) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and value >= 0
    )


def _usage(raw: dict[str, Any]) -> Usage | None:
    value = raw.get("usage")
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        _number(value.get(key, 0)) for key in ("tokens", "cost", "seconds")
    ):
        raise Invalid("'usage' must be an object of tokens, cost and seconds, each 0 or more")
    return {
        "tokens": int(value.get("tokens", 0)),
        "cost": float(value.get("cost", 0)),
        "seconds": float(value.get("seconds", 0)),
    }


def spending(raw: dict[str, Any], state: dict[str, Any]) -> None:
    """`usage` and the budgets, checked."""
    state["usage"] = _usage(raw)
    for key in ("maxCost", "maxTokens", "maxDuration"):
        state[key] = _budget(raw, key)
    failure = raw.get("lastFailure")
    if failure is not None and not isinstance(failure, dict):
        raise Invalid("'lastFailure' must be an object or null")
    state["lastFailure"] = failure
    state["transcriptUsage"] = _transcript_usage(raw)


# The widest offset `transcriptUsage` may hold: a file position.
_MAX_OFFSET = 2**63 - 1


def _transcript_usage(raw: dict[str, Any]) -> TranscriptUsage | None:
    value = raw.get("transcriptUsage")
    if value is None:
        return None
    bad = Invalid(
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


def _budget(raw: dict[str, Any], key: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    if not _number(value) or value == 0:
        raise Invalid(f"'{key}' must be a number above 0, or null, not {value!r}")
    return int(value) if key == "maxTokens" else float(value)


def clipped(problem: str) -> str:
    """A problem quotes the file's values, which can be huge: one short line."""
    if len(problem) > MAX_PROBLEM_CHARS:
        problem = problem[: MAX_PROBLEM_CHARS - 1] + "…"
    return problem


# The whole numbers orjson writes exactly; it reads a wider one as a float.
_INT_LOW, _INT_HIGH = -(2**63), 2**64 - 1


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
                    raise Invalid(
                        f"it nests values more than {MAX_STATE_DEPTH} levels deep, which"
                        " ralphstate could not write back"
                    )
                stack.append((item, depth + 1))
            elif isinstance(item, int) and not _INT_LOW <= item <= _INT_HIGH:
                raise Invalid(_too_wide(str(item)))
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
            raise Invalid(_too_wide(text))
        return 0

    try:
        json.loads(data, parse_int=whole)
    except Invalid as exc:
        raise CorruptState(f"state.json: {clipped(str(exc))}") from None
    except (ValueError, RecursionError):
        pass  # orjson read it; what json makes of it does not matter
