"""`ralphstate doctor` says which `run --sandbox` modes work on this machine, and why
not, from a real trial start of each: bubblewrap, Claude Code's sandbox as it starts
(bubblewrap with the network unshared, and socat), sandbox-exec."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


def stand_ins(tmp_path: Path, programs: dict[str, str]) -> dict[str, str]:
    """The environment with `programs` (name: its sh script) first on PATH."""
    stand_in = tmp_path / "bin"
    stand_in.mkdir(exist_ok=True)
    for name, text in programs.items():
        program = stand_in / name
        program.write_text(f"#!/bin/sh\n{text}")
        program.chmod(0o755)
    return {**os.environ, "PATH": f"{stand_in}{os.pathsep}{os.environ['PATH']}"}


def claude_lines(tmp_path: Path, env: dict[str, str]) -> list[str]:
    lines = [line for line in doctor(tmp_path, env) if "--sandbox claude" in line]
    assert len(lines) == 1, lines
    return lines


@needs_bwrap
@pytest.mark.skipif(shutil.which("socat") is None, reason="socat is not installed")
def test_doctor_starts_claudes_sandbox_as_it_runs(tmp_path: Path, isolated: Path) -> None:
    """Claude Code's sandbox on Linux is bubblewrap with the network unshared, bridged
    out by socat: each is started, and a found one that cannot start is not "ok"."""
    assert claude_lines(tmp_path, dict(os.environ))[0].startswith("ok   run --sandbox claude")
    real = shutil.which("bwrap")
    no_net = (
        'for a in "$@"; do [ "$a" = --unshare-net ] &&'
        " { echo 'bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted' >&2; exit 1; }"
        f'; done\nexec "{real}" "$@"\n'
    )
    env = stand_ins(tmp_path, {"bwrap": no_net})
    lines = doctor(tmp_path, env)
    assert any(line.startswith("ok   run --sandbox bwrap works here") for line in lines), lines
    said = (
        "warn run --sandbox claude cannot start here: bubblewrap cannot start with the network"
        " unshared, as it runs it (bwrap: loopback: Failed RTM_NEWADDR: Operation not"
        " permitted)"
    )
    assert claude_lines(tmp_path, env) == [said]
    (tmp_path / "bin" / "bwrap").unlink()
    env = stand_ins(tmp_path, {"socat": "echo 'socat: error while loading libssl' >&2\nexit 127\n"})
    said = (
        "warn run --sandbox claude cannot start here: socat, which it runs, cannot start"
        " (socat: error while loading libssl)"
    )
    assert claude_lines(tmp_path, env) == [said]


def test_sandbox_exec_is_started_not_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor's trial of sandbox-exec (macOS) runs it with a profile and `true` inside;
    here a stand-in takes its place on PATH, as the program Linux lacks."""
    from ralphstate.sandbox import seatbelt

    seen = tmp_path / "argv"
    env = stand_ins(
        tmp_path,
        {
            "sandbox-exec": (
                f'printf "%s\\n" "$@" > "{seen}"\n'
                "echo 'sandbox-exec: sandbox_apply: Operation not permitted' >&2\nexit 71\n"
            )
        },
    )
    monkeypatch.setenv("PATH", env["PATH"])
    assert seatbelt.works() == (False, "sandbox-exec: sandbox_apply: Operation not permitted")
    argv = seen.read_text().splitlines()
    assert argv[0] == "-p" and "(version 1)" in argv[1] and argv[-1] == "/usr/bin/true", argv
    program = tmp_path / "bin" / "sandbox-exec"
    program.write_text('#!/bin/sh\n[ "$1" = -p ] && shift 2 && exec "$@"\n')
    assert seatbelt.works() == (True, str(program))


@pytest.mark.skipif(sys.platform != "darwin", reason="sandbox-exec is macOS's")
def test_doctor_says_sandbox_exec_starts(tmp_path: Path, isolated: Path) -> None:
    lines = doctor(tmp_path, dict(os.environ))
    assert any(line.startswith("ok   run --sandbox sandbox-exec works here") for line in lines)
