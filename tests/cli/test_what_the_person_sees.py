"""What a new user reads from the commands: counts in the singular, `pause` and
`resume` twice, `cancel` after completion, check output in `log`, a typo among many
names, `watch --once` on a broken file, `adopt --help`, and what git sees in `.loop/`."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import state as st
from ralphstate.loop.gitignore import GITIGNORE
from tests.helpers import colleague


def state_bytes(project: Path) -> bytes:
    return (project / ".loop" / "state.json").read_bytes()


def history_events(project: Path) -> list[str]:
    lines = (project / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [orjson.loads(line)["event"] for line in lines]


PASS = shlex.quote(sys.executable) + ' -c "pass"'


def test_one_of_each_is_counted_in_the_singular(project: Path, rs: Any) -> None:
    done = rs("init", "Build it", "-c", "tests pass", "-s", "write it", "--max-iterations", "1")
    assert done.out == (
        "started a loop in .loop/state.json: 1 criterion, 1 step, max 1 iteration\n"
        "not guarding any files: the project is not in a git repository\n"
        + colleague(
            4,
            "give 1 criterion a check (--check NAME COMMAND); say the request in 8 to 2000 words"
            " (it has 2); guard the files that prove it (--guard PATH)",
        )
    )
    assert rs("criteria", "check", "tests pass", PASS).code == 0
    assert rs("verify").out.endswith("\nthe one check passed\n")
    assert rs("trust").out.endswith(f"\ntrusted this check in {project} on this machine\n")


def test_pause_twice_and_resume_twice_agree(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "tests pass")
    first, second = rs("pause", "--reason", "lunch"), rs("pause")
    assert (first.code, first.out) == (0, "paused; continue with `ralphstate resume`\n")
    assert (second.code, second.out, second.err) == (
        0,
        "already paused (lunch); continue with `ralphstate resume`\n",
        "",
    )
    assert st.parse(state_bytes(project))["pauseReason"] == "lunch"
    first, second = rs("resume"), rs("resume")
    assert (first.code, first.out) == (0, "in progress: iteration 0/20\n")
    assert (second.code, second.out, second.err) == (
        0,
        "already in progress: iteration 0/20\n",
        "",
    )
    assert history_events(project) == ["init", "paused", "resumed"]


def test_cancel_leaves_a_completed_loop_complete(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "tests pass")
    path = project / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw.update(status="complete", criteriaStatus={"tests pass": True})
    path.write_bytes(orjson.dumps(raw))
    before = path.read_bytes()
    done = rs("cancel")
    assert (done.code, done.out, done.err) == (
        1,
        "",
        "ralphstate: the loop is complete; there is nothing to cancel (it stays complete).\n",
    )
    assert path.read_bytes() == before


def test_log_prints_a_checks_output_as_lines(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "tests pass")
    loop_id = orjson.loads(state_bytes(project))["loopId"]
    check = {
        "at": "2026-01-01T00:00:00Z",
        "event": "check",
        "iteration": 0,
        "loop": loop_id,
        "criterion": "tests pass",
        "result": "failing",
        "outputTail": "FAILED test_a\n\x1b[31m1 failed\x1b[0m\n",
    }
    with (project / ".loop" / "history.jsonl").open("ab") as history:
        history.write(orjson.dumps(check) + b"\n")
    out = rs("log", "-n", "1").out
    assert out == (
        '2026-01-01T00:00:00Z  #0   check            "tests pass" failing\n'
        "    outputTail:\n"
        "      FAILED test_a\n"
        "      \\x1b[31m1 failed\\x1b[0m\n"
    )


NAMES = [f"criterion number {i:02}" for i in range(60)]


def sixty(project: Path, rs: Any) -> None:
    args = [a for name in NAMES for a in ("-c", name)]
    assert rs("init", "Build it", *args).code == 0


def test_a_typo_among_sixty_criteria_suggests_the_closest(project: Path, rs: Any) -> None:
    sixty(project, rs)
    done = rs("criteria", "set", "criterion numbr 07", "true")
    assert done.code == 1
    assert done.err.startswith("ralphstate: no criterion 'criterion numbr 07' in this loop (did")
    assert "'criterion number 07'" in done.err
    assert sum(name in done.err for name in NAMES) <= 3
    far = rs("criteria", "set", "lint clean", "true")
    assert far.err == (
        "ralphstate: no criterion 'lint clean' in this loop"
        " (it has 60 criteria; `ralphstate status` lists them).\n"
    )


def test_a_few_names_are_still_listed_when_none_is_close(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "tests pass", "-s", "write it")
    assert rs("step", "done", "zzz").err == (
        "ralphstate: no step 'zzz' in this loop (steps: 'write it').\n"
    )


def test_watch_once_on_a_broken_file_fails_with_one_line(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "tests pass")
    (project / ".loop" / "state.json").write_bytes(b"{broken")
    done = rs("watch", "--once")
    assert (done.code, done.out) == (1, "")
    assert done.err.startswith("ralphstate: .loop/state.json is not valid JSON (line 1")
    assert done.err.count("\n") == 1


def test_adopt_help_does_not_speak_of_trust(rs: Any) -> None:
    text = rs("adopt", "--help").out
    assert "Own the loop" in text
    assert "trusted" not in text.lower()


# -- .loop/ under git --------------------------------------------------------------------


def git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=project, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def test_init_keeps_this_machines_files_out_of_git(project: Path, rs: Any) -> None:
    git(project, "init", "-q")
    rs("init", "Build it", "-c", "tests pass")
    rs("criteria", "set", "tests pass", "true")  # takes the lock
    assert rs("init", "--force", "Again", "-c", "x").code == 0  # keeps a backup
    (project / ".loop" / "runs").mkdir()
    (project / ".loop" / "runs" / "0001.log").write_text("agent output")
    (project / ".loop" / ".state.abc.tmp").write_text("left by a killed writer")
    for name in ("run.lock", "run.lock.soft", "state.lock.soft", "report.html"):
        (project / ".loop" / name).write_text("this machine's")
    assert sorted((project / ".loop").iterdir()) != []
    untracked = git(project, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(untracked) == [
        "?? .loop/.gitignore",
        "?? .loop/history.jsonl",
        "?? .loop/state.json",
    ]
    assert (project / ".loop" / ".gitignore").read_text() == GITIGNORE


# What `init` wrote before run.lock, the soft locks and report.html were listed.
OLD_GITIGNORE = """\
# Written by `ralphstate init`. state.json, history.jsonl and config.toml can be
# committed; these files belong to this machine only.
state.lock
*.bak
*.tmp
runs/
"""


@pytest.mark.parametrize("command", [("report", "--html"), ("init", "--force", "Again")])
def test_an_older_gitignore_of_ralphstates_is_brought_up_to_date(
    project: Path, rs: Any, command: tuple[str, ...]
) -> None:
    git(project, "init", "-q")
    rs("init", "Build it", "-c", "tests pass")
    ignore = project / ".loop" / ".gitignore"
    ignore.write_text(OLD_GITIGNORE)
    assert rs(*command).code == 0
    assert ignore.read_text() == GITIGNORE
    (project / ".loop" / "run.lock").write_text("")
    (project / ".loop" / "report.html").write_text("")
    untracked = git(project, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert not [line for line in untracked if "lock" in line or "report" in line]


def test_run_brings_an_older_gitignore_up_to_date(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "tests pass")
    ignore = project / ".loop" / ".gitignore"
    ignore.write_text(OLD_GITIGNORE)
    agent = f"{shlex.quote(sys.executable)} -c pass"
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", "run", "--agent", agent, "--max", "1"],
        cwd=project,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert ignore.read_text() == GITIGNORE


def test_init_never_replaces_a_persons_gitignore(project: Path, rs: Any) -> None:
    (project / ".loop").mkdir()
    (project / ".loop" / ".gitignore").write_text("*\n")
    rs("init", "Build it", "-c", "tests pass")
    assert (project / ".loop" / ".gitignore").read_text() == "*\n"


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks as POSIX has them")
def test_init_never_follows_a_gitignore_symlink(project: Path, tmp_path: Path, rs: Any) -> None:
    (project / ".loop").mkdir()
    (project / ".loop" / ".gitignore").symlink_to(tmp_path / "elsewhere")
    rs("init", "Build it", "-c", "tests pass")
    assert not (tmp_path / "elsewhere").exists()
