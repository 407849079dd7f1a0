"""What `status` says about a loop a newcomer made, read as they read it, from real
processes: the pause reason beside the status, a check that has not run, the stale
evidence in `--json`, and a hand-edited `criteriaStatus` key that misses a criterion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState
from tests.helpers import run_process
from tests.helpers.checks import py
from tests.helpers.gitrepo import git, init_repo, use_identity
from tests.helpers.person import trust

VALUE_IS_1 = py("import sys; sys.exit(0 if 'VALUE = 1' in open('app.py').read() else 1)")


def status(root: Path, *args: str) -> str:
    done = run_process(["status", *args], cwd=root)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def edit(root: Path, **changes: Any) -> None:
    path = root / ".loop" / "state.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_paused_loop_says_why_beside_its_status(project: Path) -> None:
    assert run_process(["init", "Build it", "-c", "a"], cwd=project).returncode == 0
    edit(project, status="paused", pauseReason="stall")
    head = status(project).splitlines()[0]
    assert head.startswith(f"loop {project}: paused (stall) · iteration 0/20 · owner none")


def test_a_check_that_has_not_run_says_so(project: Path) -> None:
    started = run_process(["init", "Build it", "--check", "tests pass", py("pass")], cwd=project)
    assert started.returncode == 0, started.stderr
    trust(project)
    assert "  [ ] tests pass  (check not run yet)\n" in status(project)
    assert run_process(["verify"], cwd=project).returncode == 0
    assert "  [x] tests pass  (verified " in status(project)


def test_status_json_lists_the_stale_evidence(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"app.py": "VALUE = 1\n"})
    started = run_process(
        ["init", "Keep it", "--check", "value is one", VALUE_IS_1, "-c", "docs"], cwd=project
    )
    assert started.returncode == 0, started.stderr
    trust(project)
    assert run_process(["verify"], cwd=project).returncode == 0
    assert json.loads(status(project, "--json"))["staleEvidence"] == []
    (project / "app.py").write_text("VALUE = 1\nOTHER = 2\n")  # other code than it proved
    shown = json.loads(status(project, "--json"))
    assert shown["staleEvidence"] == ["value is one"]
    assert shown["criteriaStatus"]["value is one"] is True  # still met: stale, not failing
    git(project, "checkout", "--", "app.py")
    assert json.loads(status(project, "--json"))["staleEvidence"] == []


def test_a_criteria_status_key_that_misses_a_criterion_says_did_you_mean(project: Path) -> None:
    started = run_process(["init", "Build it", "-c", "tests pass", "-c", "docs"], cwd=project)
    assert started.returncode == 0, started.stderr
    edit(project, criteriaStatus={"tests pas": True, "docs": False})  # a hand edit's typo
    said = (
        "criteriaStatus['tests pas'] is not in 'criteria'; did you mean 'tests pass'?"
        " (a new criterion goes in 'criteria' too)"
    )
    done = run_process(["status"], cwd=project)
    assert (done.returncode, done.stdout) == (1, b"")
    assert said in done.stderr.decode()
    hook = run_process(
        ["hook", "stop"], cwd=project, input=json.dumps({"session_id": "s1", "cwd": str(project)})
    )
    assert said in json.loads(hook.stdout)["systemMessage"]  # the person is told at the stop
    left = json.loads((project / ".loop" / "state.json").read_text(encoding="utf-8"))
    assert left["criteria"] == ["tests pass", "docs"]  # left as it was: nothing was added


@pytest.mark.parametrize(
    ("raw", "criteria"),
    [
        # The design notes' shape: the criteria in criteriaStatus alone.
        ({"criteriaStatus": {"tests pass": False, "docs": True}}, ["tests pass", "docs"]),
        # A key far from every listed criterion is a criterion added by hand.
        (
            {"criteria": ["tests pass"], "criteriaStatus": {"lint is clean": False}},
            ["tests pass", "lint is clean"],
        ),
    ],
)
def test_criteria_status_keys_still_add_criteria(raw: dict[str, Any], criteria: list[str]) -> None:
    assert st.normalise({"spec": "x", **raw})["criteria"] == criteria


@pytest.mark.parametrize("key", ["Tests Pass ", "test pass", "tests  pass"])
def test_near_misses_are_refused(key: str) -> None:
    with pytest.raises(CorruptState, match="did you mean 'tests pass'"):
        st.normalise({"spec": "x", "criteria": ["tests pass"], "criteriaStatus": {key: True}})
