"""The plugin's copy and its data directory, for each test of the launcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.plugin import plugin_copy


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    return plugin_copy(tmp_path / "plugin")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"
