"""The scripted agents `ralphstate run` drives in these tests (tests/helpers/run_agents.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_agents


@pytest.fixture
def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake agent's record directory, named in the environment the runner passes on."""
    directory = tmp_path / "agent record"
    directory.mkdir()
    for key, value in run_agents.env(directory).items():
        monkeypatch.setenv(key, value)
    return directory


@pytest.fixture
def script(agents: Path, tmp_path: Path) -> Path:
    """The scripted agent, written into the test's directory."""
    return run_agents.write(tmp_path / "agents")
