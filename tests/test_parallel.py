"""The suite runs on every core (pytest-xdist, `-n auto` in pyproject.toml): each worker
has a system temporary directory of its own (tests/conftest.py), which every process a
test starts inherits."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def test_a_worker_and_the_processes_it_starts_have_a_temporary_directory_of_their_own() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    here = Path(tempfile.gettempdir())
    child = subprocess.run(
        [sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert Path(child.stdout.strip()) == here
    if worker is None:  # one process (`-n 0`): the system's own
        assert not here.name.startswith("rs-"), here
        return
    assert here.name.startswith(f"rs-{worker}-"), here
    # Open to every user, as the system's is: a test whose check runs as another user
    # (tests/verify/test_confine.py) makes its room there.
    assert here.is_dir() and here.stat().st_mode & 0o7777 == 0o1777
