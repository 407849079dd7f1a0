"""`ralphstate prove`, the required check of a pull request: the loop is proved by the
base branch's contract on the pull request's merge commit, never by the pull request's
own. Real git, a real remote, a real failing pytest project, real processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest

from ralphstate.ci import gate
from tests.adversarial.scripted import (
    FIXED_CALC,
    Person,
    make_project,
    person_env,
    ralphstate,
)
from tests.helpers.gitrepo import git, use_identity


@pytest.fixture
def base(tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The remote: `main` holds the calc project and the person's loop, its test failing."""
    use_identity(monkeypatch, isolated)
    person = tmp_path / "person"
    person.mkdir()
    make_project(person, Person(person))
    git(person, "add", "-A")
    git(person, "commit", "-qm", "the loop")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(person, "push", "-q", str(remote), "main")
    return remote


def pull_request(tmp_path: Path, remote: Path, change: dict[str, str]) -> Path:
    """A runner's checkout of the pull request's merge commit: a branch from main with
    `change` (path: text) committed, merged into main."""
    work = tmp_path / "runner"
    git(tmp_path, "clone", "-q", str(remote), str(work))
    git(work, "checkout", "-q", "-b", "loop/calc")
    for name, text in change.items():
        (work / name).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "the work")
    git(work, "checkout", "-q", "main")
    git(work, "merge", "-q", "--no-ff", "-m", "merge the pull request", "loop/calc")
    return work


def run_prove(work: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**person_env(), "RALPHSTATE_HOME": str(tmp_path / "runner-home")}
    return ralphstate(work, env, "prove", "--trusted-branch", "main")


def test_an_honest_pull_request_is_proven_and_noted(base: Path, tmp_path: Path) -> None:
    work = pull_request(tmp_path, base, {"calc/__init__.py": FIXED_CALC})

    done = run_prove(work, tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "proven by .loop/state.json on main at" in done.stdout
    noted = orjson.loads(git(work, "notes", "--ref", gate.NOTES_REF, "show", "HEAD"))
    assert noted["proven"] is True
    assert noted["tree"] == git(work, "rev-parse", "HEAD^{tree}")
    assert len(noted["contract"]) == 64
    assert [c["passed"] for c in noted["checks"]] == [True]


def test_a_pull_request_whose_code_still_fails_is_not_proven(base: Path, tmp_path: Path) -> None:
    work = pull_request(tmp_path, base, {"README.md": "mul is done\n"})

    done = run_prove(work, tmp_path)

    assert done.returncode == 1
    assert "NOT proven" in done.stdout and "does not pass" in done.stdout
    assert (
        orjson.loads(git(work, "notes", "--ref", gate.NOTES_REF, "show", "HEAD"))["proven"] is False
    )


def test_a_pull_request_that_replaces_the_check_is_not_proven(base: Path, tmp_path: Path) -> None:
    state_file = ".loop/state.json"
    clone = tmp_path / "peek"
    git(tmp_path, "clone", "-q", str(base), str(clone))
    state = orjson.loads((clone / state_file).read_bytes())
    state["checks"]["tests pass"] = "true"
    work = pull_request(tmp_path, base, {state_file: orjson.dumps(state).decode()})

    done = run_prove(work, tmp_path)

    assert done.returncode == 1
    assert "changes what proves the loop" in done.stdout
