"""The real project every shortcut is tried on, its person and its scripted agent
(tests/adversarial/scripted.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.scripted import Agent, Person, make_project
from tests.helpers.gitrepo import use_identity


@pytest.fixture
def calc(tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The calc project with the person's loop, trusted; its one test really fails."""
    use_identity(monkeypatch, isolated)
    root = tmp_path / "calc project"
    root.mkdir()
    return make_project(root)


@pytest.fixture
def person(calc: Path) -> Person:
    return Person(calc)


@pytest.fixture
def agent(calc: Path) -> Agent:
    return Agent(calc)
