"""The loop's story as text for a terminal, and as Markdown for a pull request's body."""

from __future__ import annotations

from ralphstate.core import provenance
from ralphstate.core.redgreen import ALREADY
from ralphstate.core.text import count, noun, visible
from ralphstate.report.story import Criterion, Story, money, seconds, short


def _evidence(criterion: Criterion) -> str:
    """`verified on 3f9c2e1a0b (dirty) · sealed · exit code 0 · 4.2s · 2026-03-14T10:41:37Z`."""
    evidence = criterion.evidence
    parts = [criterion.label or "unmet, no check"]
    if evidence.get("commit"):
        where = f"on {short(evidence['commit'])}"
        parts[0] += f" {where}" + (" (dirty)" if evidence.get("dirty") else "")
    if criterion.standing == "verified":
        parts.append(provenance.words(evidence))
    if criterion.standing == "graded":
        parts[0] = "graded by a reviewer against its rubric, not verified"
    if criterion.stale:
        parts.append("STALE: the code changed since")
    if criterion.already_true:
        parts.append(ALREADY)
    if criterion.refuted and criterion.refutation.get("summary"):
        parts.append(f"its check: {criterion.refutation['summary']}")
    if evidence.get("summary"):
        parts.append(str(evidence["summary"]))
    if isinstance(evidence.get("durationMs"), int):
        parts.append(seconds(evidence["durationMs"] / 1000))
    if evidence.get("at"):
        parts.append(str(evidence["at"]))
    return " · ".join(visible(p) for p in parts)


def _head(story: Story) -> list[str]:
    state = story.state
    status = state["status"].replace("_", " ")
    if state.get("pauseReason"):
        status += f" ({state['pauseReason']})"
    cost = story.total_cost
    return [
        f"status: {visible(status)} · iteration {state['iteration']}/{state['maxIterations']}"
        f" · {story.met}/{len(story.criteria)} {noun(len(story.criteria), 'criterion')}"
        f" · {len(state['completedSteps'])}/{len(state['steps'])}"
        f" {noun(len(state['steps']), 'step')}"
        f" · {count(len(story.iterations), 'iteration')} in {seconds(story.total_duration)}"
        + (f" · {story.total_tokens:,} tokens" if story.total_tokens is not None else "")
        + (f" · cost {money(cost)}" if cost is not None else ""),
        f"started {state.get('startedAt') or '?'} · updated {state.get('updatedAt') or '?'}",
    ]


def text(story: Story) -> str:
    state = story.state
    lines = [f"loop {visible(story.root)}", f"spec: {visible(state['spec'])}", *_head(story)]
    lines += ["", "criteria:"]
    for c in story.criteria:
        box = "!" if c.refuted else "x" if c.met else " "
        lines.append(f"  [{box}] {visible(c.name)}: {_evidence(c)}")
        if c.check:
            lines.append(f"      check: {visible(c.check)}")
        tail = str((c.refutation or c.evidence).get("outputTail") or "")
        if tail and (c.standing == "failing" or c.refuted):
            lines += [f"      | {visible(line)}" for line in tail.splitlines()[-10:]]
    if story.proof:
        lines += ["", "proof:", *[f"  {visible(line)}" for line in story.proof]]
    if state["steps"]:
        lines += ["", "steps:"]
        done = set(state["completedSteps"])
        lines += [f"  [{'x' if s in done else ' '}] {visible(s)}" for s in state["steps"]]
    lines += ["", "iterations:"]
    if not story.iterations:
        lines.append("  none yet")
    for i in story.iterations:
        extra = f" · {i.tokens:,} tokens" if i.tokens is not None else ""
        extra += f" · cost {money(i.cost)}" if i.cost is not None else ""
        extra += f" · commit {short(i.commit)}" if i.commit else ""
        extra += f" · sandbox: {visible(i.sandbox)}" if i.sandbox else ""
        lines.append(
            f"  #{i.number:<4} {i.by:<4} {seconds(i.duration):>7} · {visible(i.result)}"
            f" · {visible(i.decision)}{extra}"
        )
    for title, moments in (
        ("criteria turning green", story.greens),
        ("pauses", story.pauses),
        ("commits", story.commits),
    ):
        if moments:
            lines += ["", f"{title}:"]
            for m in moments:
                what = short(m.what) if title == "commits" else m.what
                detail = f" · {visible(m.detail)}" if m.detail else ""
                lines.append(f"  #{m.iteration:<4} {m.at or '?'} {visible(what)}{detail}")
    if story.history_cut:
        lines += ["", "(only the newest history lines were read)"]
    return "\n".join(lines)


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell or list item."""
    return visible(text).replace("|", "\\|").replace("\n", " ")


def markdown(story: Story) -> str:
    state = story.state
    lines = [f"## {_md(state['spec']) or 'ralphstate loop'}", ""]
    lines += [f"_{_md(line)}_" for line in _head(story)[:1]]
    lines += ["", "### Criteria", ""]
    for c in story.criteria:
        box = "x" if c.met and not c.refuted else " "
        lines.append(f"- [{box}] **{_md(c.name)}**: {_md(_evidence(c))}")
        if c.check:
            lines.append(f"  - check: `{_md(c.check).replace('`', '')}`")
        tail = str(c.evidence.get("outputTail") or "")
        if tail:
            fence = "````" if "```" in tail else "```"
            lines += [
                "  <details><summary>output tail</summary>",
                "",
                f"  {fence}text",
                *[f"  {visible(line)}" for line in tail.splitlines()],
                f"  {fence}",
                "  </details>",
            ]
    if story.proof:
        lines += ["", "### Proof", "", *[f"- {_md(line)}" for line in story.proof]]
    if state["steps"]:
        lines += ["", "### Steps", ""]
        done = set(state["completedSteps"])
        lines += [f"- [{'x' if s in done else ' '}] {_md(s)}" for s in state["steps"]]
    lines += ["", "### Iterations", ""]
    if story.iterations:
        cost = any(i.cost is not None for i in story.iterations)
        head = "| # | by | duration | result | decision |" + (" cost |" if cost else "")
        lines += [head + " commit |", "|---" * (6 + cost) + "|"]
        for i in story.iterations:
            result = i.result + (f" (sandbox: {i.sandbox})" if i.sandbox else "")
            row = f"| {i.number} | {i.by} | {seconds(i.duration)} | {_md(result)} |"
            row += f" {_md(i.decision)} |"
            if cost:
                row += f" {'' if i.cost is None else money(i.cost)} |"
            lines.append(row + f" {short(i.commit)} |")
    else:
        lines.append("None yet.")
    if story.pauses:
        lines += ["", "### Pauses", ""]
        for m in story.pauses:
            detail = f": {_md(m.detail)}" if m.detail else ""
            lines.append(f"- after iteration {m.iteration}: **{_md(m.what)}**{detail}")
    if story.commits:
        lines += ["", "### Commits", ""]
        lines += [f"- `{short(m.what)}` {_md(m.detail)}" for m in story.commits]
    lines += ["", "_Report by `ralphstate report --markdown`._"]
    return "\n".join(lines)
