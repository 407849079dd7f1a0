"""Fixtures of the install tests."""

from __future__ import annotations

import os
import venv
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of a fresh venv with nothing installed, as after `pip uninstall
    ralphstate`: it cannot import ralphstate."""
    where = tmp_path_factory.mktemp("bare") / "venv"
    venv.create(where, with_pip=False, symlinks=os.name != "nt")
    python = where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    assert python.exists()
    return python
