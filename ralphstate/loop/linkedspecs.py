"""The specs a task file's header links to, which `ralphstate run` puts in its prompt
beside the `--context` files (docs/how-to/task-lists.md, "Linked specs").

The header is the file's lines before its first checkbox or its first `##` heading,
at most `HEADER_LINES` of them. A reference is a line `KEY: PATH` whose key is a word
in capitals (`SOURCE:`, `FEATURE:`, `REQ:`, `DESIGN:`, `SPEC:`; several paths
separated by commas) or a markdown link `[text](PATH)`, the path relative to the task
file's directory, else to the project root. A reference is followed when it is a
regular file inside the project, symlinks followed, under no `.git` and no `.loop` at
any depth (a nested project's `sub/.loop/state.json` is another loop's state, never a
spec); one that is not there yet (a spec the plan will write) is passed over. At most
`MAX_SPECS` are followed, and the prompt reads them within the `--context` files'
bounds (run/prompt.py, `read_context`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.loop import taskfile

HEADER_LINES = 40
MAX_SPECS = 8
_KEYED = re.compile(r"^\s*[-*]?\s*\**([A-Z][A-Z0-9_-]{1,30})\**\s*:\s*(.+?)\s*$")
_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)")
_BOX = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+\[[ xX]\]\s")
_PATHLIKE = re.compile(r"^[\w./@-]+\.[A-Za-z0-9]{1,8}$")


def references(text: str) -> list[str]:
    """The paths the header of the task file `text` names, in order, once each."""
    found: list[str] = []
    for line in text.split("\n")[:HEADER_LINES]:
        if _BOX.match(line) or line.startswith("## "):
            break
        named = [m.group(1) for m in _LINK.finditer(line)]
        keyed = _KEYED.match(line)
        if keyed and not named:
            named = [p.strip().strip("`") for p in keyed.group(2).split(",")]
        found += [p for p in named if _PATHLIKE.match(p) and "://" not in p]
    return list(dict.fromkeys(found))


def linked(root: Path, state: st.State, already: list[Path]) -> list[Path]:
    """The spec files the loop's task file links to that are there to read, inside the
    project, and not among `already`; none without a task file, or when it cannot be
    read (the run says that itself)."""
    name = state["tasksFile"]
    if not name:
        return []
    try:
        text = taskfile.read(root, name).decode("utf-8", "replace")
    except RalphstateError:
        return []
    top = root.resolve()
    seen = {p.resolve() for p in already} | {(top / name).resolve()}
    found: list[Path] = []
    for ref in references(text):
        real = _inside(top, [(top / name).parent / ref, top / ref])
        if real is None or real in seen:
            continue
        seen.add(real)
        found.append(real)
        if len(found) == MAX_SPECS:
            break
    return found


def _inside(top: Path, candidates: list[Path]) -> Path | None:
    """The first candidate that is a regular file inside the project, under no `.git`
    and no `.loop` (the project's own or a nested one's), as a real path; None when
    none is."""
    for path in candidates:
        real = path.resolve()
        if top not in real.parents:
            continue
        if {".git", ".loop"} & set(real.relative_to(top).parts) or not real.is_file():
            continue
        return real
    return None
