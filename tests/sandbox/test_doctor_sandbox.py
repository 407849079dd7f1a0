"""`ralphstate doctor` says which `run --sandbox` modes work on this machine, and why
not, from a real trial start of bubblewrap."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.sandbox.conftest import needs_bwrap


def doctor(cwd: Path, env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", "doctor"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return [line for line in done.stdout.splitlines() if "--sandbox" in line]


@needs_bwrap
def test_doctor_says_bubblewrap_works(tmp_path: Path, isolated: Path) -> None:
    lines = doctor(tmp_path, dict(os.environ))
    assert any(line.startswith("ok   run --sandbox bwrap works here") for line in lines), lines


def test_doctor_says_why_bubblewrap_cannot_start(tmp_path: Path, isolated: Path) -> None:
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    program = stand_in / "bwrap"
    program.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    program.chmod(0o755)
    env = {**os.environ, "PATH": f"{stand_in}{os.pathsep}{os.environ['PATH']}"}
    lines = doctor(tmp_path, env)
    assert (
        "warn run --sandbox bwrap cannot start here: bwrap: No permissions to creating new"
        " namespace"
    ) in lines, lines


def test_doctor_calls_claudes_sandbox_broken_where_bubblewrap_cannot_start(
    tmp_path: Path, isolated: Path
) -> None:
    """Claude Code's sandbox runs bubblewrap on Linux: with `bwrap` and `socat` found but
    bubblewrap unable to start, doctor says so rather than "ok"."""
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    for name, text in (("bwrap", "echo 'bwrap: No permissions' >&2\nexit 1\n"), ("socat", "")):
        program = stand_in / name
        program.write_text(f"#!/bin/sh\n{text}")
        program.chmod(0o755)
    env = {**os.environ, "PATH": f"{stand_in}{os.pathsep}{os.environ['PATH']}"}
    lines = [line for line in doctor(tmp_path, env) if "--sandbox claude" in line]
    assert lines and all(line.startswith("warn") for line in lines), lines
    assert "bubblewrap, which it runs, cannot start (bwrap: No permissions)" in lines[0]
