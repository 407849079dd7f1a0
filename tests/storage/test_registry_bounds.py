"""The per-user registry keeps working at any size, through real processes: it keeps at
most `MAX_REGISTRY_LOOPS` loops and says what it forgot, `list` says so when the file
cannot be used instead of showing nothing, and `list` asks git nothing per loop."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson

from ralphstate.core import limits
from ralphstate.storage.peruser import registry
from ralphstate.storage.repo import git
from tests.helpers import run_process
from tests.helpers.loops import make_loop


def write_registry(loops: dict[str, dict[str, object]]) -> Path:
    path = registry._path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps({"version": 1, "loops": loops}))
    return path


def test_a_full_registry_forgets_gone_then_finished_loops_and_says_so(tmp_path: Path) -> None:
    alive = tmp_path / "alive"
    (alive / ".loop").mkdir(parents=True)
    loops: dict[str, dict[str, object]] = {}
    for i in range(limits.MAX_REGISTRY_LOOPS - 2):
        loops[str(alive / f"l{i}")] = {
            "status": "in_progress",
            "updatedAt": f"2026-01-{i % 28 + 1:02d}",
        }
        (alive / f"l{i}").mkdir()
    finished = tmp_path / "finished" / ".loop"
    finished.mkdir(parents=True)
    loops[str(finished)] = {"status": "complete", "updatedAt": "2026-06-01"}
    loops[str(tmp_path / "gone" / ".loop")] = {"status": "in_progress", "updatedAt": "2026-09-01"}
    path = write_registry(loops)
    project = tmp_path / "new"
    project.mkdir()
    done = run_process(["init", "A new loop", "-c", "done"], cwd=project)
    assert done.returncode == 0, done.stderr
    assert b"forgot 1 (gone, finished or updated longest ago)" in done.stderr
    kept = orjson.loads(path.read_bytes())["loops"]
    assert len(kept) == limits.MAX_REGISTRY_LOOPS
    assert str(tmp_path / "gone" / ".loop") not in kept and str(finished) in kept
    other = tmp_path / "newer"
    other.mkdir()
    done = run_process(["init", "Another", "-c", "done"], cwd=other)
    assert done.returncode == 0, done.stderr
    kept = orjson.loads(path.read_bytes())["loops"]
    assert len(kept) == limits.MAX_REGISTRY_LOOPS and str(finished) not in kept
    assert os.path.realpath(other / ".loop") in kept and os.path.realpath(project / ".loop") in kept


def test_list_says_so_when_the_registry_cannot_be_used(tmp_path: Path) -> None:
    path = registry._path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        b'{"version": 1, "loops": {' + b" " * (limits.MAX_USER_FILE_BYTES + 10) + b"}}"
    )
    done = run_process(["list"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = done.stderr.decode()
    assert said.count("\n") == 1 and "cannot be used (it is larger than 8 MiB)" in said, said


def test_list_starts_no_git_process_a_loop(root: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "work", str(root)], check=True)
    make_loop(root)
    shims = tmp_path / "shims"
    shims.mkdir()
    calls = tmp_path / "git-calls"
    shim = shims / "git"
    shim.write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\nexit 1\n')
    shim.chmod(0o755)
    path = os.pathsep.join([str(shims), os.environ["PATH"]])
    done = run_process(["list", "--json"], cwd=tmp_path, env={"PATH": path})
    assert done.returncode == 0, done.stderr
    [row] = orjson.loads(done.stdout)
    assert row["branch"] == "work"
    assert not calls.exists(), calls.read_text()


def test_the_branch_read_from_head_is_what_git_says(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    run = ["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run([*run, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    (repo / "sub").mkdir()
    assert git.head_branch(repo / "sub") == git.branch(repo) == "main"
    linked = tmp_path / "linked"
    subprocess.run([*run, "worktree", "add", "-q", "-b", "side", str(linked)], check=True)
    assert git.head_branch(linked) == git.branch(linked) == "side"
    subprocess.run([*run, "checkout", "-q", "--detach"], check=True)
    assert git.head_branch(repo) is None and git.branch(repo) is None
    assert git.head_branch(tmp_path / "elsewhere") is None
