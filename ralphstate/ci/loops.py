"""Every loop of a matrix in one table (`ralphstate ci-summary`): the final job of a
workflow that runs many loops reads each loop's state from its branch as the remote
holds it (what that loop's last job pushed) and writes one table to the job's summary.

The table says what each branch records: the loop's status and why it paused, its
iterations, the criteria its record marks met, its spending. It proves nothing itself:
each loop's own job proved it (ci/confirm.py) before it pushed `complete`, and the merge
gate (`ralphstate prove`) proves it again on its pull request. A branch whose state
cannot be read is a row that says so, never a missing row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ralphstate.ci.pushing import git, text
from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible

STATE_PATH = ".loop/state.json"
SEEN = "refs/ralphstate/summary/"  # where the branches are fetched to, apart from any else


@dataclass
class Row:
    """One loop as its branch records it; `problem` when the branch or its state could
    not be read."""

    branch: str
    status: str = ""
    reason: str = ""
    iteration: int | None = None
    met: int = 0
    total: int = 0
    cost: float | None = None
    spec: str = ""
    problem: str = ""


def fetch(root: Path, remote: str, prefix: str) -> list[str]:
    """Fetch every branch of the remote under `prefix`; their names, sorted."""
    done = git(
        root,
        "fetch",
        "--quiet",
        "--no-tags",
        "--prune",
        remote,
        f"+refs/heads/{prefix}*:{SEEN}{prefix}*",
    )
    if done.code != 0:
        raise RalphstateError(f"could not fetch from {visible(remote)}: {visible(text(done))}")
    listed = git(root, "for-each-ref", "--format=%(refname)", f"{SEEN}{prefix}")
    names = listed.out.decode("utf-8", "replace").split()
    return sorted(name[len(SEEN) :] for name in names)


def row_of(root: Path, branch: str) -> Row:
    """The loop on `branch` (fetched by `fetch`), as its state file there says."""
    row = Row(branch)
    shown = git(root, "show", f"{SEEN}{branch}:{STATE_PATH}")
    if shown.code != 0:
        row.problem = f"no {STATE_PATH} on the branch"
        return row
    if len(shown.out) > limits.MAX_STATE_BYTES:
        row.problem = f"{STATE_PATH} is too large to read"
        return row
    try:
        state = orjson.loads(shown.out)
    except orjson.JSONDecodeError:
        state = None
    if not isinstance(state, dict):
        row.problem = f"{STATE_PATH} is not a loop's state"
        return row
    return fill(row, state)


def fill(row: Row, state: dict[str, Any]) -> Row:
    criteria = [c for c in state.get("criteria") or [] if isinstance(c, str)]
    marks = state.get("criteriaStatus")
    marks = marks if isinstance(marks, dict) else {}
    usage = state.get("usage")
    cost = usage.get("cost") if isinstance(usage, dict) else None
    iteration = state.get("iteration")
    row.status = str(state.get("status") or "?")
    row.reason = str(state.get("pauseReason") or "")
    row.iteration = iteration if isinstance(iteration, int) else None
    row.total = len(criteria)
    row.met = sum(1 for c in criteria if marks.get(c) is True)
    row.cost = float(cost) if isinstance(cost, (int, float)) else None
    row.spec = str(state.get("spec") or "")
    return row


def rows(root: Path, remote: str, prefix: str, only: list[str]) -> list[Row]:
    """A row per loop: the branches `only` names (a row that says it is missing for one
    the remote does not have), else every branch under `prefix`."""
    found = fetch(root, remote, prefix)
    wanted = [f"{prefix}{name}" for name in only] if only else found
    return [
        row_of(root, branch) if branch in found else Row(branch, problem="no such branch")
        for branch in wanted
    ]


def cell(value: str) -> str:
    """A table cell: one line, its pipes escaped, shortened."""
    one = " ".join(visible(value).split()).replace("|", "\\|")
    return one if len(one) <= 80 else one[:79] + "…"


def table(found: list[Row], remote: str) -> str:
    """The Markdown table of every loop, under one heading and one count line."""
    done = sum(1 for r in found if r.status == "complete")
    lines = [
        "## ralphstate: every loop",
        "",
        (
            f"{done} of {len(found)} complete, as each loop's branch on {cell(remote)}"
            " records it (each loop's own job proved it before recording it complete)."
        ),
        "",
    ]
    if not found:
        return "\n".join([*lines, "No loop's branch was found.", ""])
    lines += [
        "| loop | status | iterations | criteria met | cost (USD) | spec |",
        "|---|---|---|---|---|---|",
    ]
    for r in found:
        if r.problem:
            lines.append(f"| `{cell(r.branch)}` | {cell(r.problem)} | | | | |")
            continue
        status = r.status + (f" ({r.reason})" if r.reason else "")
        iterations = "" if r.iteration is None else str(r.iteration)
        cost = "" if r.cost is None else f"{r.cost:.2f}"
        lines.append(
            f"| `{cell(r.branch)}` | {cell(status)} | {iterations} | {r.met}/{r.total}"
            f" | {cost} | {cell(r.spec)} |"
        )
    return "\n".join([*lines, ""])
