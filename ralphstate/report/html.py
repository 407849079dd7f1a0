"""The loop's story as one self-contained HTML file: inline CSS and SVG, no script, and
a Content-Security-Policy that forbids fetching anything, so it opens the same with no
network. The timeline shows the iterations as bars laid end to end, each as long as it
took, the criteria as lanes that turn green at the iteration that proved them (amber
where a criterion stood on the agent's word, red where its check refutes that word), and
the pauses and commits where they happened."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from ralphstate.core import provenance
from ralphstate.core.outcomes import OUTCOMES
from ralphstate.core.redgreen import ALREADY
from ralphstate.core.text import count, noun, visible, visible_lines
from ralphstate.report.story import (
    REFUTED,
    Criterion,
    Iteration,
    Story,
    money,
    parse_time,
    seconds,
    short,
)

WIDTH = 960  # the timeline's drawing width, in SVG units
LABEL = 200  # room on the left for the lanes' names
BAR_HEIGHT = 34
LANE_HEIGHT = 18
MIN_BAR = 6.0  # an iteration of a few seconds is still a bar one can point at
# The Stop rules' colours are theirs (core/outcomes.py, OUTCOMES); the runner's decisions
# and pauses that no Stop rule makes have these.
COLOURS: dict[str, str] = {
    **{rule: outcome.colour for rule, outcome in OUTCOMES.items() if outcome.colour},
    "continue": "#3b7dd8",
    "block": "#3b7dd8",
    "retry": "#3b7dd8",
    "run_max": OUTCOMES["max_iterations"].colour or "",
    "step_retries": OUTCOMES["stall"].colour or "",
    "limit": "#a05cc7",
    "user": "#a05cc7",
    "paused": "#a05cc7",
    "agent_errors": "#d0342c",
    "commit_failed": "#d0342c",
    "error": "#d0342c",
    "cancelled": "#777777",
}
# The decisions after which a run went on: a bar of one is drawn as the pause that came
# right after it, when one did (a budget reached before the next iteration could start).
WENT_ON = ("continue", "retry")

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
background:#f6f7f9;color:#1d2330}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.meta{color:#4a5466}.card{background:#fff;border:1px solid #dde1e8;border-radius:8px;
padding:16px;margin:12px 0}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;
font-weight:600;font-size:13px}
.complete{background:#2e9e4f}.in_progress{background:#3b7dd8}.paused{background:#a05cc7}
.cancelled{background:#777}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:5px 8px;
border-bottom:1px solid #eceff3;vertical-align:top}th{color:#4a5466;font-weight:600}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f3f4f7;padding:8px;overflow:auto;max-height:240px;margin:6px 0 0}
.ok{color:#2e9e4f;font-weight:600}.bad{color:#d0342c;font-weight:600}
.claim{color:#b07a12;font-weight:600}.stale{color:#b07a12;font-weight:700}
svg{width:100%;height:auto;display:block}svg text{font:12px system-ui,sans-serif;
fill:#1d2330}.legend span{display:inline-block;margin-right:14px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;
margin-right:5px;vertical-align:-1px}
"""


def _e(text: object) -> str:
    return escape(visible(str(text)), quote=True)


def _text(text: object) -> str:
    """Several lines (a check's output) made safe line by line, the line breaks kept."""
    return escape(visible_lines(str(text)), quote=True)


def html(story: Story) -> str:
    state = story.state
    status = state["status"]
    reason = f" ({_e(state['pauseReason'])})" if state.get("pauseReason") else ""
    cost = story.total_cost
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        (
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';'
            " style-src 'unsafe-inline'\">"
        ),
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>ralphstate report: {_e(state['spec'][:80])}</title>",
        f"<style>{STYLE}</style></head><body><main>",
        f"<h1>{_e(state['spec']) or 'ralphstate loop'}</h1>",
        f'<p class="meta"><span class="badge {_e(status)}">{_e(status.replace("_", " "))}'
        f"</span>{reason} · {_e(story.root)} · iteration {state['iteration']}"
        f"/{state['maxIterations']} · {story.met}/{len(story.criteria)}"
        f" {noun(len(story.criteria), 'criterion')} ·"
        f" {len(state['completedSteps'])}/{len(state['steps'])}"
        f" {noun(len(state['steps']), 'step')} ·"
        f" {count(len(story.iterations), 'iteration')} in {seconds(story.total_duration)}"
        + (f" · {story.total_tokens:,} tokens" if story.total_tokens is not None else "")
        + (f" · cost {money(cost)}" if cost is not None else "")
        + "</p>",
        '<section class="card"><h2 style="margin-top:0">Timeline</h2>',
        timeline(story),
        _legend(),
        "</section>",
        "<h2>Criteria</h2>",
        _criteria(story.criteria),
    ]
    if story.proof:
        items = "".join(f"<li>{_e(line)}</li>" for line in story.proof)
        parts += ["<h2>Proof</h2>", f'<div class="card"><ul>{items}</ul></div>']
    if state["steps"]:
        done = set(state["completedSteps"])
        items = "".join(
            f'<li><span class="{"ok" if s in done else "meta"}">{"✓" if s in done else "○"}'
            f"</span> {_e(s)}</li>"
            for s in state["steps"]
        )
        parts += ["<h2>Steps</h2>", f'<div class="card"><ul>{items}</ul></div>']
    parts += ["<h2>Iterations</h2>", _iterations(story.iterations)]
    if story.pauses:
        rows = "".join(
            f"<tr><td>{m.iteration}</td><td>{_e(m.at or '?')}</td><td>{_e(m.what)}</td>"
            f"<td><pre>{_e(m.detail)}</pre></td></tr>"
            if "\n" in m.detail
            else f"<tr><td>{m.iteration}</td><td>{_e(m.at or '?')}</td><td>{_e(m.what)}</td>"
            f"<td>{_e(m.detail)}</td></tr>"
            for m in story.pauses
        )
        parts += [
            "<h2>Pauses</h2>",
            (
                '<div class="card"><table><tr><th>after iteration</th><th>at</th><th>reason</th>'
                f"<th></th></tr>{rows}</table></div>"
            ),
        ]
    if story.commits:
        rows = "".join(
            f"<tr><td>{m.iteration}</td><td><code>{_e(short(m.what))}</code></td>"
            f"<td>{_e(m.detail)}</td></tr>"
            for m in story.commits
        )
        parts += [
            "<h2>Commits</h2>",
            (
                '<div class="card"><table><tr><th>iteration</th><th>commit</th><th>message</th>'
                f"</tr>{rows}</table></div>"
            ),
        ]
    if story.history_cut:
        parts.append('<p class="meta">Only the newest history lines were read.</p>')
    parts.append('<p class="meta">Report by <code>ralphstate report --html</code>.</p>')
    parts.append("</main></body></html>\n")
    return "\n".join(parts)


def _legend() -> str:
    items = [
        ("#3b7dd8", "iteration, went on"),
        ("#2e9e4f", "completed the loop · criterion proved by its check"),
        ("#b07a12", "criterion claimed, no check proving it"),
        ("#d98b1c", "paused: stall, cap or a step retried"),
        ("#a05cc7", "paused by or for a person (budget, limit, review)"),
        ("#d0342c", "error · failed commit · agent errors · claim its check refutes"),
    ]
    spans = "".join(f'<span><i style="background:{c}"></i>{t}</span>' for c, t in items)
    return f'<p class="legend meta">{spans}</p>'


def _ends(
    items: list[Iteration], scale: float, fallback: float
) -> tuple[list[tuple[Iteration, float, float]], float]:
    """Each bar (x, width), laid end to end from LABEL."""
    bars = []
    x = float(LABEL)
    for iteration in items:
        width = max(MIN_BAR, (iteration.duration or fallback) * scale)
        bars.append((iteration, x, width))
        x += width
    return bars, x


def with_paused_turns(story: Story) -> list[Iteration]:
    """The iterations, and after each stop the Stop hook paused the loop at, the turn
    that ended there: it did not go on, so it is drawn as the pause (`by` "pause")."""
    items = list(story.iterations)
    for moment in story.pauses:
        if moment.detail != "by the Stop hook":
            continue
        where = max((n + 1 for n, i in enumerate(items) if i.number <= moment.iteration), default=0)
        before = parse_time(items[where - 1].at) if where else None
        when = parse_time(moment.at)
        took = (when - before).total_seconds() if when and before else None
        ended = Iteration(moment.iteration, "pause", moment.at, took, "paused", moment.what)
        items.insert(where, ended)
    return items


def timeline(story: Story) -> str:
    """The SVG timeline: one `rect.bar` per iteration (`data-iteration`), and a
    `rect.paused` for the turn a Stop-hook pause ended; a lane per criterion turning
    green at the iteration that proved it, pause and commit marks."""
    items = with_paused_turns(story)
    known = [i.duration for i in items if i.duration]
    fallback = sorted(known)[len(known) // 2] if known else 1.0
    total = sum(i.duration or fallback for i in items) or 1.0
    scale = (WIDTH - LABEL) / total  # the bars share the width by duration
    bars, end = _ends(items, scale, fallback)
    scale_back = (WIDTH - LABEL) / max(end - LABEL, 1.0)  # min widths may overflow: shrink
    if scale_back < 1:
        bars = [(i, LABEL + (x - LABEL) * scale_back, w * scale_back) for i, x, w in bars]
        end = WIDTH
    lanes = len(story.criteria)
    top = 26
    height = top + BAR_HEIGHT + 16 + lanes * LANE_HEIGHT + 30

    def x_at(number: int) -> float:
        """The end of the last bar whose iteration is at most `number`."""
        found = float(LABEL)
        for iteration, x, width in bars:
            if iteration.number <= number:
                found = x + width
        return found

    def x_begin(number: int) -> float:
        """The start of the first bar whose iteration is at least `number`: a criterion
        that turned green during iteration N is green from bar N on."""
        for iteration, x, _ in bars:
            if iteration.number >= number:
                return x
        return end

    out = [
        (
            f'<svg class="timeline" viewBox="0 0 {WIDTH + 20} {height}" role="img"'
            f' aria-label="timeline of {count(len(story.iterations), "iteration")}">'
        ),
        f'<text x="0" y="{top + BAR_HEIGHT / 2 + 4}">iterations</text>',
    ]
    out += _bars(bars, top, {m.iteration: m.what for m in story.pauses})
    out += _marks(story, x_at, top)
    out += _lanes(story, x_begin, end, top + BAR_HEIGHT + 16)
    out.append("</svg>")
    return "".join(out)


def _bars(
    bars: list[tuple[Iteration, float, float]], top: float, paused: dict[int, str]
) -> list[str]:
    """One `rect.bar` per iteration, coloured by its decision and numbered when it is
    wide enough; a line saying so when there is none. A run's iteration after which
    the run paused (`paused`: why, by iteration) is drawn as that pause, and so is the
    turn a Stop-hook pause ended (`rect.paused`)."""
    if not bars:
        return [f'<text x="{LABEL}" y="{top + BAR_HEIGHT / 2 + 4}">no iteration yet</text>']
    out: list[str] = []
    last = {iteration.number: index for index, (iteration, _, _) in enumerate(bars)}
    for index, (iteration, x, width) in enumerate(bars):
        decision = iteration.decision
        tip = (
            f"iteration {iteration.number} ({iteration.by}): {seconds(iteration.duration)},"
            f" {iteration.result}, {decision}"
        )
        pause = paused.get(iteration.number) if last[iteration.number] == index else None
        if iteration.by == "run" and decision in WENT_ON and pause is not None:
            decision = pause if pause in COLOURS else "paused"
            tip += f", then paused: {pause}"
        kind, label = "bar", f"#{iteration.number}"
        if iteration.by == "pause":
            tip = f"the stop after iteration {iteration.number} paused the loop: {decision}"
            kind, label = "paused", "paused"
        colour = COLOURS.get(decision, COLOURS["user"] if kind == "paused" else "#3b7dd8")
        out.append(
            f'<rect class="{kind}" data-iteration="{iteration.number}" x="{x:.1f}" y="{top}"'
            f' width="{max(width - 1.5, 1):.1f}" height="{BAR_HEIGHT}" rx="3"'
            f' fill="{colour}"><title>{_e(tip)}</title></rect>'
        )
        if width > 34 + 20 * (kind == "paused"):
            out.append(
                f'<text x="{x + 5:.1f}" y="{top + BAR_HEIGHT / 2 + 4}" style="fill:#fff">'
                f"{label}</text>"
            )
    return out


def _lanes(story: Story, x_begin: Callable[[int], float], end: float, base: float) -> list[str]:
    """A lane per criterion from `base` down, green from the bar of each iteration
    that proved it until one that did not."""
    out: list[str] = []
    for row, criterion in enumerate(story.criteria):
        y = base + row * LANE_HEIGHT
        out.append(f'<text x="0" y="{y + 12}">{_e(criterion.name[:28])}</text>')
        out.append(
            f'<rect x="{LABEL}" y="{y + 3}" width="{max(end - LABEL, 1):.1f}" height="10"'
            ' rx="2" fill="#e3e6ec"/>'
        )
        turns = [(n, g, how) for name, n, g, how in story.turns if name == criterion.name]
        for index, (number, green, how) in enumerate(turns):
            if not green:
                continue
            start = x_begin(number)
            after = turns[index + 1] if index + 1 < len(turns) else None
            stop = end if after is None else x_begin(after[0])
            refuted = criterion.refuted if after is None else after[2] == "refuted"
            kind, colour, said = _lane(how, refuted)
            out.append(
                f'<rect class="{kind}" data-criterion="{_e(criterion.name)}" x="{start:.1f}"'
                f' y="{y + 3}" width="{max(stop - start, 3):.1f}" height="10" rx="2"'
                f' fill="{colour}"><title>{_e(criterion.name)}: {said} from iteration'
                f" {number}</title></rect>"
            )
    return out


def _lane(how: str, refuted: bool) -> tuple[str, str, str]:
    """The class, colour and words of a stretch of a criterion's lane: green where its
    check proved it, amber where it stood on the agent's word, red where its check
    refuted that word (at the stretch's end, or now)."""
    if how != "claimed":
        return "green", "#2e9e4f", "met"
    if refuted:
        return "refuted", "#d0342c", "claimed, refuted by its check,"
    return "claimed", "#b07a12", "claimed, no check proving it,"


def _marks(story: Story, x_at: Callable[[int], float], top: float) -> list[str]:
    """The pauses (a triangle above the bar they came after) and the commits (a dot
    below the iteration they were made after)."""
    out: list[str] = []
    for moment in story.pauses:
        x = x_at(moment.iteration)
        colour = COLOURS.get(moment.what, COLOURS["user"])  # a person's own words: purple
        out.append(
            f'<path class="pause" d="M{x:.1f} {top - 2} l-6 -10 h12 z" fill="{colour}">'
            f"<title>{_e(f'paused after iteration {moment.iteration}: {moment.what}')}</title>"
            "</path>"
        )
    for moment in story.commits:
        x = x_at(moment.iteration)
        out.append(
            f'<circle class="commit" cx="{x - 4:.1f}" cy="{top + BAR_HEIGHT + 6}" r="3.5"'
            f' fill="#1d2330"><title>{_e(f"commit {short(moment.what)}: {moment.detail}")}'
            "</title></circle>"
        )
    return out


def _criteria(criteria: list[Criterion]) -> str:
    rows = []
    for c in criteria:
        label = c.label or ("met" if c.met else "unmet")
        css = {
            "verified": "ok",
            "graded": "claim",
            "failing": "bad",
            "claimed": "claim",
            REFUTED: "bad",
        }.get(label, "meta")
        evidence = c.evidence
        where = ""
        if evidence.get("commit"):
            where = f"<code>{_e(short(evidence['commit']))}</code>"
            where += " (dirty)" if evidence.get("dirty") else ""
        stale = ' <span class="stale">stale: the code changed since</span>' if c.stale else ""
        if c.already_true:
            stale += f' <span class="stale">{_e(ALREADY)}</span>'
        if c.standing == "verified":
            stale += f' <span class="meta">{_e(provenance.words(evidence))}</span>'
        took = (
            seconds(evidence["durationMs"] / 1000)
            if isinstance(evidence.get("durationMs"), int)
            else ""
        )
        summary = (c.refutation or evidence).get("summary", "")
        tail = str((c.refutation or evidence).get("outputTail") or "")
        output = (
            f"<details><summary>output</summary><pre>{_text(tail)}</pre></details>" if tail else ""
        )
        rows.append(
            f'<tr><td>{_e(c.name)}</td><td><span class="{css}">{_e(label)}</span>{stale}</td>'
            f"<td>{f'<code>{_e(c.check)}</code>' if c.check else ''}</td>"
            f"<td>{where}</td><td>{_e(summary)}</td><td>{took}</td>"
            f"<td>{_e(evidence.get('at', ''))}{output}</td></tr>"
        )
    return (
        '<div class="card"><table><tr><th>criterion</th><th>status</th><th>check</th>'
        "<th>on commit</th><th>result</th><th>took</th><th>when</th></tr>"
        + "".join(rows)
        + "</table></div>"
    )


def _result(iteration: Iteration) -> str:
    """An iteration's result, and the sandbox it ran in when the run had one."""
    if iteration.sandbox:
        return f"{iteration.result} (sandbox: {iteration.sandbox})"
    return iteration.result


def _iterations(iterations: list[Iteration]) -> str:
    if not iterations:
        return '<div class="card meta">None yet.</div>'
    cost = any(i.cost is not None for i in iterations)
    rows = "".join(
        f"<tr><td>{i.number}</td><td>{_e(i.by)}</td><td>{_e(i.at or '?')}</td>"
        f"<td>{seconds(i.duration)}</td><td>{_e(_result(i))}</td><td>{_e(i.decision)}</td>"
        + (f"<td>{'' if i.cost is None else money(i.cost)}</td>" if cost else "")
        + f"<td><code>{_e(short(i.commit))}</code></td></tr>"
        for i in iterations
    )
    return (
        '<div class="card"><table><tr><th>#</th><th>by</th><th>ended</th><th>duration</th>'
        "<th>result</th><th>decision</th>"
        + ("<th>cost</th>" if cost else "")
        + f"<th>commit</th></tr>{rows}</table></div>"
    )
