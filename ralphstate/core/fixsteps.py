"""The steps a verification adds (`fixSteps`, docs/reference/run.md, "Gaps become fix
steps"): once no other step is open, each criterion whose check failed gains the step
`Fix: NAME (added by verification)`, once; it is done while its check passes and open
again when it fails. Adding and closing them; core/fields.py reads the field.
"""

from __future__ import annotations

from typing import Any

# What marks a step verification added, in its own text: status, the report and the
# prompt show it as it is.
FIX_SUFFIX = " (added by verification)"


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
    steps = list(state["steps"])
    done = set(state["completedSteps"])
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
