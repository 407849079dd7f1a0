"""Graded criteria under `ralphstate run`: the run's own check is followed by the
reviewer (a scripted one that answers by the diff); a failure is unmet again and the
next iteration's prompt carries its reasons; after the fix the run ends complete, and
its `--json` summary names the criterion graded, not verified."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import spawn
from tests.helpers import run_agents
from tests.helpers.gitrepo import init_repo, use_identity
from tests.verify.test_grading import NAME, REVIEWER, RUBRIC


def test_a_run_completes_on_a_graded_criterion_only_when_the_reviewer_passes_it(
    rs: Any,
    project: Path,
    script: Path,
    agents: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "git-home").mkdir()
    use_identity(monkeypatch, tmp_path / "git-home")
    init_repo(project, {"README.md": "# tool\n"})
    reviewer = tmp_path / "reviewer.py"
    reviewer.write_text(REVIEWER)
    seen = tmp_path / "prompt.txt"
    assert rs("init", "Add a --dry-run flag", "--rubric", NAME, RUBRIC).code == 0
    assert (
        rs(
            "config", "reviewer", spawn.join_command([sys.executable, str(reviewer), str(seen)])
        ).code
        == 0
    )
    agent = run_agents.command(script, "stdin", "progress")

    done = rs("run", "--agent", agent, "--max", "2", "--json")
    assert orjson.loads(done.out)["outcome"] != "complete", done
    assert "reviewer failed: README explains --dry-run (graded, not verified)" in done.err
    second = (agents / "prompt-2.txt").read_text()
    assert "a reviewer did not pass it: The diff does not touch the README" in second
    state = orjson.loads((project / ".loop" / "state.json").read_bytes())
    assert state["grades"][NAME]["where"] == "run"
    assert state["usage"]["cost"] >= 0.25

    (project / "README.md").write_text("# tool\n\n`--dry-run` shows the changes; writes no file.\n")
    again = rs("run", "--agent", agent, "--max", "1", "--json")
    summary = orjson.loads(again.out)
    assert summary["outcome"] == "complete", again
    assert summary["criteria"]["graded"] == [NAME]
    assert "1 graded by a reviewer" in again.err and "verified by" not in again.err
    assert summary["criteria"]["verified"] == [] and summary["criteria"]["claimed"] == []
