"""A tracker's frontmatter (loop/tracker.py), a plan read as a template
(loop/template.py) and the specs a task file's header links (loop/linkedspecs.py), part
by part; tests/loop/test_design_notes.py follows the notes' own examples end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.loop import linkedspecs, template, tracker

FRONT = '---\niteration: 2\nmax_iterations: 5\ncompletion_marker: "E2E_COMPLETE"\n---\n# T\n'


def test_a_flat_frontmatter_is_read_and_its_body_kept() -> None:
    keys, body = tracker.split(FRONT, "t.md")
    assert keys == {"iteration": "2", "max_iterations": "5", "completion_marker": "E2E_COMPLETE"}
    assert body == "# T\n"
    assert tracker.settings(keys, "t.md") == {
        "maxIterations": 5,
        "iteration": 2,
        "completionMarker": "E2E_COMPLETE",
    }


def test_text_without_a_frontmatter_is_no_tracker() -> None:
    assert tracker.split("# T\n---\n", "t.md") == (None, "# T\n---\n")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("---\nloop:\n  active: true\n---\n", "line 3 of t.md's frontmatter is not a flat"),
        ("---\n- a\n---\n", "line 2 of t.md's frontmatter is not a flat"),
        ("---\niteration: 0\n" + "# c\n" * 50, "does not end within 40 lines"),
        ("---\nowner: me\n---\n", "t.md's frontmatter has owner, which ralphstate does not read"),
        ("---\nmax_iterations: 0\n---\n", "max_iterations is a whole number of at least 1"),
        ("---\niteration: -1\n---\n", "iteration is a whole number of at least 0"),
        ("---\nactive: false\n---\n", "says active: false, a loop that has ended"),
        ("---\nactive: maybe\n---\n", "active is true or false"),
        ("---\ncompletion_marker: 'a`b'\n---\n", "completion_marker: a marker cannot hold"),
        ("---\nstarted_at: yesterday\n---\n", "started_at is not a date and time"),
    ],
)
def test_a_frontmatter_it_cannot_honour_is_refused_naming_why(text: str, says: str) -> None:
    with pytest.raises(RalphstateError) as raised:
        tracker.read(text, "t.md")
    assert says in str(raised.value)


def test_quotes_and_comments_are_read_as_yaml_reads_them() -> None:
    keys, _ = tracker.split('---\na: "say \\"hi\\""\nb: \'x # y\'\nc: 7 # seven\n---\n', "t")
    assert keys == {"a": 'say "hi"', "b": "x # y", "c": "7"}


def test_settle_refuses_a_conflict_and_an_iteration_at_the_cap() -> None:
    found: list[tuple[str, dict[str, Any]]] = [
        ("t.md", {"maxIterations": 15, "completionMarker": "E2E_COMPLETE", "iteration": 3})
    ]
    assert tracker.settle(found, {}, None, None) == (15, "E2E_COMPLETE", 3)
    assert tracker.settle(found, {}, 15, "E2E_COMPLETE") == (15, "E2E_COMPLETE", 3)
    with pytest.raises(RalphstateError, match="completion_marker: E2E_COMPLETE and --marker"):
        tracker.settle(found, {}, None, "DONE")
    with pytest.raises(RalphstateError, match="iteration 3 has reached its max_iterations 3"):
        tracker.settle([("t.md", {"iteration": 3})], {}, 3, None)
    both: list[tuple[str, dict[str, Any]]] = [*found, ("u.md", {"maxIterations": 9})]
    with pytest.raises(RalphstateError, match=r"u\.md.s frontmatter says max_iterations: 9"):
        tracker.settle(both, {}, None, None)


def test_the_marker_counts_in_a_trackers_body_only(tmp_path: Path) -> None:
    (tmp_path / "t.md").write_text(FRONT + "E2E_COMPLETE\n")
    (tmp_path / "plain.md").write_text("# T\nE2E_COMPLETE\n")
    assert tracker.body_with_marker(tmp_path, "t.md", "E2E_COMPLETE") == "# T\nE2E_COMPLETE\n"
    assert tracker.body_with_marker(tmp_path, "plain.md", "E2E_COMPLETE") is None
    assert tracker.body_with_marker(tmp_path, "gone.md", "E2E_COMPLETE") is None
    assert tracker.body_with_marker(tmp_path, None, "E2E_COMPLETE") is None


PLAN = """\
# PLAN-1: a tool with a Task in its title

## Goal

Build the tool.

```
tool --task x.md
```

## Steps

### Phase 1: Specifications

- [ ] write the spec

### Phase 2: Core

- [x] write the core

## Risks

- none

## Completion Criteria

- [ ] it works (check: `make test`)

## Open Questions

- [ ] should it?
"""


def test_a_plans_phases_are_its_steps_and_its_goal_the_spec() -> None:
    found = template.from_markdown(PLAN)
    assert found["spec"] == "Build the tool. tool --task x.md"
    assert found["steps"] == ["write the spec", "write the core"]
    assert found["completedSteps"] == ["write the core"]
    assert found["criteria"] == ["it works"]
    assert found["checks"] == {"it works": "make test"}


def test_a_phase_heading_opens_steps_and_a_box_in_code_is_not_read() -> None:
    found = template.from_markdown(
        "# T\n## Phase 1: Specifications\n- [ ] a\n```\n- [ ] not a step\n```\n"
    )
    assert (found["spec"], found["steps"]) == ("T", ["a"])


def test_a_box_under_the_spec_heading_is_refused() -> None:
    with pytest.raises(RalphstateError, match="checkbox under its heading 'Specification'"):
        template.from_markdown("# T\n## Specification\n- [ ] a\n## Steps\n- [ ] b\n")


def test_header_references_are_read_up_to_the_first_box_or_section() -> None:
    text = (
        "# TASK-1\nSOURCE: a/REQ.md, a/FEAT.md\n**DESIGN**: `d.md`\n"
        "See [the design](docs/x.md) and https://example.com/y.md\n"
        "NOTE: not a path\n\n## Tasks\nSPEC: late.md\n"
    )
    assert linkedspecs.references(text) == ["a/REQ.md", "a/FEAT.md", "d.md", "docs/x.md"]


def test_linked_specs_stay_inside_the_project(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "tasks").mkdir(parents=True)
    (root / ".loop").mkdir()
    (root / "tasks" / "near.md").write_text("near")
    (root / "top.md").write_text("top")
    (root / ".loop" / "state.md").write_text("no")
    (tmp_path / "secret.md").write_text("no")
    (root / "link.md").symlink_to(tmp_path / "secret.md")
    (root / "tasks" / "T.md").write_text(
        "SPEC: near.md, top.md, ../../secret.md, link.md, .loop/state.md, missing.md\n- [ ] x\n"
    )
    state = st.new("s", [], [], now="2026-01-01T00:00:00Z", extra={"tasksFile": "tasks/T.md"})
    found = linkedspecs.linked(root, state, [])
    assert found == [(root / "tasks" / "near.md").resolve(), (root / "top.md").resolve()]
    assert linkedspecs.linked(root, state, [root / "top.md"]) == found[:1]
