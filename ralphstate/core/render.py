"""The words ralphstate says: block reasons for the model, the task gate's refusals,
one-line messages for the person, and the quoting and clipping they share (the
context SessionStart restores is in `restore`). Free text from the state is bounded here."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from ralphstate.core import limits, provenance, queries, redgreen
from ralphstate.core import state as st
from ralphstate.core.text import all_of, count, noun, visible

# The one sentence on checks that may not run here (`storage/peruser/truststore.py`); every message
# that says so builds on it.
NOT_TRUSTED = (
    "not trusted on this machine (changed outside ralphstate, or they came with the repository)"
)
_SAFE = re.compile(r"^[\w .,:/@%+=-]*$")
# The markers that frame the loop's state in the SessionStart context; text from the
# state never carries them, so it cannot end the frame early.
_FRAME = re.compile(r"<(/?)(loop-state)>", re.IGNORECASE)


def clip(text: str, size: int = limits.MAX_ITEM_CHARS) -> str:
    """One line, at most `size` characters, without the context's frame markers."""
    text = _FRAME.sub(r"‹\1\2›", " ".join(text.split()))  # noqa: RUF001 - on purpose
    return text if len(text) <= size else text[: size - 1] + "…"


def quote(text: str) -> str:
    """Quote an argument so the command can be pasted into a shell as it is."""
    if _SAFE.match(text):
        return f'"{text}"'
    return "'" + text.replace("'", "'\"'\"'") + "'"


def command(verb: str, name: str, after: str = "", *, options: str = "") -> str:
    """`ralphstate VERB NAME AFTER`, to be run exactly as quoted: the name is quoted for
    a shell, and a name that starts with "-" (`--help`, `-c`) comes after `--`, so it is
    never read as an option (the `options` then come before the `--`)."""
    parts = ["ralphstate", verb]
    if name.startswith("-"):
        parts += [options, "--", quote(name), after]
    else:
        parts += [quote(name), after, options]
    return " ".join(p for p in parts if p)


class CheckFailure(Protocol):
    """A check that failed when the Stop hook verified a claimed completion."""

    @property
    def criterion(self) -> str: ...
    @property
    def command(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def duration_ms(self) -> int: ...
    @property
    def output_tail(self) -> str: ...
    @property
    def clean_tree(self) -> str | None: ...


def bounded(items: list[str], size: int = limits.MAX_LIST_ITEMS) -> list[str]:
    """At most `size` items, each clipped, and a last line that says how many are left out."""
    shown = [clip(i) for i in items[:size]]
    if len(items) > size:
        shown.append(f"… and {len(items) - size} more (`ralphstate status --all` lists them all)")
    return shown


def cap(text: str, size: int) -> str:
    """`text` cut to at most `size` characters, the cut marked."""
    return text if len(text) <= size else text[: size - 1] + "…"


def _tail_share(count: int) -> int:
    """Each of `count` shown checks' part of `limits.MAX_REASON_OUTPUT_CHARS` for its
    output's tail, at least 200 characters."""
    return max(200, limits.MAX_REASON_OUTPUT_CHARS // max(1, count))


def _output_tail(text: str, size: int) -> list[str]:
    """The end of a check's output, at most `size` characters, indented."""
    if len(text) > size:
        text = "…" + text[len(text) - size + 1 :]
    return ["    " + line for line in text.splitlines()]


def check_failures(failures: Sequence[CheckFailure]) -> list[str]:
    """Lines on the checks that failed at a claimed completion, each with its output's
    tail; all the tails together stay within `limits.MAX_REASON_OUTPUT_CHARS`."""
    lines = [
        (
            f"You claimed every criterion; ralphstate ran the checks and {len(failures)} failed."
            " Their criteria are set back to not verified:"
        )
    ]
    shown = failures[: limits.MAX_LIST_ITEMS]
    share = _tail_share(len(shown))
    for failure in shown:
        lines.append(
            f"- {clip(failure.criterion)}: `{clip(failure.command, 200)}` {failure.summary}"
            f" ({failure.duration_ms / 1000:.1f}s)"
            + ("; the end of its output:" if failure.output_tail else "; no output.")
        )
        lines += _output_tail(failure.output_tail, share)
    if len(failures) > len(shown):
        lines.append(f"- … and {len(failures) - len(shown)} more (`ralphstate status`)")
    if any(failure.clean_tree for failure in shown):
        # Plain `verify` runs in the work tree, where an untracked file may pass it.
        lines.append(
            "Fix what they report; `ralphstate verify --clean` runs the checks again as they"
            " ran here, in a clean room (plain `ralphstate verify` runs them in the work tree)."
        )
    else:
        lines.append("Fix what they report; `ralphstate verify` runs the checks again now.")
    return [*lines, ""]


def task_refused(failures: Sequence[CheckFailure]) -> str:
    """Why TaskCompleted refuses a task (on stderr, which Claude Code gives the model):
    for each failing check of a criterion the task is tied to, one line naming the
    criterion and the command, then the end of its output, each line made safe
    (`visible`); all the tails together within `limits.MAX_REASON_OUTPUT_CHARS`."""
    lines: list[str] = []
    shown = failures[: limits.MAX_LIST_ITEMS]
    share = _tail_share(len(shown))
    for failure in shown:
        lines.append(
            f"ralphstate: this task stays open: the check of criterion"
            f' "{visible(clip(failure.criterion))}", `{visible(clip(failure.command, 200))}`,'
            f" failed ({visible(failure.summary)}), and the criterion is set back to not"
            " verified; fix what it reports, then complete the task again."
            + (" The end of its output:" if failure.output_tail else " It printed nothing.")
        )
        lines += [visible(line) for line in _output_tail(failure.output_tail, share)]
    if len(failures) > len(shown):
        lines.append(f"… and {len(failures) - len(shown)} more (`ralphstate status`)")
    return "\n".join(lines)


def task_unchecked(task: str, criteria: list[str]) -> str:
    """The person's notice when a task tied to criteria with checks was completed
    without running them, because the checks are not trusted here."""
    return (
        f'ralphstate: the task "{visible(clip(task, 80))}" was let through without running'
        f" the {noun(len(criteria), 'check')} of {_names(criteria)}: the loop's checks are"
        f" {NOT_TRUSTED}. Review them"
        " (`ralphstate status`) and run `ralphstate trust`."
    )


def block_unmet(state: st.State, unmet: list[str], failures: Sequence[CheckFailure] = ()) -> str:
    """The reason the model reads when criteria are still unmet."""
    lines = []
    if state["continueMessage"]:
        lines += [clip(state["continueMessage"], limits.MAX_SPEC_CHARS), ""]
    if failures:
        lines += check_failures(failures)
    total = len(state["criteria"])
    lines.append(
        f"ralphstate loop, iteration {state['iteration'] + 1} of {state['maxIterations']}:"
        f" {len(unmet)} of {count(total, 'criterion')} not verified yet:"
    )
    lines += [f"- {c}" for c in bounded(unmet)]
    held = [] if failures else redgreen.held(state, unmet)
    if held:  # its check passed before it ever failed: said as when the check just ran
        lines.append(f"The check of {_names(held)} {redgreen.HELD}.")
    remaining = state["remainingSteps"]
    if remaining:
        lines.append(f"Next step: {clip(remaining[0])}")
    lines.append("")
    if unmet[0] in state["checks"]:  # a check proves it; a claim would not
        lines.append("Keep working. That criterion has a check: run it, and what it proves is")
        lines.append("recorded (setting it true by hand is only a claim):")
        lines.append(f"  {command('verify', unmet[0])}")
    elif unmet[0] in state["boxCriteria"]:  # its box in the task file is its claim
        lines.append("Keep working. That criterion is a box of the task file: once done, tick it:")
        lines.append(f"  {command('step done', unmet[0])}")
    else:
        lines.append("Keep working. After verifying a criterion, record it:")
        lines.append(f"  {command('criteria set', unmet[0], 'true')}")
    if remaining:
        lines.append("After finishing a step:")
        lines.append(f"  {command('step done', remaining[0])}")
    lines.append(
        f"Say {clip(state['completionMarker'])} (outside code) only when every criterion is"
        " verified."
    )
    return cap("\n".join(lines), limits.MAX_REASON_CHARS)


# How the messages name a loop started with `init --no-criteria` and no criteria since.
NO_CRITERIA = "no criteria (--no-criteria): the completion marker alone ends"


def block_no_criteria(state: st.State) -> str:
    """The reason the model reads when the loop has no criteria and the person did not
    start it with --no-criteria: it cannot end until some are added."""
    lines = []
    if state["continueMessage"]:
        lines += [clip(state["continueMessage"], limits.MAX_SPEC_CHARS), ""]
    lines += [
        (
            f"ralphstate loop, iteration {state['iteration'] + 1} of {state['maxIterations']}:"
            " this loop has no success criteria, so it cannot end yet."
        ),
        "Add the criteria the work must meet, one command each, then verify and record them:",
        '  ralphstate criteria add "NAME"',
        (
            "(A loop that the completion marker alone ends is started by the person with"
            " `ralphstate init --no-criteria`.)"
        ),
    ]
    return cap("\n".join(lines), limits.MAX_REASON_CHARS)


def block_marker(state: st.State) -> str:
    """The reason the model reads when everything is met but the marker is missing."""
    lines = []
    if state["continueMessage"]:
        lines += [clip(state["continueMessage"], limits.MAX_SPEC_CHARS), ""]
    where = f"ralphstate loop, iteration {state['iteration'] + 1} of {state['maxIterations']}:"
    if not state["criteria"]:
        lines.append(f"{where} this loop has {NO_CRITERIA} it.")
        if state["remainingSteps"]:
            lines.append(f"Steps still open: {', '.join(bounded(state['remainingSteps'], 5))}")
        lines.append(
            "If the work is really done, end your reply with"
            f" {clip(state['completionMarker'])} (outside code blocks); if not, keep working."
        )
        return cap("\n".join(lines), limits.MAX_REASON_CHARS)
    n = len(state["criteria"])
    lines.append(
        f"{where} {all_of(n, 'criterion')} {'is' if n == 1 else 'are'} recorded as met"
        f" ({proofs(state)})."
    )
    if state["remainingSteps"]:
        lines.append(f"Steps still open: {', '.join(bounded(state['remainingSteps'], 5))}")
    lines.append(
        "If the work is really done, end your reply with"
        f" {clip(state['completionMarker'])} (outside code blocks)."
        " If it is not, keep working and set the unfinished criterion back:"
        " ralphstate criteria set NAME false"
    )
    return cap("\n".join(lines), limits.MAX_REASON_CHARS)


def paused_max(state: st.State) -> str:
    left = len(queries.unmet(state))
    return (
        f"ralphstate: loop paused after {count(state['iteration'], 'iteration')}"
        f" (maxIterations); {count(left, 'criterion')} unmet. Continue with"
        " `ralphstate resume --more 10`."
    )


def paused_stall(state: st.State) -> str:
    return (
        "ralphstate: loop paused, no progress in"
        f" {count(state['blocksWithoutProgress'], 'blocked stop')} (stallLimit)."
        " Look at `ralphstate status`, then `ralphstate resume`."
    )


def raise_budget(over: str) -> str:
    """Where the person raises the budget `over` names (`budgets.over_budget`)."""
    which = over.split(" ", 1)[0]  # tokens, cost or duration
    setting = {"tokens": "max-tokens N", "cost": "max-cost USD"}.get(which, "max-duration 8h")
    return f"`ralphstate config {setting}`"


def paused_budget(over: str) -> str:
    """The loop paused at a stop because a budget is reached (`over`: which, and how
    much of it: `budgets.over_budget`)."""
    return (
        f"ralphstate: loop paused, its budget is reached ({over}). Raise it"
        f" ({raise_budget(over)}), then `ralphstate resume`."
    )


def paused_untrusted(state: st.State) -> str:
    return (
        f"ralphstate: the agent claims every criterion, but the loop's checks are {NOT_TRUSTED},"
        " so they were not run and the loop is paused. Review them (`ralphstate status`),"
        " run `ralphstate trust`, then `ralphstate resume`."
    )


def headline(spec: str, size: int = 60) -> str:
    """The spec's first line, short and safe on a terminal, to name a loop to the person."""
    from ralphstate.core.text import visible

    lines = spec.strip().splitlines()
    first = " ".join(lines[0].split()) if lines else ""
    cut = len(first) > size or len(lines) > 1
    return visible(first[:size]) + ("…" if cut else "")


def unusable(problem: str) -> str:
    """For the person, once per session, when a hook cannot use the loop here (it lets
    the agent stop): what is wrong, that nothing holds the agent, and what to run."""
    return (
        f"ralphstate: {clip(problem.rstrip('.'), limits.MAX_PROBLEM_CHARS)}; the loop is not"
        " enforced until this is fixed (`ralphstate doctor` checks it)."
    )


def completed(state: st.State) -> str:
    if not state["criteria"]:
        return (
            f"ralphstate: loop complete after {count(state['iteration'], 'iteration')}: it has no"
            " criteria (--no-criteria), so the completion marker alone ended it."
        )
    verified: list[str] = []
    graded: list[str] = []
    checked: list[str] = []
    claimed: list[str] = []
    already = redgreen.already_true(state)
    for name in state["criteria"]:
        if name in already:
            continue
        standing = queries.standing(state, name)
        if standing == "verified":
            verified.append(name)
        elif standing == "graded":
            graded.append(name)
        else:
            (checked if name in state["checks"] else claimed).append(name)
    levels = {n: provenance.of_evidence(state["evidence"].get(n, {})) for n in verified}
    parts = [
        f"verified by {'its check' if len(names) == 1 else 'their checks'}"
        f" ({provenance.WORDS[level]}): {_names(names)}"
        for level in provenance.LEVELS
        if (names := [n for n in verified if levels[n] == level])
    ]
    if graded:
        parts.append(f"graded by a reviewer against a rubric (not verified): {_names(graded)}")
    if checked:
        why = (
            "verify-on-stop is off"
            if not queries.verify_on_stop(state)
            else "its check did not run"
        )
        parts.append(f"claimed, not verified ({why}): {_names(checked)}")
    if claimed:
        parts.append(f"claimed, without a check: {_names(claimed)}")
    if already:
        parts.append(f"already true before any work: {_names(already)}")
    after = count(state["iteration"], "iteration")
    return f"ralphstate: loop complete after {after}; {'; '.join(parts)}."


def _names(names: list[str], size: int = 5) -> str:
    """Up to `size` names, each one short line, for a message to the person."""
    shown = ", ".join(visible(clip(n, 60)) for n in names[:size])
    return shown + (f" and {len(names) - size} more" if len(names) > size else "")


def proofs(state: st.State) -> str:
    """What backs the met criteria: `2 verified by their checks (sealed), 1 claimed` (a part
    that counts none is left out; "" when none is met)."""
    met = [c for c in state["criteria"] if queries.met(state, c)]
    shown = [c for c in met if queries.standing(state, c) == "verified"]
    verified = len(shown)
    parts = []
    for level in provenance.LEVELS:
        n = sum(1 for c in shown if provenance.of_evidence(state["evidence"][c]) == level)
        if n:
            checks = "its check" if n == 1 else "their checks"
            parts.append(f"{n} verified by {checks} ({provenance.WORDS[level]})")
    graded = sum(1 for c in met if queries.standing(state, c) == "graded")
    if graded:
        parts.append(f"{graded} graded by a reviewer")
    if len(met) > verified + graded:
        parts.append(f"{len(met) - verified - graded} claimed")
    return ", ".join(parts)
