"""Shortcuts through the clean room a verification runs its checks in: its housekeeping,
ralphstate's own git, what the room holds and how it changes while the check runs. Each
on the real project of tests/adversarial/scripted.py (its test really fails), with real
`ralphstate` and Stop hook processes."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest

from tests.adversarial.scripted import SKIP_ALL, TEST_CALC, Agent
from tests.adversarial.test_commands import paused_for_review
from tests.adversarial.test_edits import not_complete, verified_then_claimed
from tests.storage.test_safe_git import arm, left


def modes(top: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every entry under `top` (not followed through links), with its mode and content."""
    found: dict[str, tuple[int, bytes | None]] = {}
    for base, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            path = Path(base) / name
            mode = os.lstat(path).st_mode
            data = path.read_bytes() if stat.S_ISREG(mode) else None
            found[path.relative_to(top).as_posix()] = (stat.S_IMODE(mode), data)
    return found


def fake_leftover(calc: Path, entry: str, target: Path, at: Path) -> Path:
    """The agent's trick: a worktree entry in the project's `.git` naming a room whose
    directory is a link, named like a leftover room of a process long gone, to `target`."""
    link = at / "ralphstate-clean-1-x0x0x0x0"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)
    admin = calc / ".git" / "worktrees" / entry
    admin.mkdir(parents=True)
    (admin / "gitdir").write_text(f"{link / 'calc project'}/.git\n")
    (admin / "HEAD").write_text("0" * 40 + "\n")
    (admin / "commondir").write_text("../..\n")
    return admin


def test_housekeeping_removes_nothing_it_did_not_make(
    agent: Agent, calc: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "the person's files"
    (victim / "calc project").mkdir(parents=True)
    (victim / "calc project" / "notes.txt").write_text("keep me\n")
    (victim / "locked").mkdir()
    (victim / "locked" / "deed.txt").write_text("mine\n")
    (victim / "locked").chmod(0o500)
    data = tmp_path / "per-user data"  # a stand-in: every loop's ledger
    (data / "loops").mkdir(parents=True)
    (data / "loops" / "0123456789abcdef01234567.json").write_text('{"version": 1}\n')
    before = {victim: modes(victim), data: modes(data)}
    admins = [
        fake_leftover(calc, "x", victim, tmp_path / "agent"),
        fake_leftover(calc, "y", data, tmp_path / "agent2"),
    ]
    entries = {admin: modes(admin) for admin in admins}
    try:
        agent.rs("verify", "--clean")
        outs = agent.insist()  # the Stop hook's own verification, in a clean room
        for top, seen in before.items():
            assert modes(top) == seen, top
        for admin, seen in entries.items():
            assert modes(admin) == seen, admin
        not_complete(calc, outs)
    finally:
        (victim / "locked").chmod(0o700)


def test_no_program_in_the_projects_git_config_runs(
    agent: Agent, calc: Path, tmp_path: Path
) -> None:
    """An fsmonitor, hooks, filters, a pager and a credential helper in the project's
    `.git/config` (tests/storage/test_safe_git.py `arm`), each leaving a marker: none
    runs during a verification, a status or a Stop hook of ralphstate's."""
    agent.write("calc/__init__.py", (calc / "calc" / "__init__.py").read_text() + "# tidy\n")
    marker = tmp_path / "ran"
    arm(calc, marker)
    agent.rs("verify", "--clean")
    agent.rs("status")
    outs = agent.insist()
    assert left(marker) == []
    not_complete(calc, outs)


# A process the agent leaves running: it finds every clean room as soon as it appears
# and, over and over, rewrites the room's test so that it passes, and adds a conftest.py
# that skips every test.
REWRITER = """
import glob, os, sys, time
tmp, weak, skip, stop_at = sys.argv[1], sys.argv[2], sys.argv[3], time.time() + 110
patterns = [os.path.join(tmp, "ralphstate-clean-*", "*"),
            os.path.join(tmp, "ralphstate-snapshots-*", "ralphstate-clean-*", "*")]
while time.time() < stop_at:
    for room in [r for p in patterns for r in glob.glob(p)]:
        test = os.path.join(room, "tests", "test_calc.py")
        try:
            if os.path.exists(test) and open(test).read() != weak:
                open(test, "w").write(weak)
            conftest = os.path.join(room, "conftest.py")
            if os.path.isdir(os.path.join(room, "tests")) and not os.path.exists(conftest):
                open(conftest, "w").write(skip)
        except OSError:
            pass
    time.sleep(0.001)
"""
SAID = (
    "does not hold what ralphstate put there",
    "guarded files changed while the check ran",
)


def test_a_process_left_running_that_rewrites_the_rooms_test_proves_nothing(
    agent: Agent, calc: Path, tmp_path: Path
) -> None:
    weak = TEST_CALC.replace("assert mul(3, 4) == 12", "assert True")
    script = tmp_path / "rewriter.py"
    script.write_text(REWRITER)
    args = [sys.executable, str(script), tempfile.gettempdir(), weak, SKIP_ALL]
    with subprocess.Popen(args) as rewriter:  # the agent's, left running
        try:
            verified = agent.rs("verify", "--clean")
            outs = agent.insist()
        finally:
            rewriter.kill()
    not_complete(calc, outs)
    told = verified.stdout + verified.stderr + json.dumps(outs)
    assert any(words in told for words in SAID), told
    assert (calc / "tests" / "test_calc.py").read_text() == TEST_CALC


# The same process, waiting until a check runs in a room (a process whose working
# directory is in it) before it rewrites the room's test: past the room's first check.
DURING = """
import glob, os, sys, time
tmp, weak, stop_at = os.path.realpath(sys.argv[1]), sys.argv[2], time.time() + 110
while time.time() < stop_at:
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd.startswith(tmp) and "ralphstate-clean-" in cwd and os.getpid() != int(pid):
            test = os.path.join(cwd, "tests", "test_calc.py")
            try:
                if open(test).read() != weak:
                    open(test, "w").write(weak)
            except OSError:
                pass
    time.sleep(0.001)
"""


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="finds the check by /proc")
def test_a_test_rewritten_while_the_check_runs_fails_the_check_and_is_said(
    agent: Agent, calc: Path, tmp_path: Path
) -> None:
    weak = TEST_CALC.replace("assert mul(3, 4) == 12", "assert True")
    script = tmp_path / "during.py"
    script.write_text(DURING)
    args = [sys.executable, str(script), tempfile.gettempdir(), weak]
    with subprocess.Popen(args) as rewriter:  # the agent's, left running
        try:
            verified = agent.rs("verify", "--clean")
            outs = agent.insist()
        finally:
            rewriter.kill()
    not_complete(calc, outs)
    told = verified.stdout + json.dumps(outs)
    # Before the checks (the room's files) or after one (the guarded files): said, and
    # a failed check, never a hook that fails open.
    assert any(said in told for said in SAID) and "tests/test_calc.py (changed)" in told, told
    assert "not enforced" not in told, told


def test_an_approved_tests_object_rewritten_under_its_old_id_proves_nothing(
    agent: Agent, calc: Path
) -> None:
    """The agent rewrites the approved test's blob in `.git/objects` under its old id
    (`git status` stays clean, the guarded files' ids are the approved ones), the code
    still broken: the room's test is not what its id says, so the room takes it from
    ralphstate's own copy of the approved content (kept at the trust), the check fails
    on the real failure, the mismatch is said with the path, and the loop does not end."""
    agent.write("calc/__init__.py", (calc / "calc" / "__init__.py").read_text() + "# tidy\n")
    old = agent.shell("git rev-parse HEAD:tests/test_calc.py").stdout.strip()
    weak = TEST_CALC.replace("assert mul(3, 4) == 12", "assert True").encode()
    loose = calc / ".git" / "objects" / old[:2] / old[2:]
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"blob %d\0" % len(weak) + weak))
    assert agent.shell("git show HEAD:tests/test_calc.py").stdout.encode() == weak
    verified = agent.rs("verify", "--clean")
    outs = agent.insist()
    not_complete(calc, outs)
    told = verified.stdout + verified.stderr + json.dumps(outs)
    assert "tests/test_calc.py" in told and "does not match its id" in told, told
    assert "ralphstate's own copy" in told, told
    # The approved test ran in the room: the real failure, not a refusal of the room.
    assert "mul is not written yet" in verified.stdout + verified.stderr, told
    assert "mul is not written yet" in json.dumps(outs[-1]), outs[-1]
    assert "no check ran in it" not in told, told


def test_a_new_repository_in_place_of_the_approved_one_pauses_for_review(
    agent: Agent, calc: Path
) -> None:
    """The agent moves `.git` aside and makes a new repository whose one commit holds a
    weakened test (the work tree's test too): not the repository the person approved."""
    weak = TEST_CALC.replace("assert mul(3, 4) == 12", "assert True")
    agent.write("tests/test_calc.py", weak)
    done = agent.shell(
        "mv .git ../aside.git && git init -q -b main && git add -A"
        " && git commit -q -m 'a fresh start'"
    )
    assert done.returncode == 0, done.stderr
    outs = verified_then_claimed(agent)
    message = paused_for_review(calc, outs)
    assert "the git repository here is not the one you approved" in message


def test_a_commondir_written_into_git_pauses_for_review(
    agent: Agent, calc: Path, tmp_path: Path
) -> None:
    """The agent writes `.git/commondir`, pointing git at another repository's objects
    and refs (one it made, whose HEAD holds a weakened test)."""
    other = tmp_path / "other"
    other.mkdir()
    weak = TEST_CALC.replace("assert mul(3, 4) == 12", "assert True")
    done = agent.shell(
        f"cd '{other}' && git init -q -b main && mkdir tests calc"
        f" && cp '{calc}/calc/__init__.py' calc/ && cp '{calc}/tests/__init__.py' tests/"
        f" && cp '{calc}/pyproject.toml' '{calc}/.gitignore' ."
        f" && printf '%s' {shlex.quote(weak)} > tests/test_calc.py"
        " && git add -A && git commit -q -m other"
    )
    assert done.returncode == 0, done.stderr
    (calc / ".git" / "commondir").write_text(f"{other / '.git'}\n")
    outs = verified_then_claimed(agent)
    message = paused_for_review(calc, outs)
    assert "the git repository here is not the one you approved" in message
