"""The fields that follow the loop's work across runs and verifications
(docs/explanation/design.md, "The state"):

- `stepRetries`: step → iterations of `ralphstate run` that ended with it still the next
  step, over all runs (`step-retries` pauses the loop when one reaches it); a step done or
  gone from the plan loses its count.
- `fixSteps`: the steps a verification added, one per criterion whose check failed once
  no other step was left (`fix_steps`); each is done while its criterion passes.
- `readiness`: the spec's readiness score `init` gave (`score` 0 to 10, `shape`: `tool`
  or `colleague`: loop/readiness.py), or null.
"""

from __future__ import annotations

from typing import Any, TypedDict

from ralphstate.core.fields import Invalid

SHAPES = ("tool", "colleague")
# What marks a step verification added, in its own text: status, the report and the
# prompt show it as it is.
FIX_SUFFIX = " (added by verification)"
# A template's fields a new loop starts afresh (core.state.RUN_FIELDS).
RUN_KEYS = ("stepRetries", "fixSteps")


class Readiness(TypedDict):
    score: int
    shape: str


def read(raw: dict[str, Any]) -> dict[str, Any]:
    """The three fields from a state file as read (their defaults when missing), checked;
    `Invalid` names the key."""
    retries = raw.get("stepRetries") or {}
    if not isinstance(retries, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in retries.items()
    ):
        raise Invalid("'stepRetries' must map steps to whole numbers")
    fixes = raw.get("fixSteps") or []
    if not isinstance(fixes, list) or not all(isinstance(s, str) and s.strip() for s in fixes):
        raise Invalid("'fixSteps' must be a list of steps")
    readiness = raw.get("readiness")
    if readiness is not None and not _readiness(readiness):
        raise Invalid(
            "'readiness' must be null or an object with 'score' (0 to 10) and"
            " 'shape' (tool or colleague)"
        )
    return {
        "stepRetries": dict(retries),
        "fixSteps": list(dict.fromkeys(fixes)),
        "readiness": readiness,
    }


def _readiness(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    score = value.get("score")
    return (
        isinstance(score, int)
        and not isinstance(score, bool)
        and 0 <= score <= 10
        and value.get("shape") in SHAPES
    )


def fix_step(criterion: str) -> str:
    """The step verification adds for a criterion whose check failed."""
    return f"Fix: {criterion}{FIX_SUFFIX}"


def fix_steps(state: dict[str, Any], passed: dict[str, bool]) -> list[dict[str, Any]]:
    """After a verification whose checks gave `passed` (criterion → passed): a criterion
    that failed gains its fix step once no other step is open (the gap, as the design
    notes' verify loop has it), a fix step whose criterion passed is done, and one whose
    criterion failed again is open again. A loop whose steps are a task file's boxes gains
    none (the file is the plan). Returns the history events."""
    if state.get("tasksFile"):
        return []
    fixes: list[str] = list(state["fixSteps"])
    steps, done = list(state["steps"]), set(state["completedSteps"])
    events: list[dict[str, Any]] = []
    others_open = any(s not in done and s not in fixes for s in steps)
    for criterion, ok in passed.items():
        step = fix_step(criterion)
        if step in fixes:
            if ok and step not in done:
                done.add(step)
                events.append({"event": "fix_step_done", "step": step, "criterion": criterion})
            elif not ok and step in done:
                done.discard(step)
                events.append({"event": "fix_step_open", "step": step, "criterion": criterion})
        elif not ok and not others_open:
            fixes.append(step)
            if step not in steps:
                steps.append(step)
            done.discard(step)
            events.append({"event": "fix_step_added", "step": step, "criterion": criterion})
    if events:
        state["fixSteps"] = fixes
        state["steps"] = steps
        state["completedSteps"] = [s for s in steps if s in done]
        state["remainingSteps"] = [s for s in steps if s not in done]
    return events
