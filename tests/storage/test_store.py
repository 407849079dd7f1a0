"""The state file on disk, with real files and real processes: atomic writes, the
lock, hand edits racing a change, concurrent writers, writers killed mid-write,
corrupt files that must never be rewritten, and symlinks out of the project."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, cast

import orjson
import pytest
from freezegun import freeze_time

from ralphstate.core import limits, queries
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.system import fsio
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import colleague, run_process

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals/symlinks")


def start(project: Path, rs: Any, *args: str) -> Path:
    result = rs("init", "Export invoices as CSV", *args)
    assert result.code == 0, result.err
    return project / ".loop" / "state.json"


def store_for(project: Path) -> Store:
    return Store(LoopPaths(project, project / ".loop"))


def temp_files(project: Path) -> list[str]:
    return sorted(p.name for p in (project / ".loop").iterdir() if p.name.endswith(".tmp"))


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def spawn(code: str, *args: str, cwd: Path, **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, **kwargs)


# -- atomic writes ---------------------------------------------------------------------


def test_writes_leave_only_the_loop_files(project: Path, rs: Any) -> None:
    path = start(project, rs, "-c", "a", "-s", "one")
    for args in (("criteria", "set", "a", "true"), ("step", "done", "1"), ("pause",)):
        assert rs(*args).code == 0
    names = {p.name for p in (project / ".loop").iterdir()}
    assert names <= {"state.json", "history.jsonl", "state.lock", ".gitignore"}
    assert {"state.json", "history.jsonl"} <= names
    if sys.platform != "win32":
        assert path.stat().st_mode & 0o777 == fsio.FILE_MODE
    assert st.parse(path.read_bytes())["status"] == "paused"


def test_a_failed_write_keeps_the_old_file_and_no_temp_file(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = start(project, rs, "-c", "a")
    before = path.read_bytes()
    history = (project / ".loop" / "history.jsonl").read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    result = rs("criteria", "set", "a", "true")
    assert (result.code, result.out) == (1, "")
    assert result.err == "ralphstate: could not write .loop/state.json: Input/output error.\n"
    assert path.read_bytes() == before
    assert (project / ".loop" / "history.jsonl").read_bytes() == history
    assert temp_files(project) == []


def test_a_failed_replace_removes_the_temp_file(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = start(project, rs, "-c", "a")
    before = path.read_bytes()

    def refuse(src: object, dst: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    monkeypatch.setattr(fsio, "_exchange_fn", [refuse])  # the exchange, where there is one
    result = rs("step", "add", "write the exporter")
    assert (result.code, result.err) == (
        1,
        "ralphstate: could not write .loop/state.json: Permission denied.\n",
    )
    assert path.read_bytes() == before
    assert temp_files(project) == []


def test_a_failed_forced_init_puts_the_old_file_back(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = start(project, rs, "-c", "a")
    before = path.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    result = rs("init", "--force", "Something else")
    assert result.code == 1
    assert result.err == "ralphstate: could not write .loop/state.json: No space left on device.\n"
    assert path.read_bytes() == before
    assert sorted(p.name for p in (project / ".loop").iterdir() if "bak" in p.name) == []
    assert temp_files(project) == []


def test_atomic_write_declined_at_the_last_moment(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    assert fsio.atomic_write(target, b"new", lambda: False) is False
    assert target.read_bytes() == b"old"
    assert fsio.atomic_write(target, b"new", lambda: True) is True
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


# -- the lock --------------------------------------------------------------------------

HOLDER = """
import sys, time, filelock
lock = filelock.FileLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_a_held_lock_fails_fast_with_one_line(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = start(project, rs, "-c", "a")
    before = path.read_bytes()
    holder = spawn(
        HOLDER, str(project / ".loop" / "state.lock"), cwd=project, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        # A real process with the default timeout waits alongside the in-process run.
        began = time.monotonic()
        slow = subprocess.Popen(
            [sys.executable, "-m", "ralphstate", "criteria", "set", "a", "true"],
            cwd=project,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        monkeypatch.setattr(limits, "LOCK_TIMEOUT", 0.5)
        t0 = time.monotonic()
        result = rs("criteria", "set", "a", "true")
        assert time.monotonic() - t0 < 3
        assert (result.code, result.out) == (1, "")
        assert result.err == (
            "ralphstate: .loop/state.lock is held by another process; gave up after 0.5s.\n"
        )
        # Reading does not need the lock.
        assert rs("status").code == 0
        out, err = slow.communicate(timeout=30)
        waited = time.monotonic() - began
        assert (slow.returncode, out) == (1, b"")
        assert err == (
            b"ralphstate: .loop/state.lock is held by another process; gave up after 5s.\n"
        )
        assert limits.LOCK_TIMEOUT - 0.5 < waited < 15
        assert path.read_bytes() == before
    finally:
        stop_process(holder)
    # The holder is gone, and so is its lock.
    assert rs("criteria", "set", "a", "true").code == 0
    assert queries.met(st.parse(path.read_bytes()), "a")


# -- a hand edit between read and write ------------------------------------------------


def hand_edit(path: Path, **changes: Any) -> None:
    raw = orjson.loads(path.read_bytes())
    for key, value in changes.items():
        if key == "criteriaStatus":
            raw[key].update(value)
        else:
            raw[key] = value
    tmp = path.with_name("by-hand.json")
    tmp.write_text(json.dumps(raw))
    tmp.replace(path)


def test_a_file_replaced_by_hand_mid_update_is_retried(project: Path, rs: Any) -> None:
    path = start(project, rs, "-c", "a", "-c", "b")
    seen: list[dict[str, bool]] = []

    def change(state: st.State, events: list[Event]) -> st.State:
        seen.append(dict(state["criteriaStatus"]))
        if len(seen) == 1:  # the agent edits the file while ralphstate works on it
            hand_edit(path, criteriaStatus={"b": True}, handNote="b verified by hand")
        state["criteriaStatus"]["a"] = True
        events.append({"event": "criterion_set", "criterion": "a", "value": True})
        return state

    result = store_for(project).update(change)
    assert seen == [{"a": False, "b": False}, {"a": False, "b": True}]
    assert result["criteriaStatus"] == {"a": True, "b": True}
    written = st.parse(path.read_bytes())
    assert written["criteriaStatus"] == {"a": True, "b": True}
    assert cast(st.Raw, written)["handNote"] == "b verified by hand"
    logged = [e["event"] for e in store_for(project).history()]
    assert logged == ["init", "criterion_set"]  # the retry is logged once


def test_a_file_that_keeps_changing_is_not_overwritten(project: Path, rs: Any) -> None:
    path = start(project, rs, "-c", "a")
    calls = []

    def change(state: st.State, events: list[Event]) -> None:
        calls.append(1)
        hand_edit(path, spec=f"edit {len(calls)}")
        state["criteriaStatus"]["a"] = True
        events.append({"event": "criterion_set", "criterion": "a", "value": True})

    with pytest.raises(RalphstateError) as caught:
        store_for(project).update(change)
    assert str(caught.value) == (
        ".loop/state.json kept changing while being updated; nothing was written. Try again."
    )
    assert len(calls) == 5
    written = st.parse(path.read_bytes())
    assert (written["spec"], written["criteriaStatus"]) == ("edit 5", {"a": False})
    assert temp_files(project) == []


# -- property 1: concurrent writers lose nothing ---------------------------------------

WRITER = """
import os, sys, time
from ralphstate.__main__ import main
k, n, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
while not os.path.exists(go):
    time.sleep(0.002)
for i in range(n):
    args = ["criteria", "set", f"c{k}-{i}", "true"] if i % 2 == 0 else ["step", "add", f"s{k}-{i}"]
    code = main(args)
    if code:
        sys.exit(code)
"""


def test_concurrent_writers_lose_no_update(project: Path, rs: Any) -> None:
    """8 processes x 10 updates through the real entry point, all released at once."""
    workers, updates = 8, 10
    names = [f"c{k}-{i}" for k in range(workers) for i in range(0, updates, 2)]
    args = [x for name in names for x in ("-c", name)]
    path = start(project, rs, *args)
    go = project / "go"
    procs = [
        spawn(
            WRITER,
            str(k),
            str(updates),
            str(go),
            cwd=project,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for k in range(workers)
    ]
    time.sleep(0.3)  # let them all reach the starting line
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    state = st.parse(path.read_bytes())
    assert queries.unmet(state) == []
    steps = {f"s{k}-{i}" for k in range(workers) for i in range(1, updates, 2)}
    assert set(state["steps"]) == steps and set(state["remainingSteps"]) == steps
    history = store_for(project).history()
    assert len(history) == 1 + workers * updates  # one line per update, none torn
    assert len((project / ".loop" / "history.jsonl").read_bytes().splitlines()) == len(history)
    assert temp_files(project) == []


def test_concurrent_cli_processes_lose_no_update(project: Path, rs: Any) -> None:
    """The same, with one `python -m ralphstate` process per update."""
    path = start(project, rs, "-c", "a", "-c", "b", "-c", "c")
    commands = [
        ["criteria", "set", "a", "true"],
        ["criteria", "set", "b", "yes"],
        ["criteria", "set", "3", "1"],
        ["step", "add", "one"],
        ["step", "add", "two"],
        ["criteria", "add", "d"],
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ralphstate", *cmd],
            cwd=project,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for cmd in commands
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    state = st.parse(path.read_bytes())
    assert state["criteria"] == ["a", "b", "c", "d"]
    assert state["criteriaStatus"] == {"a": True, "b": True, "c": True, "d": False}
    assert sorted(state["steps"]) == ["one", "two"]


# -- property 2: SIGKILL never leaves a broken file ------------------------------------

TOGGLER = """
import sys
from ralphstate.__main__ import main
name = sys.argv[1]
print("ready", flush=True)
i = 0
while True:
    i += 1
    main(["criteria", "set", name, "true" if i % 2 else "false"])
"""


@POSIX_ONLY
def test_writers_killed_at_random_never_leave_a_broken_file(project: Path, rs: Any) -> None:
    writers = 3
    path = start(project, rs, *[x for k in range(writers) for x in ("-c", f"w{k}")])
    # A big file makes each write take long enough to be killed in the middle of.
    hand_edit(path, padding=["x" * 1000] * 400)
    rng = random.Random(os.getpid())
    stop = threading.Event()
    reads: list[str] = []
    torn: list[str] = []

    def reader() -> None:
        store = store_for(project)
        while not stop.is_set():
            try:
                reads.append(str(store.load()["criteriaStatus"]))
            except RalphstateError as exc:  # pragma: no cover - the property failing
                torn.append(str(exc))

    def launch(k: int) -> subprocess.Popen[bytes]:
        proc = spawn(
            TOGGLER, f"w{k}", cwd=project, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        return proc

    watcher = threading.Thread(target=reader)
    watcher.start()
    procs = [launch(k) for k in range(writers)]
    kills = 0
    try:
        deadline = time.monotonic() + 15  # only reached on a very loaded machine
        while kills < 15 and time.monotonic() < deadline:
            time.sleep(rng.uniform(0.005, 0.12))
            k = rng.randrange(writers)
            procs[k].send_signal(signal.SIGKILL)
            stop_process(procs[k])
            kills += 1
            st.parse(path.read_bytes())  # parses after every kill
            procs[k] = launch(k)
    finally:
        for proc in procs:
            stop_process(proc)
        stop.set()
        watcher.join()
    assert torn == []
    assert kills == 15
    assert len(reads) > 50 and len(set(reads)) > 2  # the reader saw the file change
    state = st.parse(path.read_bytes())
    assert len(cast(st.Raw, state)["padding"]) == 400
    # No lock is left behind by the killed writers.
    result = rs("criteria", "set", "w0", "true")
    assert result.code == 0, result.err


# -- a corrupt file is never rewritten -------------------------------------------------

CORRUPT = [
    pytest.param(
        b"{bad",
        "is not valid JSON (line 1, column 2): unexpected character, expected a string key",
        id="invalid-json",
    ),
    pytest.param(
        b'{\n  "spec": "x",\n  "criteria": [\n}\n',
        "is not valid JSON (line 4, column 1): unexpected character, expected a JSON value",
        id="invalid-json-line-4",
    ),
    pytest.param(
        b"",
        "is not valid JSON (line 1, column 1): Input is a zero-length, empty document",
        id="empty",
    ),
    pytest.param(b"[1, 2]\n", "must hold a JSON object, not list", id="not-an-object"),
    pytest.param(
        b'{"spec": "x", "criteria": "a"}', ": 'criteria' must be a list of strings", id="bad-type"
    ),
]

MUTATING = [
    ("criteria", "add", "z"),
    ("criteria", "set", "a", "true"),
    ("criteria", "remove", "a"),
    ("step", "add", "z"),
    ("step", "done", "1"),
    ("step", "undo", "1"),
    ("pause",),
    ("pause", "--reason", "lunch"),
    ("resume",),
    ("resume", "--more", "3"),
    ("adopt",),
    ("cancel",),
    ("init", "a new loop", "-c", "x"),
]


def corrupt_loop(project: Path, data: bytes) -> Path:
    path = project / ".loop" / "state.json"
    path.parent.mkdir()
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("data", "problem"), CORRUPT)
@pytest.mark.parametrize("args", MUTATING, ids=" ".join)
def test_a_corrupt_file_is_never_rewritten(
    project: Path, rs: Any, isolated: Path, data: bytes, problem: str, args: tuple[str, ...]
) -> None:
    path = corrupt_loop(project, data)
    result = rs(*args)
    assert (result.code, result.out) == (1, "")
    expected = f"ralphstate: .loop/state.json {problem}; it was left untouched."
    if args[0] == "init":
        expected += " Use --force to start over (a copy of it is kept)."
    assert result.err == expected.replace("json :", "json:") + "\n"
    assert path.read_bytes() == data
    assert sorted(p.name for p in path.parent.iterdir()) in (
        ["state.json"],
        ["state.json", "state.lock"],
    )
    assert not (isolated / "state" / "loops.json").exists()


@pytest.mark.parametrize(("data", "problem"), CORRUPT)
def test_reading_a_corrupt_file(project: Path, rs: Any, data: bytes, problem: str) -> None:
    corrupt_loop(project, data)
    for args in (("status",), ("status", "--json"), ("criteria", "list")):
        result = rs(*args)
        assert (result.code, result.out) == (1, "")
        assert result.err == (
            f"ralphstate: .loop/state.json {problem}; it was left untouched.\n".replace(
                "json :", "json:"
            )
        )
    shown = rs("show")  # a person can still look at it
    assert (shown.code, shown.out) == (0, data.decode() + ("" if data.endswith(b"\n") else "\n"))


def test_a_corrupt_file_in_a_real_process(project: Path) -> None:
    path = corrupt_loop(project, b'{"spec": "x",, }')
    for args in (["criteria", "set", "a", "true"], ["status"], ["step", "add", "x"]):
        done = run_process(args, cwd=project)
        assert (done.returncode, done.stdout) == (1, b"")
        assert done.stderr == (
            b"ralphstate: .loop/state.json is not valid JSON (line 1, column 14):"
            b" unexpected character, expected a string key; it was left untouched.\n"
        )
    assert path.read_bytes() == b'{"spec": "x",, }'


@freeze_time("2026-02-03T04:05:06Z")
def test_init_force_keeps_a_copy_of_a_corrupt_file(project: Path, rs: Any) -> None:
    path = corrupt_loop(project, b"{bad")
    first = rs("init", "--force", "Start over", "-c", "a")
    assert (first.code, first.err) == (0, "")
    assert first.out == (
        "kept the old state as .loop/state.20260203T040506.json.bak\n"
        "started a loop in .loop/state.json: 1 criterion, 0 steps, max 20 iterations\n"
        "not guarding any files: the project is not in a git repository\n"
        + colleague(
            2,
            "give 1 criterion a check (--check NAME COMMAND); plan the work in steps (-s STEP);"
            " say the request in 8 to 2000 words (it has 2); say what can be measured (a"
            " number, what passes or fails)",
        )
    )
    assert (path.parent / "state.20260203T040506.json.bak").read_bytes() == b"{bad"
    replaced = path.read_bytes()
    assert st.parse(replaced)["spec"] == "Start over"
    # A second --force in the same second keeps both copies.
    second = rs("init", "--force", "Again")
    assert second.out.startswith("kept the old state as .loop/state.20260203T040506.1.json.bak\n")
    assert (path.parent / "state.20260203T040506.json.bak").read_bytes() == b"{bad"
    assert (path.parent / "state.20260203T040506.1.json.bak").read_bytes() == replaced


# -- symlinks out of the project -------------------------------------------------------


def outside_loop(tmp_path: Path) -> Path:
    elsewhere = tmp_path / "elsewhere" / ".loop"
    elsewhere.mkdir(parents=True)
    state = st.new("someone else's loop", ["a"], [], now="2026-01-01T00:00:00Z")
    (elsewhere / "state.json").write_bytes(st.dumps(state))
    return elsewhere


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


@POSIX_ONLY
@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("show",),
        ("log",),
        ("criteria", "set", "a", "true"),
        ("cancel",),
        ("init", "--force", "mine"),
    ],
    ids=" ".join,
)
def test_a_symlinked_loop_dir_leaving_the_project_is_refused(
    project: Path, tmp_path: Path, rs: Any, args: tuple[str, ...]
) -> None:
    elsewhere = outside_loop(tmp_path)
    before = snapshot(elsewhere)
    (project / ".loop").symlink_to(elsewhere, target_is_directory=True)
    result = rs(*args)
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        f"ralphstate: .loop leads outside the project ({elsewhere.resolve()});"
        " ralphstate refuses to follow it.\n"
    )
    assert snapshot(elsewhere) == before


@POSIX_ONLY
@pytest.mark.parametrize("name", ["state.json", "history.jsonl"])
@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("criteria", "set", "a", "true"),
        ("step", "add", "x"),
        ("init", "--force", "mine"),
    ],
    ids=" ".join,
)
def test_a_symlinked_file_leaving_the_project_is_refused(
    project: Path, tmp_path: Path, rs: Any, name: str, args: tuple[str, ...]
) -> None:
    elsewhere = outside_loop(tmp_path)
    (elsewhere / "history.jsonl").write_bytes(b"")
    before = snapshot(elsewhere)
    loop = project / ".loop"
    loop.mkdir()
    if name != "state.json":
        state = st.new("mine", ["a"], [], now="2026-01-01T00:00:00Z")
        (loop / "state.json").write_bytes(st.dumps(state))
    (loop / name).symlink_to(elsewhere / name)
    mine = snapshot(loop)
    result = rs(*args)
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        f"ralphstate: .loop/{name} leads outside the project ({elsewhere.resolve() / name});"
        " ralphstate refuses to follow it.\n"
    )
    assert snapshot(elsewhere) == before
    assert snapshot(loop) == mine
    assert (loop / name).is_symlink()


@POSIX_ONLY
def test_a_symlink_that_stays_inside_the_project_is_followed(project: Path, rs: Any) -> None:
    real = project / "state-kept-here"
    real.mkdir()
    (project / ".loop").symlink_to(real, target_is_directory=True)
    assert rs("init", "Inside", "-c", "a").code == 0
    assert rs("criteria", "set", "a", "true").code == 0
    assert queries.met(st.parse((real / "state.json").read_bytes()), "a")


def test_a_temp_file_left_by_a_killed_writer_is_removed_by_the_next_write(
    rs: Any, project: Path
) -> None:
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    stale = project / ".loop" / ".state.deadbeef0000.tmp"
    stale.write_bytes(b'{"half": ')
    other = project / ".loop" / "notes.tmp"
    other.write_bytes(b"mine")
    assert rs("criteria", "set", "tests pass", "true").code == 0
    assert not stale.exists()
    assert other.read_bytes() == b"mine"


# -- deciding on a state read without the lock ------------------------------------------


def test_a_change_that_writes_nothing_on_the_state_read_takes_no_lock(
    project: Path, rs: Any
) -> None:
    """`update(change, read=state)`: the change is asked about the state the caller read;
    when it would write nothing, its answer stands, with no lock taken or created, and
    the state handed in is left as it was."""
    path = start(project, rs, "-c", "a")
    store = store_for(project)
    read = store.load()
    kept = st.dumps(read)
    (project / ".loop" / "state.lock").unlink(missing_ok=True)

    def look(state: st.State, events: list[Event]) -> str:
        state["spec"] = state["spec"]  # the same content: nothing to write
        return state["status"]

    before = path.read_bytes()
    assert store.update(look, read=read) == "in_progress"
    assert not (project / ".loop" / "state.lock").exists()
    assert path.read_bytes() == before
    assert st.dumps(read) == kept


def test_a_change_that_would_write_is_decided_again_on_the_file_under_the_lock(
    project: Path, rs: Any
) -> None:
    path = start(project, rs, "-c", "a", "-c", "b")
    store = store_for(project)
    read = store.load()
    hand_edit(path, criteriaStatus={"b": True})  # after the caller read it
    seen: list[dict[str, bool]] = []

    def claim(state: st.State, events: list[Event]) -> st.State:
        seen.append(dict(state["criteriaStatus"]))
        state["criteriaStatus"]["a"] = True
        events.append({"event": "criterion_set", "criterion": "a", "value": True})
        return state

    written = store.update(claim, read=read)
    assert seen == [{"a": False, "b": False}, {"a": False, "b": True}]
    assert written["criteriaStatus"] == {"a": True, "b": True}
    assert read["criteriaStatus"] == {"a": False, "b": False}  # left as it was
    assert st.parse(path.read_bytes())["criteriaStatus"] == {"a": True, "b": True}
    assert (project / ".loop" / "state.lock").exists()
