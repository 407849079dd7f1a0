"""Loop templates for `ralphstate init --from FILE`: JSON with the state's keys, or
a markdown checklist (the seeds' task files).

Markdown: the first `# Title` (or the text under a "Spec" or "Goal" heading) is the
spec; `- [ ]` items under a heading containing "Criteria" become criteria and under one
naming steps, tasks, a backlog or a phase become steps, with the headings inside it (a
plan's "### Phase 1: Specifications" under "## Steps"); `- [x]` items start out met or
done. Boxes under other headings ("Open Questions") are not read; a box under the spec's
heading is refused, as is a template with no box to read. A tracker's frontmatter
(loop/tracker.py) is read first. A criterion item that ends with `(check: `COMMAND`)`
carries its check:

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
from ralphstate.loop import taskfile
from ralphstate.storage.system import fsio

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ITEM = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s+(.+?)\s*$")


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
    from ralphstate.loop import tracker

    settings, body = tracker.read(data.decode("utf-8", "replace"), str(path))
    found = from_markdown(body)
    if settings is not None:  # a tracker's frontmatter: init settles it with its options
        found["tracker"] = (str(path), settings)
    return found


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
    """A markdown checklist, or a plan, as state keys; RalphstateError, in one sentence,
    for one it cannot read."""
    reading = _Reading()
    fence = ""
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if opened and (not fence or opened.group(1)[0] == fence[0]):
            fence = "" if fence else opened.group(1)
            continue
        if fence:  # a box or a heading shown in code is not the template's
            if reading.section == "spec":
                reading.spec_lines.append(line.strip())
            continue
        heading = _HEADING.match(line)
        if heading:
            reading.heading(len(heading.group(1)), heading.group(2).strip())
        else:
            reading.line(line)
    return reading.found()


def _kind(name: str) -> str:
    """What a heading opens: "criteria", "steps", "spec", or "" (nothing read)."""
    lowered = name.lower()
    words = set(re.findall(r"[a-z]+", lowered))
    if "criteria" in lowered:
        return "criteria"
    if words & {"step", "steps", "tasks", "phase", "backlog", "todo"}:
        return "steps"
    if words & {"spec", "specs", "specification", "specifications", "goal", "objective"}:
        return "spec"
    return ""


class _Reading:
    """A markdown template as read so far: the section it is in, and what it found."""

    def __init__(self) -> None:
        self.title = ""
        self.section = ""
        self.level = 0  # the level of the heading that opened the section
        self.heading_name = ""
        self.spec_lines: list[str] = []
        self.criteria: list[str] = []
        self.status: dict[str, bool] = {}
        self.checks: dict[str, str] = {}
        self.steps: list[str] = []
        self.completed: list[str] = []

    def heading(self, level: int, name: str) -> None:
        if not self.title and level == 1:  # the title: the spec, when no section gives one
            self.title = name
            self.section = ""
            self.level = level
            return
        # A heading inside Steps or Criteria (a plan's "### Phase 1: Specifications")
        # is a part of it, not a section of its own.
        if self.section in ("criteria", "steps") and level > self.level:
            return
        self.section = _kind(name)
        self.level = level
        self.heading_name = name

    def line(self, line: str) -> None:
        item = _ITEM.match(line)
        if item and self.section == "spec":
            raise RalphstateError(
                f"the template has a checkbox under its heading {self.heading_name!r}, read"
                " as the spec: put its boxes under a Criteria or Steps heading."
            )
        if item and self.section in ("criteria", "steps"):
            done, name = item.group(1).lower() == "x", item.group(2)
            if self.section == "steps":
                self.steps.append(name)
                if done:
                    self.completed.append(name)
                return
            name, check = taskfile.own_check(name)
            if check is not None:
                self.checks[name] = check
            self.criteria.append(name)
            self.status[name] = done
        elif self.section == "spec" and line.strip():
            self.spec_lines.append(line.strip())

    def found(self) -> dict[str, Any]:
        if not self.criteria and not self.steps:
            raise RalphstateError(
                "the template has no `- [ ]` items under a Criteria or Steps heading."
            )
        found: dict[str, Any] = {
            "spec": " ".join(s for s in self.spec_lines if s) or self.title,
            "criteria": self.criteria,
            "criteriaStatus": self.status,
            "steps": self.steps,
            "completedSteps": self.completed,
        }
        if self.checks:
            found["checks"] = self.checks
        return found
