from __future__ import annotations

from pathlib import Path

from tests.helpers import run_process


def test_init_then_status_in_a_real_process(project: Path) -> None:
    made = run_process(["init", "Build it", "-c", "tests pass"], cwd=project)
    assert made.returncode == 0, made.stderr
    shown = run_process(["status", "--json"], cwd=project)
    assert shown.returncode == 0
    assert b'"tests pass": false' in shown.stdout
