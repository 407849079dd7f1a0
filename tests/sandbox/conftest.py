"""The calc project of tests/adversarial, its person, and a home of the test's own
(with a `~/.ssh` the agent must not reach), for runs under `--sandbox`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.adversarial.scripted import Person, make_project, person_env
from tests.helpers.gitrepo import use_identity

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"
)


@pytest.fixture
def calc(tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The calc project, its loop trusted, a second criterion without a check, and a
    home of its own with `~/.ssh`."""
    use_identity(monkeypatch, isolated)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA the person's key\n")
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "calc project"
    root.mkdir()
    make_project(root)
    Person(root).rs("criteria", "add", "docs written")
    return root


@pytest.fixture
def person(calc: Path) -> Person:
    return Person(calc, env=person_env())
