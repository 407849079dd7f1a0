"""The background verification proves the code it was started on, and only that
(verify/background.py): code swapped into the work tree after a stop started it, and
before its clean room was made, then swapped back before the next stop, passes for
nothing. The job's process is the real one (`python -I -c ... main()`), its nonce on
stdin, in a real git repository."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers.checks import script
from tests.helpers.gitrepo import init_repo, use_identity
from tests.helpers.loops import load

NONCE = "7" * 64
DONE = "All done. <loop-complete>"


@pytest.fixture
def repo(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"app.py": "VALUE = 1\n"})
    return project


def run_job(loop_dir: Path) -> None:
    """The job's process as background.start starts it, to its end."""
    program = "from ralphstate.verify.background import main; main()"
    done = subprocess.run(
        [sys.executable, "-I", "-c", program, str(loop_dir)],
        input=NONCE.encode() + b"\n",
        capture_output=True,
        env=os.environ,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell check")
def test_code_swapped_in_before_the_room_was_made_proves_nothing(rs: Any, repo: Path) -> None:
    from ralphstate.storage.loopdir.store import Store
    from ralphstate.storage.system import paths
    from ralphstate.verify import background

    passes_on_two = script(
        repo.parent / "check.py",
        "import sys\nsys.exit(0 if 'VALUE = 2' in open('app.py').read() else 1)\n",
    )
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "tests pass", passes_on_two).code == 0
    loop = paths.at(str(repo / ".loop"))
    store = Store(loop)

    def job_on_this_code() -> background.Job:
        found = background.Job(
            ["tests pass"], background.identity(loop, load(repo)), NONCE, 0, time.time()
        )
        background.job_path(loop).parent.mkdir(parents=True, exist_ok=True)
        background.job_path(loop).write_bytes(orjson.dumps(dataclasses.asdict(found)))
        return found

    job = job_on_this_code()  # a stop started it on VALUE = 1, which fails
    (repo / "app.py").write_text("VALUE = 2\n")  # swapped in before the room is made
    run_job(loop.dir)
    (repo / "app.py").write_text("VALUE = 1\n")  # and back before the next stop

    assert background.current(store, load(repo)) is not None  # the job's code, as it was
    assert background.taken(store, job) is None  # but no result stands for it

    job = job_on_this_code()  # the code it was started on: its result is taken
    run_job(loop.dir)
    found = background.taken(store, job)
    assert found is not None and [r.passed for r in found] == [False], found


@pytest.mark.parametrize(
    "field, value", [("pid", "123"), ("pid", 1.5), ("started", None), ("criteria", "tests pass")]
)
def test_a_job_file_of_the_wrong_shape_is_no_job(
    rs: Any, repo: Path, field: str, value: object
) -> None:
    """A job file whose fields have the wrong types (the per-user data directory is the
    agent's user's) is taken for no job: the Stop hook decides as without one, never
    failing open on an unexpected error."""
    from ralphstate.storage.system import paths
    from ralphstate.verify import background
    from tests.helpers import run_process

    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "tests pass", "exit 1").code == 0
    assert rs("criteria", "set", "tests pass", "true").code == 0
    loop = paths.at(str(repo / ".loop"))
    gone = subprocess.Popen(["true"])  # a process that is gone: nothing is stopped
    gone.wait()
    job = background.Job(["tests pass"], "0" * 64, NONCE, gone.pid, time.time())
    raw = dataclasses.asdict(job)
    background.job_path(loop).parent.mkdir(parents=True, exist_ok=True)
    background.job_path(loop).write_bytes(orjson.dumps({**raw, field: value}))

    data = {"session_id": "session-a", "cwd": str(repo), "last_assistant_message": DONE}
    done = run_process(["hook", "stop"], cwd=repo, input=orjson.dumps(data), timeout=60)

    assert done.returncode == 0, done
    assert b"unexpected error" not in done.stderr, done.stderr
    out = orjson.loads(done.stdout)
    assert out.get("decision") == "block" and "tests pass" in out["reason"], out
