"""What the model and the person read when checks do not fit a hook's time
(docs/explanation/hooks.md, "Long test suites"), and when a verification was stopped
before its checks finished.

A check left to `ralphstate verify` (core/verifyplan.py) proves nothing either way: the
block reason names it, says why it did not run, and gives the one command that runs it
where the model's shell allows the time, never "fix what it reports".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ralphstate.core import checkrun, clock, limits
from ralphstate.core import state as st
from ralphstate.core.render import cap, clip
from ralphstate.core.text import count, noun, visible

# Past this many checks left, the command runs them all rather than name each.
MAX_NAMED_IN_COMMAND = 20
# Who ran a verification, as the person reads it.
WHO = {
    "stop": "the Stop hook's",
    "task": "the task gate's",
    "verify": "`ralphstate verify`'s",
    "run": "`ralphstate run`'s",
    "init": "`ralphstate init`'s",
}
HOW = {"terminated": "stopped", "interrupted": "interrupted", "killed": "killed"}


class Left(Protocol):
    """A check left to `ralphstate verify` (core/verifyplan.py `Deferred`)."""

    @property
    def criterion(self) -> str: ...
    @property
    def last(self) -> float | None: ...
    @property
    def cut(self) -> bool: ...


class Leftover(Protocol):
    """What a hook left to `ralphstate verify` (verify/pipeline.py `Verification`): the
    checks, the budget they did not fit, whether the checks run in a clean room."""

    @property
    def deferred(self) -> Sequence[Left]: ...
    @property
    def budget(self) -> float: ...
    @property
    def clean(self) -> bool: ...


def _why(left: Left) -> str:
    if left.cut:
        return "cut short by the stop's time"
    return "not timed yet" if left.last is None else f"{left.last:.0f}s last time"


def verify_command(state: st.State, left: Sequence[Left], clean: bool) -> str:
    """`ralphstate verify --clean 1 3`: the checks left, by their numbers (all of them
    past MAX_NAMED_IN_COMMAND); `--clean` where the Stop hook verifies in a clean room."""
    numbers = {name: i for i, name in enumerate(state["criteria"], 1)}
    words = ["ralphstate", "verify", *(["--clean"] if clean else [])]
    if len(left) <= MAX_NAMED_IN_COMMAND:
        words += [str(numbers[d.criterion]) for d in left if d.criterion in numbers]
    return " ".join(words)


def _minutes(state: st.State, left: Sequence[Left], budget: float) -> str:
    """How long to let the command run: half again its estimate, in whole minutes."""
    planned = [(d.criterion, d.last, d.criterion in checkrun.alone(state)) for d in left]
    if any(last is None for _, last, _ in planned):
        return "as long as your shell allows (10 minutes or more)"
    seconds = max(checkrun.makespan(planned, checkrun.jobs(state)), budget)
    return f"at least {max(2, math.ceil(seconds * 1.5 / 60))} minutes"


def left_lines(state: st.State, left: Sequence[Left], budget: float, clean: bool) -> list[str]:
    """The checks left to the model, why, and the command that runs them."""
    n = len(left)
    named = "; ".join(f"{clip(d.criterion, 80)} ({_why(d)})" for d in left[:5])
    if n > 5:
        named += f"; and {n - 5} more"
    them = "it" if n == 1 else "them"
    room = " in a clean room," if clean else ""
    first = (
        f"ralphstate did not run {count(n, 'check')} here: {'it does' if n == 1 else 'they do'}"
        f" not fit the {budget:g}s a stop may spend on checks ({named}). Nothing failed,"
        " and nothing is set back."
    )
    how = (
        f"Run {them} yourself: your shell's commands may run longer than a hook. Give this"
        f" command a timeout of {_minutes(state, left, budget)}, or run it in the"
        " background and wait for it to end:"
    )
    after = (
        f"ralphstate runs the checks as the Stop hook would,{room} and records what they"
        " prove; a check verified on the code as it is then is not run again at a stop."
    )
    return [first, how, f"  {verify_command(state, left, clean)}", after]


def block_left(state: st.State, left: Sequence[Left], budget: float, clean: bool) -> str:
    """The reason the model reads at a claimed completion whose checks did not all fit
    the stop's budget, the others having passed or being verified on this code."""
    lines = []
    if state["continueMessage"]:
        lines += [clip(state["continueMessage"], limits.MAX_SPEC_CHARS), ""]
    lines.append(
        f"You claimed every criterion. ralphstate loop, iteration {state['iteration'] + 1}"
        f" of {state['maxIterations']}:"
    )
    lines += left_lines(state, left, budget, clean)
    lines.append(
        f"Then say {clip(state['completionMarker'])} (outside code) again, once"
        f" {'it passes' if len(left) == 1 else 'they pass'}."
    )
    return cap("\n".join(lines), limits.MAX_REASON_CHARS)


def reason(state: st.State, found: Leftover, other: str, details: dict[str, object]) -> str:
    """The block's reason at a claimed completion with checks left (`found`):
    `block_left` when nothing else blocks it, else the `other` reason (failing checks
    first) with the checks left said before it. The block's history `details` name
    them (`left`)."""
    left = found.deferred
    budget = found.budget
    clean = found.clean
    details["left"] = [d.criterion for d in left][:20]
    if not other:
        return block_left(state, left, budget, clean)
    lines = left_lines(state, left, budget, clean)
    lines[0] = lines[0].replace("Nothing failed, and nothing is set back.", "")
    lines[1] = "Once the failures below are fixed, " + lines[1][0].lower() + lines[1][1:]
    return cap("\n".join([*[ln.rstrip() for ln in lines], "", other]), limits.MAX_REASON_CHARS)


def task_left(state: st.State, found: Leftover) -> str:
    """Why the task gate keeps a task open whose checks did not fit its budget (on
    stderr, which the client gives the model)."""
    lines = left_lines(state, found.deferred, found.budget, found.clean)
    head = "ralphstate: this task stays open until its checks have run."
    return "\n".join([head, *lines, "Then complete the task again."])


# -- a verification stopped before its checks finished -------------------------------


def stopped(state: Mapping[str, Any]) -> str:
    """`the Stop hook's verification was stopped 3m ago before the checks of tests pass
    and e2e finished`, or "" when none was."""
    mark = state.get("verifyInterrupted")
    if not mark:
        return ""
    names = [visible(clip(n, 60)) for n in mark["criteria"][:3]]
    more = len(mark["criteria"]) - len(names)
    listed = ", ".join(names) + (f" and {more} more" if more > 0 else "")
    who = WHO.get(str(mark["by"]), "a")
    n = len(mark["criteria"])
    return (
        f"{who} verification was {HOW.get(str(mark['how']), 'stopped')}"
        f" {clock.age(mark['at'])} ago before the {noun(n, 'check')} of {listed} finished"
    )


def stopped_line(state: Mapping[str, Any]) -> str:
    """For the person (`status`, SessionStart's line): what was stopped, and what to
    do; "" when nothing was."""
    said = stopped(state)
    if not said:
        return ""
    them = "it" if len(state["verifyInterrupted"]["criteria"]) == 1 else "them"
    return f"{said[0].upper()}{said[1:]}: `ralphstate verify` runs {them}."


def stopped_context(state: Mapping[str, Any]) -> str:
    """For the model (SessionStart's context); "" when nothing was stopped."""
    said = stopped(state)
    if not said:
        return ""
    clean = " --clean" if state.get("cleanVerify") is not False else ""
    return (
        f"{said[0].upper()}{said[1:]}, so they proved nothing: run `ralphstate verify{clean}`"
        " yourself, with a long timeout, before you claim completion."
    )
