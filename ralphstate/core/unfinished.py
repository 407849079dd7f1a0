"""What the model and the person read when checks do not fit a hook's time
(docs/explanation/hooks.md, "Long test suites"), and when a verification was stopped
before its checks finished.

A check that does not fit the hook (core/verifyplan.py) proves nothing either way until
ralphstate's own verification of it in the background ends (verify/background.py): the
block reason names it, says why it did not run here, how long the background
verification has run, and that the agent's own `ralphstate verify` does not stand for
it; never "fix what it reports".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ralphstate.core import clock, limits
from ralphstate.core import state as st
from ralphstate.core.render import cap, clip
from ralphstate.core.text import count, noun, visible

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
    """A check left to the background verification (core/verifyplan.py `Deferred`)."""

    @property
    def criterion(self) -> str: ...
    @property
    def last(self) -> float | None: ...
    @property
    def cut(self) -> bool: ...


class Leftover(Protocol):
    """What a hook left to the background verification (verify/pipeline.py `Verification`): the
    checks, the budget they did not fit, whether the checks run in a clean room."""

    @property
    def deferred(self) -> Sequence[Left]: ...
    @property
    def budget(self) -> float: ...
    @property
    def clean(self) -> bool: ...
    @property
    def background(self) -> float | None: ...


def _why(left: Left) -> str:
    if left.cut:
        return "cut short by the stop's time"
    return "not timed yet" if left.last is None else f"{left.last:.0f}s last time"


def _span(seconds: float) -> str:
    """`45s`, `3m 5s`: how long the background verification has run."""
    whole = max(0, int(seconds))
    return f"{whole // 60}m {whole % 60}s" if whole >= 60 else f"{whole}s"


def left_lines(state: st.State, found: Leftover) -> list[str]:
    """The checks left to ralphstate's background verification, why, and what to do."""
    left, budget = found.deferred, found.budget
    n = len(left)
    named = "; ".join(f"{clip(d.criterion, 80)} ({_why(d)})" for d in left[:5])
    if n > 5:
        named += f"; and {n - 5} more"
    first = (
        f"ralphstate did not run {count(n, 'check')} here: {'it does' if n == 1 else 'they do'}"
        f" not fit the {budget:g}s a stop may spend on checks ({named}). Nothing failed,"
        " and nothing is set back."
    )
    room = " in a clean room," if found.clean else ""
    running = _span(found.background or 0.0)
    how = (
        f"ralphstate is running {'it' if n == 1 else 'them'} itself,{room} in the background"
        f" (running for {running} so far), as the Stop hook would. Your own `ralphstate"
        " verify` does not stand for it: its pass is information for you, never what ends"
        " the loop."
    )
    after = (
        "A stop takes the result once it is there, while the code and the checks are"
        " as they are now; a change to either starts the verification again."
    )
    return [first, how, after]


def block_left(state: st.State, found: Leftover) -> str:
    """The reason the model reads at a claimed completion whose checks did not all fit
    the stop's budget, the others having passed or being verified on this code."""
    lines = []
    if state["continueMessage"]:
        lines += [clip(state["continueMessage"], limits.MAX_SPEC_CHARS), ""]
    lines.append(
        f"You claimed every criterion. ralphstate loop, iteration {state['iteration'] + 1}"
        f" of {state['maxIterations']}:"
    )
    lines += left_lines(state, found)
    lines.append(f"Wait a while, then say {clip(state['completionMarker'])} (outside code) again.")
    return cap("\n".join(lines), limits.MAX_REASON_CHARS)


def reason(state: st.State, found: Leftover, other: str, details: dict[str, object]) -> str:
    """The block's reason at a claimed completion with checks left (`found`):
    `block_left` when nothing else blocks it, else the `other` reason (failing checks
    first) with the checks left said before it. The block's history `details` name
    them (`left`)."""
    details["left"] = [d.criterion for d in found.deferred][:20]
    if not other:
        return block_left(state, found)
    lines = left_lines(state, found)
    lines[0] = lines[0].replace("Nothing failed, and nothing is set back.", "")
    return cap("\n".join([*[ln.rstrip() for ln in lines], "", other]), limits.MAX_REASON_CHARS)


def task_left(state: st.State, found: Leftover) -> str:
    """Why the task gate keeps a task open whose checks did not fit its budget (on
    stderr, which the client gives the model)."""
    lines = left_lines(state, found)
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
        f"{said[0].upper()}{said[1:]}, so they proved nothing: the Stop hook runs them again"
        f" at your next claim (`ralphstate verify{clean}` shows you what they say first; its"
        " pass is information for you, not what ends the loop)."
    )
