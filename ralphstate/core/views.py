"""Text for people: the status view, history lines, the loop list."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ralphstate.core import (
    checkrun,
    clock,
    grading,
    ownership,
    proof,
    provenance,
    queries,
    unfinished,
)
from ralphstate.core import state as st
from ralphstate.core.approving import trust_step
from ralphstate.core.budgets import LOOPS, dollars, loop_budget, span, spent
from ralphstate.core.redgreen import ALREADY
from ralphstate.core.render import NO_CRITERIA, NOT_TRUSTED, proofs
from ralphstate.core.text import short_id, visible

Style = Any  # a callable like click.style(text, fg=...)


# A loop in progress (or paused) that this machine never made nor adopted: the hooks
# leave it alone (docs/explanation/design.md, "Ownership"), which `status`, `watch` and
# `doctor` say.
UNKNOWN_HERE = (
    "this loop was not created or adopted on this machine; the hooks ignore it until you"
    " run `ralphstate adopt`"
)


def unknown_here(state: st.State, known: bool, style: Style) -> list[str]:
    """The line about a loop the hooks ignore here, when it is one that could run."""
    if known or state["status"] not in ("in_progress", "paused"):
        return []
    return [style(UNKNOWN_HERE, fg="yellow", bold=True)]


# How a standing reads where it is not its own word: an unmet criterion whose check has
# not proven anything yet.
SHOWN = {"unchecked": "check not run yet"}


def _plain(text: str, **_: Any) -> str:
    return text


def _standing(
    state: st.State, name: str, style: Style, stale: bool = False, already: bool = False
) -> str:
    """`  (verified 3m ago)`, `  (failing 1h ago: exit code 1)`, ...; "" for an unmet
    criterion without a check. `already`: its check passed before any work."""
    label = queries.standing(state, name)
    if label is None:
        return ""
    colour = {"verified": "green", "graded": "cyan", "claimed": "yellow", "failing": "red"}.get(
        label
    )
    text = style(label, fg=colour) if colour else SHOWN.get(label, label)
    evidence = state["evidence"].get(name, {})
    if label in ("verified", "failing", "claimed") and evidence.get("at"):
        text += f" {clock.age(evidence['at'])} ago"
    if label == "graded":
        grade = state["grades"].get(name, {})
        text += f" by a reviewer ({grading.who(grade)}), not verified"
        if grade.get("at"):
            text += f", {clock.age(grade['at'])} ago"
    if label == "verified":
        text += f", {provenance.words(evidence)}"
    if label == "verified" and "strength" in evidence:
        text += f", {proof.tests_said(evidence.get('strength'))}"
    if label == "verified" and evidence.get("weakened"):
        text += ", " + style(f"WEAKENED: {visible(str(evidence['weakened']))}", fg="yellow")
    if label == "failing" and evidence.get("summary"):
        text += f": {visible(evidence['summary'])}"
    if stale:
        text += ", " + style("stale", fg="yellow", bold=True) + ": the code changed since"
    if already:
        text += ", " + style(ALREADY, fg="yellow")
    return f"  ({text})"


def clean_room(state: st.State, in_git: bool, style: Style = _plain) -> str:
    """Whether the checks that accept a completion run in a clean room, and why not."""
    if not in_git:
        return "clean-room verification: not a git repository (the checks run in the project)"
    setting = {
        None: "on (the default)",
        True: "on",
        False: style("OFF", fg="red", bold=True) + " (ralphstate config clean-verify off)",
    }
    return f"clean-room verification: {setting[state['cleanVerify']]}"


def _checks(state: st.State, trusted: bool | None, style: Style) -> list[str]:
    names = [c for c in state["criteria"] if c in state["checks"]]
    criteria = set(state["criteria"])
    # Checks keyed to names that are not criteria never run; a file may carry them all
    # the same, so they are shown (a later `criteria add` of the name would arm one).
    idle = [
        f"  {visible(name)}: {visible(command)}  (no such criterion: never run)"
        for name, command in state["checks"].items()
        if name not in criteria
    ]
    if not names:
        return [f"checks for no criterion {len(idle)}:", *idle] if idle else []
    setting = {
        None: "on (the default)",
        True: "on",
        False: style("OFF", fg="red", bold=True) + " (ralphstate config verify-on-stop false)",
    }
    head = ["verify on stop: " + setting[state["verifyOnStop"]]]
    if trusted is True:
        head.insert(0, "trusted on this machine")
    elif trusted is False:
        head.insert(
            0,
            style(NOT_TRUSTED.replace("not", "NOT", 1), fg="red", bold=True)
            + f"; they will not run until you review them and {trust_step()}",
        )
    lines = [f"checks {len(names)}: " + " · ".join(head)]
    for name in names:
        own = state["checkTimeouts"].get(name)
        limit = f"  (timeout {own:g}s)" if own is not None else ""
        if name in state["expectFail"]:
            limit += "  (must fail before a pass counts)"
        if name in state["runAlone"]:
            limit += "  (runs alone)"
        lines.append(f"  {visible(name)}: {visible(state['checks'][name])}{limit}")
    return lines + idle


def _how_checks_run(state: st.State, style: Style) -> list[str]:
    """After the checks: `checks at a stop: 120s (the default) · 16 at once (the
    default)`, and a verification stopped before its checks finished, until each of
    them ran again; nothing for a loop whose criteria have no check."""
    if not any(c in state["checks"] for c in state["criteria"]):
        return []
    default = " (the default)"
    budget = f"{checkrun.budget(state):g}s" + (default if state["verifyBudget"] is None else "")
    jobs = f"{checkrun.jobs(state)} at once" + (default if state["verifyJobs"] is None else "")
    stopped = unfinished.stopped_line(state)
    said = [style(stopped, fg="yellow", bold=True)] if stopped else []
    return [f"checks at a stop: {budget} · {jobs}", *said]


def _spent(state: st.State) -> str:
    """`spent: 12,400 tokens · $0.42 · 3m12s of runs (the loop's budget: $5.00)`; ""
    before anything."""
    budget = loop_budget(state)
    if state["usage"] is None and not any(value is not None for value in budget.values()):
        return ""
    now = spent(state)
    parts = [f"{now['tokens']:,} tokens"]
    if now["cost"] or budget["cost"] is not None:  # a session's tokens alone have no cost
        parts.append(f"${now['cost']:.4f}")
    if now["seconds"] or budget["seconds"] is not None:  # nor do they have run time
        parts.append(f"{now['seconds']:.0f}s of runs")
    budgets = []
    if budget["cost"] is not None:
        budgets.append(dollars(budget["cost"]))
    if budget["tokens"] is not None:
        budgets.append(f"{budget['tokens']:,} tokens")
    if budget["seconds"] is not None:
        budgets.append(span(budget["seconds"]))
    text = "spent: " + " · ".join(parts)
    return text + (f" ({LOOPS} budget: {', '.join(budgets)})" if budgets else "")


def _hand_over(state: st.State) -> list[str]:
    """When a new session takes the loop from its owner (`ownerTimeout`): said once the
    owner has been idle that long, and always when it is not the default."""
    if not state.get("sessionId"):
        return []
    limit = ownership.owner_timeout(state)
    if limit and ownership.gone(state):
        return [f"idle past {span(limit)}: the next session to start here takes it"]
    if state.get("ownerTimeout") is None:
        return []
    return [f"handed over after {span(limit)} idle" if limit else "never handed over by time"]


@dataclass(frozen=True)
class StatusFacts:
    """What `status` shows besides the state, gathered in one place
    (loop/statusfacts.py), as the Stop hook's are in `decide.StopFacts`.

    `where`: the loop's project root, as shown. `trusted`: whether the loop's checks
    may run here (None: not known, not shown). `tree`: the id of the tree the work tree
    holds now, which marks verified criteria proven on another tree `stale` (None: not
    known). `guarded`: the line about the guarded files, after the checks (None: none).
    `already`: the criteria already true before any work (core/redgreen.py). `in_git`:
    whether the loop is in a git repository, for the line on clean-room verification
    (None: not known, not shown).

    After the view (`status_notes`): `known_here`, whether this machine made or adopted
    the loop; `proof`, the proof's standing (loop/proofreview.py's `summary`) and
    `proof_said`, its lines; `last_run_sandbox`, how the newest `ralphstate run`
    confined its agent (None: no sandbox mode); `task_file_problem`, why the task file
    cannot be read; `hooks_view`, in a subdirectory, which loop the hooks see (whether
    it is this one, and the sentence); `unenforced`, the line said when no agent's
    hook enforces the loop; `handed`, the line for a loop its owner took by an input
    ralphstate could not tell from a shell's."""

    where: str
    trusted: bool | None = None
    tree: str | None = None
    guarded: str | None = None
    already: tuple[str, ...] = ()
    in_git: bool | None = None
    known_here: bool = True
    proof: dict[str, Any] = field(default_factory=dict)
    proof_said: tuple[str, ...] = ()
    last_run_sandbox: str | None = None
    task_file_problem: str | None = None
    hooks_view: tuple[bool, str] | None = None
    unenforced: str | None = None
    handed: str | None = None


def status(state: st.State, facts: StatusFacts, style: Style = _plain, every: bool = False) -> str:
    """The status view of `state` with `facts`; `every`: list every criterion, check,
    step and task, where by default each list shows its first `STATUS_ROWS` (the unmet
    criteria and the remaining steps first) and says how many more there are."""
    where = facts.where
    trusted = facts.trusted
    tree = facts.tree
    guarded = facts.guarded
    already, in_git = facts.already, facts.in_git
    stale = set(queries.stale(state, tree))  # one lookup a criterion
    met = len(state["criteria"]) - len(queries.unmet(state))
    colour = {"in_progress": "yellow", "paused": "magenta", "complete": "green"}.get(
        state["status"], "red"
    )
    owner = state.get("sessionId")
    # `paused (stall)`: the reason beside the status, as the status line and `run` say it.
    reason = f" ({visible(state['pauseReason'])})" if state.get("pauseReason") else ""
    head = [
        style(state["status"].replace("_", " "), fg=colour, bold=True) + reason,
        f"iteration {state['iteration']}/{state['maxIterations']}",
        f"owner {short_id(owner) if owner else 'none'}",
        f"updated {clock.age(state.get('updatedAt'))} ago",
        *_hand_over(state),
    ]
    lines = [f"loop {where}: " + " · ".join(head), f"spec: {visible(state['spec'])}"]
    lines += _last_error(state)
    spent = _spent(state)
    if spent:
        lines.append(spent)
    if state["criteria"]:
        backing = f" ({proofs(state)})" if met else ""
        lines.append(f"criteria {met}/{len(state['criteria'])}{backing}:")
    elif state["noCriteria"]:
        lines.append(f"criteria: {NO_CRITERIA} this loop")
    else:
        lines.append(
            "criteria: none; this loop cannot complete until one is added"
            " (`ralphstate criteria add NAME`), unless started with `init --no-criteria`"
        )
    criteria = _first(state["criteria"], lambda name: queries.met(state, name), every)
    for name in criteria:
        ok = queries.met(state, name)
        mark = style("[x]", fg="green") if ok else style("[ ]", fg="red")
        shown = _standing(state, name, style, name in stale, name in already)
        lines.append(f"  {mark} {visible(name)}{shown}")
    lines += _more(
        len(state["criteria"]) - len(criteria), "criteria", met - _met_in(state, criteria)
    )
    lines += _bounded(_checks(state, trusted, style), every, "checks")
    lines += _how_checks_run(state, style)
    if guarded is not None:
        lines.append(guarded)
    if in_git is not None and any(c in state["checks"] for c in state["criteria"]):
        lines.append(clean_room(state, in_git, style))
    steps = state["steps"]
    if steps:
        source = f" (the boxes of {visible(state['tasksFile'])})" if state["tasksFile"] else ""
        lines.append(f"steps {len(state['completedSteps'])}/{len(steps)}{source}:")
        remaining = state["remainingSteps"]
        done = set(state["completedSteps"])  # one lookup a step, not a scan
        origin = _origins(state)
        shown_steps = _first(steps, done.__contains__, every)
        for name in shown_steps:
            told = origin.get(name, "")
            if name in done:
                lines.append(f"  {style('[x]', fg='green')} {visible(name)}{told}")
            elif remaining and name == remaining[0]:
                lines.append(f"  {style('[>]', fg='yellow')} {visible(name)}  (next){told}")
            else:
                lines.append(f"  [ ] {visible(name)}{told}")
        lines += _more(
            len(steps) - len(shown_steps), "steps", _done_hidden(steps, shown_steps, done)
        )
    lines += _bounded(_loose_tasks(state, style), every, "tasks")
    return "\n".join(lines)


def status_notes(state: st.State, facts: StatusFacts, style: Style = _plain) -> list[str]:
    """The lines `status` prints after the view: the last run's sandbox, the proof, a
    loop the hooks ignore here, a task file that cannot be read, which loop the hooks
    see from a subdirectory, and a loop no hook enforces."""
    lines = (
        []
        if facts.last_run_sandbox is None
        else [f"sandbox of the last run: {visible(facts.last_run_sandbox)}"]
    )
    lines += [*facts.proof_said, *unknown_here(state, facts.known_here, style)]
    if facts.task_file_problem:
        lines.append(style(facts.task_file_problem, fg="yellow", bold=True))
    if facts.hooks_view is not None:
        seen, said = facts.hooks_view
        lines.append(said if seen else style(said, fg="yellow", bold=True))
    if facts.unenforced:
        lines.append(style(facts.unenforced, fg="yellow", bold=True))
    if facts.handed:
        lines.append(style(facts.handed, fg="yellow", bold=True))
    return lines


# How many lines each list of `status` shows unless asked for `--all`.
STATUS_ROWS = 100


def _first(items: list[str], finished: Callable[[str], bool], every: bool) -> list[str]:
    """`items` whole when `every` or short enough; else the first `STATUS_ROWS`, the
    unfinished ones first, each group in its order."""
    if every or len(items) <= STATUS_ROWS:
        return items
    open_first = [i for i in items if not finished(i)] + [i for i in items if finished(i)]
    return open_first[:STATUS_ROWS]


def _met_in(state: st.State, names: list[str]) -> int:
    return sum(1 for name in names if queries.met(state, name))


def _done_hidden(steps: list[str], shown: list[str], done: set[str]) -> int:
    """Of the steps left out, how many are done."""
    return (len(done & set(steps)) - len(done & set(shown))) if len(shown) < len(steps) else 0


def _more(hidden: int, what: str, finished: int) -> list[str]:
    """The line that says a list was cut, and how much of what it left out is done."""
    if hidden <= 0:
        return []
    word = "met" if what == "criteria" else "done"
    return [
        f"  … {hidden} more {what} ({finished} {word}; `ralphstate status --all` lists them all)"
    ]


def _bounded(lines: list[str], every: bool, what: str) -> list[str]:
    """A list's heading and its first `STATUS_ROWS` lines, unless `every`."""
    if every or len(lines) <= STATUS_ROWS + 1:
        return lines
    cut = len(lines) - 1 - STATUS_ROWS
    return [
        *lines[: STATUS_ROWS + 1],
        f"  … {cut} more {what} (`ralphstate status --all` lists them all)",
    ]


def _last_error(state: st.State) -> list[str]:
    """The agent's last error, in its own words, when the failures paused the loop."""
    if state.get("pauseReason") != "agent_errors" or not state["errors"]:
        return []
    last = state["errors"][-1]
    return [f"last error (iteration {last.get('iteration', '?')}): {visible(last['message'])}"]


def _origins(state: st.State) -> dict[str, str]:
    """Step → `  (task list: #3)`, for the steps a mirrored task is on; `(task list)`
    for a TodoWrite item, which has no id."""
    ids: dict[str, list[str]] = {}
    for task in state["taskList"]:
        if task["step"] is not None:
            ids.setdefault(task["step"], [])
            if task["id"] is not None:
                ids[task["step"]].append("#" + visible(task["id"][:20]))
    return {
        step: f"  (task list{': ' + ', '.join(found[:3]) if found else ''})"
        for step, found in ids.items()
    }


def _loose_tasks(state: st.State, style: Style) -> list[str]:
    """The mirrored tasks on no step (a task file without their box, a step removed)."""
    steps = set(state["steps"])
    loose = [t for t in state["taskList"] if t["step"] is None or t["step"] not in steps]
    if not loose:
        return []
    lines = [f"tasks on no step {len(loose)} (task list only):"]
    for task in loose:
        mark = style("[x]", fg="green") if task["status"] == "completed" else "[ ]"
        where = f"#{visible(task['id'][:20])} " if task["id"] is not None else ""
        state_word = "  (in progress)" if task["status"] == "in_progress" else ""
        lines.append(f"  {mark} {where}{visible(task['subject'])}{state_word}")
    return lines


def loop_row(row: dict[str, Any]) -> str:
    total = row.get("criteriaTotal")
    met = row.get("criteriaMet")
    criteria = f"{met}/{total}" if total is not None else "?"
    spec = visible(str(row.get("spec") or "")[:50])
    branch = f"  [{visible(str(row['branch']))}]" if row.get("branch") else ""
    return (
        f"{visible(row.get('status', '?')):<12} {criteria:<6} {visible(row['path'])}{branch}"
        f"  {spec}"
    )
