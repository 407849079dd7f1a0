"""Loop templates for `ralphstate init --from FILE`: JSON with the state's keys, or
a markdown checklist (the seeds' task files).

Markdown: the first `# Title` (or the text under a "Spec" heading) is the spec;
`- [ ]` items under a heading containing "Criteria" become criteria and under one
containing "Steps" become steps; `- [x]` items start out met or done. A criterion item
that ends with `(check: `COMMAND`)` carries its check:

    - [ ] tests pass (check: `python3 -m pytest -q`)

(a command holding a backquote is fenced with two: ``(check: ``echo `date` ``)``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.storage import fsio

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s+(.+?)\s*$")
# A criterion's own check at the end of its item: `NAME (check: `COMMAND`)`.
_CHECK = re.compile(
    r"^(?P<name>.*?)\s*\(\s*check:\s*(?P<fence>`+)\s*(?P<command>.+?)\s*(?P=fence)\s*\)$"
)


def load(path: Path) -> dict[str, Any]:
    """A template as state keys; RalphstateError when it cannot be used."""
    try:  # bounded, and never blocking on a FIFO or a device
        data = fsio.read_regular(path, limits.MAX_STATE_BYTES)
    except OSError as exc:
        raise RalphstateError(f"cannot read template {path}: {exc.strerror}.") from None
    if len(data) > limits.MAX_STATE_BYTES:
        raise RalphstateError(f"template {path} is larger than {limits.MAX_STATE_BYTES} bytes.")
    if path.suffix.lower() == ".json":
        return _from_json(path, data)
    return from_markdown(data.decode("utf-8", "replace"))


def _from_json(path: Path, data: bytes) -> dict[str, Any]:
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RalphstateError(
            f"template {path} is not valid JSON (line {exc.lineno}, column {exc.colno})."
        ) from None
    try:
        # A template's `verifyOnStop: false` is the author's choice, never an old default.
        checked = st.normalise({"noCriteria": False, **raw} if isinstance(raw, dict) else raw)
    except RalphstateError as exc:
        raise RalphstateError(str(exc).replace("state.json", f"template {path}")) from None
    keep = set(raw) if isinstance(raw, dict) else set()
    if "criteriaStatus" in keep:  # its keys are criteria too
        keep.add("criteria")
    return {k: v for k, v in checked.items() if k in keep}


def from_markdown(text: str) -> dict[str, Any]:
    spec_lines: list[str] = []
    title = ""
    criteria: list[str] = []
    status: dict[str, bool] = {}
    checks: dict[str, str] = {}
    steps: list[str] = []
    completed: list[str] = []
    section = ""
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            name = heading.group(2).strip()
            if not title and len(heading.group(1)) == 1:
                title = name
            lowered = name.lower()
            section = (
                "criteria"
                if "criteria" in lowered
                else "steps"
                if "step" in lowered or "tasks" in lowered
                else "spec"
                if "spec" in lowered
                else ""
            )
            continue
        item = _ITEM.match(line)
        if item and section in ("criteria", "steps"):
            done, name = item.group(1).lower() == "x", item.group(2)
            if section == "criteria":
                own = _CHECK.match(name)
                if own and own.group("name"):
                    name = own.group("name")
                    checks[name] = own.group("command")
                criteria.append(name)
                status[name] = done
            else:
                steps.append(name)
                if done:
                    completed.append(name)
        elif section == "spec" and line.strip():
            spec_lines.append(line.strip())
    spec = " ".join(spec_lines) or title
    if not criteria and not steps:
        raise RalphstateError(
            "the template has no `- [ ]` items under a Criteria or Steps heading."
        )
    found: dict[str, Any] = {
        "spec": spec,
        "criteria": criteria,
        "criteriaStatus": status,
        "steps": steps,
        "completedSteps": completed,
    }
    if checks:
        found["checks"] = checks
    return found
