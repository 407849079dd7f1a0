"""Text for people: the status view, history lines, the loop list."""

from __future__ import annotations

from typing import Any

from ralphstate import clock
from ralphstate import state as st

Style = Any  # a callable like click.style(text, fg=...)


def _plain(text: str, **_: Any) -> str:
    return text


def status(state: st.State, where: str, style: Style = _plain) -> str:
    met = len(state["criteria"]) - len(st.unmet(state))
    colour = {"in_progress": "yellow", "paused": "magenta", "complete": "green"}.get(
        state["status"], "red"
    )
    owner = state.get("sessionId")
    head = [
        style(state["status"].replace("_", " "), fg=colour, bold=True),
        f"iteration {state['iteration']}/{state['maxIterations']}",
        f"owner {owner[:8] if owner else 'none'}",
        f"updated {clock.age(state.get('updatedAt'))} ago",
    ]
    if state.get("pauseReason"):
        head.insert(1, f"({state['pauseReason']})")
    lines = [f"loop {where}: " + " · ".join(head), f"spec: {state['spec']}"]
    lines.append(f"criteria {met}/{len(state['criteria'])}:")
    for name in state["criteria"]:
        ok = st.met(state, name)
        mark = style("[x]", fg="green") if ok else style("[ ]", fg="red")
        lines.append(f"  {mark} {name}")
    steps = state["steps"]
    if steps:
        lines.append(f"steps {len(state['completedSteps'])}/{len(steps)}:")
        remaining = state["remainingSteps"]
        for name in steps:
            if name in state["completedSteps"]:
                lines.append(f"  {style('[x]', fg='green')} {name}")
            elif remaining and name == remaining[0]:
                lines.append(f"  {style('[>]', fg='yellow')} {name}  (next)")
            else:
                lines.append(f"  [ ] {name}")
    return "\n".join(lines)


def history_line(entry: dict[str, Any]) -> str:
    details = {k: v for k, v in entry.items() if k not in ("at", "event", "iteration")}
    text = " ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in details.items())
    at, it, name = entry.get("at", "?"), entry.get("iteration", "?"), entry.get("event", "?")
    return f"{at}  #{it!s:<3} {name!s:<16} {text}".rstrip()


def loop_row(row: dict[str, Any]) -> str:
    total = row.get("criteriaTotal")
    met = row.get("criteriaMet")
    criteria = f"{met}/{total}" if total is not None else "?"
    spec = str(row.get("spec") or "")[:50]
    return f"{row.get('status', '?'):<12} {criteria:<6} {row['path']}  {spec}"
