"""Old iteration logs are pruned, through a real `ralphstate run`: the newest
`keep-logs` stay, and so do as many of the iterations that failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import run_agents
from tests.run.test_run import make_loop, run


def logs(project: Path) -> list[str]:
    return sorted(p.name for p in (project / ".loop" / "runs").glob("*.log"))


def test_a_run_keeps_the_newest_logs_and_the_failures(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, "--stall-limit", "20")
    (project / ".loop" / "config.toml").write_text("[run]\nkeep-logs = 3\n")
    for n in range(1, 9):
        failed = n in (2, 3)
        run_agents.replay(agents, f"iteration {n}\n".encode(), 1 if failed else 0, n)
    done = run(project, "--agent", run_agents.command(script, "stdin", "replay"), "--max", "8")
    assert done.returncode == 3, done.stderr  # paused: the cap of this run
    assert logs(project) == ["0002.log", "0003.log", "0006.log", "0007.log", "0008.log"]
    runs = project / ".loop" / "runs"
    assert sorted(p.name for p in runs.glob("*.failed")) == ["0002.log.failed", "0003.log.failed"]
    assert (runs / "0008.log").read_bytes().endswith(b"iteration 8\n")


def test_a_later_run_prunes_what_an_earlier_one_left(
    rs: Any, project: Path, script: Path, agents: Path
) -> None:
    make_loop(rs, "--stall-limit", "20")
    runs = project / ".loop" / "runs"
    runs.mkdir()
    for n in range(1, 61):
        (runs / f"{n:04d}.log").write_bytes(b"old\n")
    (runs / "0007.log.failed").write_bytes(b"")
    (runs / "notes.txt").write_bytes(b"a person's file\n")
    done = run(project, "--agent", run_agents.command(script, "stdin", "build"), "--max", "1")
    assert done.returncode == 3, done.stderr
    kept = logs(project)
    assert len(kept) == 51 and "0007.log" in kept and "0001.log" not in kept
    assert (runs / "notes.txt").exists()  # only iteration logs are pruned


def test_a_bad_keep_logs_is_one_line(rs: Any, project: Path, script: Path) -> None:
    make_loop(rs)
    (project / ".loop" / "config.toml").write_text("[run]\nkeep-logs = 0\n")
    done = run(project, "--agent", run_agents.command(script, "stdin", "build"), "--max", "1")
    assert done.returncode == 1
    assert (
        done.stderr.decode()
        .strip()
        .endswith("'keep-logs' must be a whole number from 1 to 100000, not 0.")
    ), done.stderr
