"""What the README states about the state file, its links and the hooks, checked
against the code."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ralphstate.core import state as st
from tests.helpers import REPO, run_process

README = (REPO / "README.md").read_text(encoding="utf-8")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_inside_the_readme_leads_to_a_heading() -> None:
    headings = {_anchor(h) for h in re.findall(r"^#+ (.+)$", README, flags=re.MULTILINE)}
    links = set(re.findall(r"\]\(#([^)]+)\)", README))
    assert links and links <= headings, sorted(links - headings)


def test_the_state_table_names_every_key_ralphstate_writes() -> None:
    section = README.split("### The state file", 1)[1].split("\n\n| key |", 1)[1]
    table = section.split("\n\n", 1)[0]
    named = set(re.findall(r"`(\w+)`", table))
    assert set(st.FIELD_ORDER) <= named, sorted(set(st.FIELD_ORDER) - named)


def test_a_stop_with_no_state_file_is_allowed_silently(project: Path) -> None:
    (project / ".loop").mkdir()  # a loop directory, but no state.json in it
    hook_input = json.dumps({"session_id": "s1", "cwd": str(project)})
    for env in ({"CLAUDE_PROJECT_DIR": str(project)}, {}):
        done = run_process(["hook", "stop"], cwd=project, input=hook_input, env=env)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "1. No state file: allow, silently." in README
