"""A loop's story, gathered from its state and its history: the spec, each criterion
with its check and last evidence, the iterations with their durations and decisions,
the criteria turning green, the pauses and the commits. `text`, `markdown` and `html`
render it; none of them reads a file or the network."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ralphstate.core import limits, provenance, queries
from ralphstate.core import state as st
from ralphstate.core.outcomes import OUTCOMES
from ralphstate.core.views import SHOWN

Event = dict[str, Any]

# The Stop hook's rules that end an iteration of a hook-driven loop (its blocks), and
# those that pause it (core/outcomes.py, OUTCOMES).
HOOK_ITERATIONS = tuple(rule for rule, outcome in OUTCOMES.items() if outcome.block)
HOOK_PAUSES = tuple(rule for rule, outcome in OUTCOMES.items() if outcome.pause)
# A criterion met on the agent's word whose check's last run failed.
REFUTED = "claimed, refuted by its check"
# A held-out check's failure (verify/heldoutchecks.py): the criterion turns red, as a
# failing check turns it; the story names no more of it than the agent is told.
HELD_OUT = "heldout_failed"
HELD_OUT_SAID = "a held-out check failed"


@dataclass
class Criterion:
    name: str
    met: bool
    standing: str | None  # verified, claimed, failing, unchecked, or None
    check: str | None
    evidence: dict[str, Any]
    stale: bool
    # Its check passed before the loop did any work (core/redgreen.py): the proof says
    # nothing about the work.
    already_true: bool = False
    # Met on the agent's word while its check's last run failed (in the evidence, or in
    # the history when the claim came after): a claim the check refutes, never shown as
    # met. `refutation` is that run's history line, for its summary and output.
    refuted: bool = False
    refutation: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str | None:
        """Its standing as the report shows it: `refuted by its check` for a refuted
        claim, else the standing (`check not run yet` for `unchecked`)."""
        if self.refuted:
            return REFUTED
        return SHOWN.get(self.standing, self.standing) if self.standing else None


@dataclass
class Iteration:
    """One iteration: a fresh agent process of `ralphstate run`, or a block of the
    Stop hook (`by` says which). `duration` in seconds; None when not known."""

    number: int
    by: str
    at: str | None  # when it ended
    duration: float | None
    result: str
    decision: str
    cost: float | None = None
    commit: str | None = None
    tokens: int | None = None
    # How `ralphstate run` confined the agent (`--sandbox`): None when it was not asked.
    sandbox: str | None = None


@dataclass
class Moment:
    """Something that happened at one point of the story: a criterion turning green,
    a pause, a commit."""

    at: str | None
    iteration: int
    what: str
    detail: str = ""


@dataclass
class Story:
    state: st.State
    root: str
    criteria: list[Criterion]
    iterations: list[Iteration]
    greens: list[Moment] = field(default_factory=list)
    pauses: list[Moment] = field(default_factory=list)
    commits: list[Moment] = field(default_factory=list)
    # (criterion, iteration, green, how) each time a criterion turned green or back;
    # `how` is "verified" (its check passed) or "claimed" (the agent's word) for a turn
    # green, "refuted" (its check failed) or "" (set back by hand) for a turn back.
    turns: list[tuple[str, int, bool, str]] = field(default_factory=list)
    stale_known: bool = False  # whether the work tree's tree was known (git)
    history_cut: bool = False  # only the newest history lines were read
    # What backs the proof: who approved it, what waits for review, endings outside
    # ralphstate, approvals and the agent's own exits (loop/proofreview.py, the history).
    proof: list[str] = field(default_factory=list)

    @property
    def met(self) -> int:
        return sum(1 for c in self.criteria if c.met)

    @property
    def total_duration(self) -> float:
        return sum(i.duration or 0.0 for i in self.iterations)

    @property
    def total_tokens(self) -> int | None:
        tokens = [i.tokens for i in self.iterations if i.tokens is not None]
        return sum(tokens) if tokens else None

    @property
    def total_cost(self) -> float | None:
        costs = [i.cost for i in self.iterations if i.cost is not None]
        return sum(costs) if costs else None


def parse_time(at: object) -> datetime | None:
    if not isinstance(at, str):
        return None
    try:
        parsed = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _number(value: object, most: float) -> float | None:
    """A figure a history line holds: a number from 0 to `most` (limits.MAX_ITERATION_*),
    else None (not known): a line from a clone or a hand edit cannot make a total
    infinite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value <= most else None  # NaN: neither


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= limits.MAX_ITERATION_TOKENS else None


def money(cost: float) -> str:
    """`$0.4210`, `$12.50`: as `ralphstate run` prints what an iteration cost."""
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def gather(
    state: st.State,
    history: list[Event],
    root: str,
    tree: str | None = None,
    history_cut: bool = False,
    already: Collection[str] = (),
) -> Story:
    """The story of the loop `state`, from its `history` (oldest first). `tree` is the
    id of the tree the work tree holds now (None: not known; nothing is stale);
    `already`: the criteria already true before any work (core/redgreen.py)."""
    stale = set(queries.stale(state, tree))
    criteria = [
        Criterion(
            name,
            queries.met(state, name),
            queries.standing(state, name),
            state["checks"].get(name),
            dict(state["evidence"].get(name, {})),
            name in stale,
            name in already,
        )
        for name in state["criteria"]
    ]
    story = Story(state, root, criteria, [], stale_known=tree is not None)
    story.history_cut = history_cut
    _walk(story, history)
    _refuted(story, history)
    return story


def _refuted(story: Story, history: list[Event]) -> None:
    """Mark each claimed criterion whose check's last run failed as refuted."""
    last: dict[str, Event] = {}
    for event in history:
        if event.get("event") == "check" and isinstance(event.get("criterion"), str):
            last[event["criterion"]] = event
        elif event.get("event") == HELD_OUT and isinstance(event.get("criterion"), str):
            last[event["criterion"]] = {**event, "result": "failing", "summary": HELD_OUT_SAID}
    for c in story.criteria:
        if not c.met or c.standing != "claimed":
            continue
        failed = c.evidence if c.evidence.get("result") == "failing" else last.get(c.name, {})
        if failed.get("result") == "failing":
            c.refuted = True
            c.refutation = failed


def _walk(story: Story, history: list[Event]) -> None:
    green: dict[str, bool] = {}
    last_end: datetime | None = None
    for event in history:
        name = event.get("event")
        at = event.get("at") if isinstance(event.get("at"), str) else None
        number = _int(event.get("iteration"))
        when = parse_time(at)
        if name in ("init", "run_started", "resumed") and when is not None:
            last_end = when  # waiting for a person is not part of an iteration
        elif name == "run_iteration" or name in HOOK_ITERATIONS:
            story.iterations.append(_iteration(event, at, number, when, last_end))
            last_end = when or last_end
        elif name in ("check", "criterion_set", "graded", HELD_OUT):
            _green(story, green, event, name, at, number)
        else:
            _moment(story, event, name, at, number)
    by_number = {m.iteration: m.what for m in story.commits}
    for iteration in story.iterations:  # a run's commit is written before its iteration
        iteration.commit = by_number.get(iteration.number)


def _iteration(
    event: Event, at: str | None, number: int, when: datetime | None, last_end: datetime | None
) -> Iteration:
    """An iteration of `ralphstate run` (`run_iteration`), or a block of the Stop hook
    that began when the last one ended."""
    name = event.get("event")
    if name == "run_iteration":
        return Iteration(
            number,
            "run",
            at,
            _number(event.get("duration"), limits.MAX_ITERATION_SECONDS),
            str(event.get("result", "")),
            str(event.get("decision", "")),
            _number(event.get("cost"), limits.MAX_ITERATION_COST),
            tokens=_count(event.get("tokens")),
            sandbox=_sandbox(event.get("sandbox")),
        )
    duration = None
    if when is not None and last_end is not None:
        duration = max(0.0, (when - last_end).total_seconds())
    unmet = event.get("unmet")
    if isinstance(unmet, list):
        result = f"{len(unmet)} unmet"
    elif name == "ungraded":
        result = "failed by the reviewer"
    else:
        result = "no criteria" if name == "no_criteria" else "marker missing"
    return Iteration(number, "stop", at, duration, result, "block")


def _sandbox(value: object) -> str | None:
    """The sandbox a history line names, as one short line (the history is the
    project's: anything may be there)."""
    if not isinstance(value, str) or not value:
        return None
    return value.splitlines()[0][:80] if value.strip() else None


def _moment(story: Story, event: Event, name: object, at: str | None, number: int) -> None:
    """A pause (by a person, the Stop hook or the runner) or a commit, when `event` is one."""
    if name == "paused":
        story.pauses.append(Moment(at, number, str(event.get("reason") or "user")))
    elif name in HOOK_PAUSES:
        story.pauses.append(Moment(at, number, str(name), "by the Stop hook"))
    elif name == "run_finished" and event.get("outcome") == "paused":
        reason = str(event.get("reason") or "paused")
        last = story.pauses[-1] if story.pauses else None
        if last is None or (last.iteration, last.what) != (number, reason):
            story.pauses.append(Moment(at, number, reason, "run"))
    elif name == "commit" and isinstance(event.get("commit"), str):
        commit = event["commit"]
        story.commits.append(Moment(at, number, commit, str(event.get("subject", ""))))
    elif name == "commit_failed":
        story.pauses.append(Moment(at, number, "commit_failed", str(event.get("error", ""))))


def _green(
    story: Story, green: dict[str, bool], event: Event, name: str, at: str | None, number: int
) -> None:
    criterion = event.get("criterion")
    if not isinstance(criterion, str):
        return
    if name == "check":
        now = event.get("result") == "verified"
        how = f"verified by its check ({event.get('by', 'verify')}, {provenance.words(event)})"
    elif name == HELD_OUT:  # a held-out check failed: the criterion turned red
        now, how = False, ""
    elif name == "graded":  # a reviewer's pass of a rubric: graded, never verified
        now = event.get("result") == "pass"
        how = "graded by a reviewer (not verified)"
    else:
        now = event.get("value") is True
        how = "claimed"
    if now and not green.get(criterion):
        story.greens.append(Moment(at, number, criterion, how))
    if now != green.get(criterion, False):
        # Back by a check that failed: the claim or proof before it was refuted.
        if now:
            turned = {"check": "verified", "graded": "graded"}.get(name, "claimed")
        else:
            back = {"check": "refuted", HELD_OUT: "refuted", "graded": "failed by the reviewer"}
            turned = back.get(name, "")
        story.turns.append((criterion, number, now, turned))
    green[criterion] = now


def short(commit: object) -> str:
    return commit[:10] if isinstance(commit, str) else ""


def seconds(value: float | None) -> str:
    """`4.2s`, `3m12s`, `1h05m`; `?` when not known (or not a finite number)."""
    if value is None or not math.isfinite(value):
        return "?"
    if value < 60:
        return f"{value:.1f}s"
    minutes, secs = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
