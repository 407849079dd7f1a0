"""What the action's tests under `act` share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def pip_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pip cache for every job of these tests in this process: each runner is new,
    the downloads need not be."""
    return tmp_path_factory.mktemp("pip-cache")
