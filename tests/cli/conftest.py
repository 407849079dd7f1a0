"""The loop most command tests start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time

from tests.helpers.commands import NOW


@pytest.fixture
def loop(project: Path, rs: Any) -> Path:
    """A loop with two criteria and three steps, made at NOW."""
    with freeze_time(NOW):
        result = rs(
            "init",
            "Build it",
            "-c",
            "tests pass",
            "-c",
            "lint clean",
            "-s",
            "write it",
            "-s",
            "test it",
            "-s",
            "ship it",
        )
    assert result.code == 0, result.err
    return project
