"""Faults with real files and real processes: a full disk, a file size limit, a
read-only file system, directories that cannot be written, a lock another process
holds, and a state file replaced by another process between read and write.

Each ends in one clear line from a command or a hook that fails open, and the last
good state on disk is intact. Root ignores file modes, so where a test needs a
permission to be refused it runs the command without the capabilities that let root
through (Linux); mounts need root and Linux, and say so when they are skipped.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from ralphstate.core import decide, limits, queries
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState, RalphstateError
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.hardening import (
    SID,
    Run,
    cli,
    hook,
    hook_input_for,
    lock_held,
    loop_files,
    make_loop,
    posix_root,
    told,
)

LINUX = sys.platform.startswith("linux")
POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="needs POSIX processes and modes")

Preexec = Callable[[], None] | None


def ralphstate(args: list[str], cwd: Path, *, input: bytes = b"", preexec: Preexec = None) -> Run:
    """`python -m ralphstate ARGS...` as a real process, with this test's environment."""
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env=dict(os.environ),
        timeout=60,
        preexec_fn=preexec,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def hook_input(root: Path, **fields: Any) -> bytes:
    return orjson.dumps(hook_input_for(root, **fields))


def temp_files(loop: Path) -> list[str]:
    return sorted(p.name for p in loop.iterdir() if p.name.endswith((".tmp", ".bak")))


# -- how the faults are made ---------------------------------------------------------------


@contextlib.contextmanager
def mounted(target: Path, *how: str) -> Iterator[None]:
    """`mount HOW... TARGET`, unmounted afterwards."""
    if not LINUX:
        pytest.skip("mounting a small or read-only file system is done the Linux way")
    if not posix_root():
        pytest.skip("mounting a file system needs root")
    if shutil.which("mount") is None:
        pytest.skip("this system has no mount command")
    done = subprocess.run(["mount", *how, str(target)], capture_output=True)
    problem = done.stderr.decode().strip()
    if done.returncode and ("denied" in problem or "not permitted" in problem):
        pytest.skip(f"this machine refuses mounts even to root: {problem}")
    assert done.returncode == 0, problem
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], check=True)


def fill(directory: Path) -> None:
    """Write until the file system is full."""
    with (directory / "filler").open("wb", buffering=0) as handle:
        for size in (1 << 16, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"x" * size)


def _drop_dac() -> None:
    """In the child, before exec: take away root's power to ignore file modes
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER) from its bounding set."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


@functools.cache
def _can_drop_dac() -> bool:
    try:
        subprocess.run(["true"], preexec_fn=_drop_dac, check=True)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


@contextlib.contextmanager
def not_writable(*directories: Path) -> Iterator[Preexec]:
    """The directories made read-only for the processes run with the yielded preexec."""
    if os.name != "posix":
        pytest.skip("POSIX file modes")
    preexec: Preexec = None
    if posix_root():
        if not LINUX:
            pytest.skip("root ignores file modes; dropping that power is done the Linux way")
        if not _can_drop_dac():
            pytest.skip("root ignores file modes, and this machine lets it keep that power")
        preexec = _drop_dac
    modes = [(d, d.stat().st_mode & 0o777) for d in directories]
    for directory, _ in modes:
        directory.chmod(0o555)
    try:
        yield preexec
    finally:
        for directory, mode in modes:
            directory.chmod(mode)


def size_limit(limit: int) -> Callable[[], None]:
    """In the child: no file may grow past `limit` bytes (writes fail with EFBIG)."""

    def apply() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


# -- a full disk -----------------------------------------------------------------------------

COMMANDS = [
    ["criteria", "set", "tests pass", "true"],
    ["step", "add", "write the docs"],
    ["pause"],
    ["init", "--force", "Start again", "-c", "x"],
]


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A project with a loop on a small tmpfs that is then filled up."""
    disk = tmp_path / "small disk"
    disk.mkdir()
    with mounted(disk, "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs"):
        root = disk / "project"
        root.mkdir()
        make_loop(root)
        (root / ".loop" / "history.jsonl").write_bytes(b'{"event": "init"}\n')
        (root / ".loop" / "state.lock").touch()
        fill(disk)
        yield root


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_disk_full_command_says_so_and_keeps_the_state(full_disk: Path, args: list[str]) -> None:
    loop = full_disk / ".loop"
    before = loop_files(loop)
    done = ralphstate(args, full_disk)
    assert (done.code, done.out) == (1, b"")
    assert done.text == "ralphstate: could not write .loop/state.json: No space left on device.\n"
    assert loop_files(loop) == before
    assert temp_files(loop) == []


@pytest.mark.parametrize(
    ("event", "changes"),
    [("stop", {}), ("session-start", {"sessionId": None}), ("pre-compact", {})],
    ids=["stop", "session-start adopting", "pre-compact"],
)
def test_disk_full_hooks_fail_open(full_disk: Path, event: str, changes: dict[str, Any]) -> None:
    loop = full_disk / ".loop"
    if changes:  # the loop waits to be adopted, which is a write
        (full_disk.parent / "filler").unlink()
        make_loop(full_disk, **changes)
        fill(full_disk.parent)
    before = loop_files(loop)
    done = ralphstate(["hook", event], full_disk, input=hook_input(full_disk, source="startup"))
    problem = "could not write .loop/state.json: No space left on device"
    assert (done.code, done.out) == (0, told(problem, event))
    assert done.text == f"ralphstate hook {event}: {problem}; allowing.\n"
    assert loop_files(loop) == before
    assert temp_files(loop) == []


def test_after_a_full_disk_everything_works_again(full_disk: Path) -> None:
    assert ralphstate(COMMANDS[0], full_disk).code == 1
    (full_disk.parent / "filler").unlink()
    done = ralphstate(COMMANDS[0], full_disk)
    assert (done.code, done.text) == (0, "")
    assert st.parse((full_disk / ".loop" / "state.json").read_bytes())["criteriaStatus"] == {
        "tests pass": True,
        "lint clean": False,
    }
    out = ralphstate(["hook", "stop"], full_disk, input=hook_input(full_disk))
    assert orjson.loads(out.out)["decision"] == "block"


# -- a file size limit: the disk-full path for any user on any POSIX system ---------------------


@POSIX_ONLY
def test_file_size_limit_command_and_hooks(project: Path) -> None:
    path = make_loop(project)
    before = loop_files(project / ".loop")
    limit = size_limit(len(path.read_bytes()) // 2)
    done = ralphstate(COMMANDS[0], project, preexec=limit)
    assert (done.code, done.out) == (1, b"")
    assert done.text == "ralphstate: could not write .loop/state.json: File too large.\n"
    problem = "could not write .loop/state.json: File too large"
    for event in ("stop", "pre-compact"):
        done = ralphstate(["hook", event], project, input=hook_input(project), preexec=limit)
        # the person is told once in the session, not at every stop
        assert (done.code, done.out) == (0, told(problem) if event == "stop" else b"")
        assert done.text == f"ralphstate hook {event}: {problem}; allowing.\n"
    assert loop_files(project / ".loop") == before
    assert temp_files(project / ".loop") == []


@POSIX_ONLY
def test_a_history_line_cut_short_never_swallows_the_next(project: Path) -> None:
    """The state is saved but the disk fills while its history line is appended: the
    command says exactly that, and the next line appended later is whole."""
    path = make_loop(project)
    history = project / ".loop" / "history.jsonl"
    old = [
        {"at": "2026-01-01T00:00:00Z", "event": "note", "iteration": 0, "n": i} for i in range(40)
    ]
    history.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in old))
    size = history.stat().st_size
    assert size > len(path.read_bytes())

    done = ralphstate(COMMANDS[0], project, preexec=size_limit(size + 10))
    assert (done.code, done.out) == (1, b"")
    assert done.text == (
        "ralphstate: the change was saved in .loop/state.json, but could not append to"
        " .loop/history.jsonl: File too large.\n"
    )
    assert queries.met(st.parse(path.read_bytes()), "tests pass")
    assert history.stat().st_size == size + 10  # ten bytes of a line, and no newline

    assert ralphstate(["criteria", "set", "lint clean", "true"], project).code == 0
    lines = history.read_bytes().splitlines()
    assert len(lines) == 42 and lines[:40] == [orjson.dumps(e) for e in old]
    assert len(lines[40]) == 10
    last = orjson.loads(lines[41])
    assert (last["event"], last["criterion"]) == ("criterion_set", "lint clean")
    shown = [
        orjson.loads(line) for line in cli("log", "--json", "--all", "-n", "2").out.splitlines()
    ]
    assert [e.get("criterion", e.get("n")) for e in shown] == [39, "lint clean"]


# -- a read-only file system -----------------------------------------------------------------


def test_read_only_file_system(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    make_loop(root)
    loop = root / ".loop"
    before = loop_files(loop)
    with mounted(root, "--bind", str(root)):
        subprocess.run(["mount", "-o", "remount,bind,ro", str(root)], check=True)
        done = ralphstate(COMMANDS[0], root)
        assert (done.code, done.out) == (1, b"")
        assert done.text == "ralphstate: could not lock .loop/state.lock: Read-only file system.\n"
        status = ralphstate(["status"], root)  # reading needs no write
        assert (status.code, status.text) == (0, "")
        stop = ralphstate(["hook", "stop"], root, input=hook_input(root))
        problem = "could not lock .loop/state.lock: Read-only file system"
        assert (stop.code, stop.out) == (0, told(problem))
        assert stop.text == f"ralphstate hook stop: {problem}; allowing.\n"
        # The session's own loop is still restored: that needs no write.
        start = ralphstate(["hook", "session-start"], root, input=hook_input(root, source="resume"))
        assert (start.code, start.text) == (0, "")
        assert (
            "Spec: Build the parser"
            in orjson.loads(start.out)["hookSpecificOutput"]["additionalContext"]
        )
        assert loop_files(loop) == before


# -- directories that cannot be written -------------------------------------------------------


def test_loop_directory_not_writable(project: Path) -> None:
    loop = project / ".loop"
    make_loop(project)
    (loop / "state.lock").touch()
    before = loop_files(loop)
    with not_writable(loop) as preexec:
        done = ralphstate(COMMANDS[1], project, preexec=preexec)
        assert (done.code, done.out) == (1, b"")
        assert done.text == "ralphstate: could not write .loop/state.json: Permission denied.\n"
        stop = ralphstate(["hook", "stop"], project, input=hook_input(project), preexec=preexec)
        problem = "could not write .loop/state.json: Permission denied"
        assert (stop.code, stop.out) == (0, told(problem))
        assert stop.text == f"ralphstate hook stop: {problem}; allowing.\n"
    assert loop_files(loop) == before
    assert temp_files(loop) == []


def test_per_user_directories_not_writable_the_stop_hook_still_decides(
    project: Path, isolated: Path
) -> None:
    """The registry and the log are conveniences: when they cannot be written the hook
    still makes its decision, and says in one line what it could not record."""
    path = make_loop(project, sessionId=None)  # known here, waiting to be adopted
    (isolated / "log").mkdir()
    with not_writable(isolated / "state", isolated / "log") as preexec:
        done = ralphstate(["hook", "stop"], project, input=hook_input(project), preexec=preexec)
    assert done.code == 0
    assert orjson.loads(done.out)["decision"] == "block"
    assert done.text.startswith("ralphstate hook stop: could not update the loop registry (")
    assert done.text.count("\n") == 1
    state = st.parse(path.read_bytes())
    assert (state["sessionId"], state["iteration"]) == (SID, 1)
    assert not (isolated / "log" / "ralphstate.log").exists()


# -- a lock another live process holds ----------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "changes", "restores"),
    [
        ("stop", {}, False),
        ("pre-compact", {}, False),
        ("session-start", {"sessionId": None}, False),
        ("session-start", {}, True),
    ],
    ids=["stop", "pre-compact", "session-start adopting", "session-start restoring"],
)
def test_lock_held_by_another_process_hooks_fail_open(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    event: str,
    changes: dict[str, Any],
    restores: bool,
) -> None:
    make_loop(project, **changes)
    loop = project / ".loop"
    before = loop_files(loop)
    monkeypatch.setattr(limits, "HOOK_LOCK_TIMEOUT", 0.2)
    # The session's own transcript, as Claude Code names it: a resumed session that
    # names none would be taken for a shell's before the lock is asked (hooks/forged.py).
    transcript = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-p" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b'{"type":"user","message":{"content":"go on"}}\n')
    with lock_held(loop):
        run = hook(event, hook_input(project, source="resume", transcript_path=str(transcript)))
    assert run.code == 0
    if restores:  # restoring the session's own loop writes nothing, so needs no lock
        assert run.text == ""
        assert (
            "Spec: Build the parser"
            in orjson.loads(run.out)["hookSpecificOutput"]["additionalContext"]
        )
    else:
        problem = ".loop/state.lock is held by another process; gave up after 0.2s"
        assert run.out == told(problem, event)
        assert run.text == f"ralphstate hook {event}: {problem}; allowing.\n"
    assert loop_files(loop) == before


def test_lock_held_real_hook_process_gives_up_at_its_timeout(project: Path) -> None:
    make_loop(project)
    loop = project / ".loop"
    before = loop_files(loop)
    with lock_held(loop):
        done = ralphstate(["hook", "stop"], project, input=hook_input(project))
    problem = (
        f".loop/state.lock is held by another process; gave up after {limits.HOOK_LOCK_TIMEOUT:g}s"
    )
    assert (done.code, done.out) == (0, told(problem))
    assert done.text == f"ralphstate hook stop: {problem}; allowing.\n"
    assert loop_files(loop) == before


# -- the state file replaced between read and write ----------------------------------------------

EDITOR = """
import os, sys
path, data = sys.argv[1], sys.argv[2].encode()
with open(path + ".by-hand", "wb") as handle:
    handle.write(data)
os.replace(path + ".by-hand", path)
"""


def edit_in_another_process(path: Path, data: bytes) -> None:
    """Replace the file the way an editor or an agent's tool does, from another process."""
    subprocess.run([sys.executable, "-c", EDITOR, str(path), data.decode()], check=True)


def hand_edited(path: Path, **changes: Any) -> bytes:
    raw = orjson.loads(path.read_bytes())
    raw.update(changes)
    return orjson.dumps(raw, option=orjson.OPT_INDENT_2)


def edit_during_decisions(
    monkeypatch: pytest.MonkeyPatch, path: Path, edits: Callable[[int], bytes | None]
) -> list[int]:
    """Whenever the Stop hook has read the file and is deciding, another process
    replaces it with `edits(n)` (n counts the decisions; None leaves it alone)."""
    calls: list[int] = []
    real = decide.decide_stop

    def deciding(*args: Any, **kwargs: Any) -> decide.Decision:
        calls.append(len(calls) + 1)
        data = edits(len(calls))
        if data is not None:
            edit_in_another_process(path, data)
        return real(*args, **kwargs)

    monkeypatch.setattr(decide, "decide_stop", deciding)
    return calls


def test_replaced_mid_decision_the_stop_hook_decides_on_the_new_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_loop(project)
    edit = hand_edited(
        path, criteriaStatus={"tests pass": True, "lint clean": False}, handNote="by hand"
    )
    calls = edit_during_decisions(monkeypatch, path, lambda n: edit if n == 1 else None)
    run = hook("stop", hook_input(project))
    assert calls == [1, 2]  # decided again on the file as the other process left it
    out = orjson.loads(run.out)
    assert out["decision"] == "block" and "1 of 2 criteria not verified" in out["reason"]
    written = st.parse(path.read_bytes())
    assert written["criteriaStatus"] == {"tests pass": True, "lint clean": False}
    assert (cast(st.Raw, written)["handNote"], written["iteration"]) == ("by hand", 1)


def test_replaced_by_a_broken_file_mid_decision_the_hook_fails_open(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_loop(project)
    broken = b'{"spec": "half an edit",'
    edit_during_decisions(monkeypatch, path, lambda n: broken if n == 1 else None)
    run = hook("stop", hook_input(project))
    assert run.code == 0
    assert orjson.loads(run.out)["systemMessage"].startswith(
        "ralphstate: .loop/state.json is not valid JSON (line 1"
    )
    assert run.text.startswith("ralphstate hook stop: .loop/state.json is not valid JSON (line 1")
    assert run.text.endswith("it was left untouched; allowing.\n")
    assert path.read_bytes() == broken


def test_replaced_at_every_attempt_the_hook_gives_up_and_keeps_the_last_edit(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_loop(project)
    calls = edit_during_decisions(monkeypatch, path, lambda n: hand_edited(path, spec=f"edit {n}"))
    run = hook("stop", hook_input(project))
    problem = ".loop/state.json kept changing while being updated; nothing was written. Try again"
    assert (run.code, run.out) == (0, told(problem))
    assert run.text == f"ralphstate hook stop: {problem}; allowing.\n"
    assert len(calls) == 6  # the decision on the file as read, then 5 attempts under the lock
    written = st.parse(path.read_bytes())
    assert (written["spec"], written["iteration"]) == ("edit 6", 0)


def test_replaced_by_a_broken_file_mid_command_nothing_is_written(project: Path) -> None:
    path = make_loop(project)
    store = Store(LoopPaths(project, project / ".loop"))
    broken = b"{not json"

    def change(state: st.State, events: list[dict[str, object]]) -> None:
        if path.read_bytes() != broken:
            edit_in_another_process(path, broken)
        state["criteriaStatus"]["tests pass"] = True
        events.append({"event": "criterion_set", "criterion": "tests pass", "value": True})

    with pytest.raises(CorruptState) as caught:
        store.update(change)
    assert isinstance(caught.value, RalphstateError)
    assert str(caught.value).endswith("it was left untouched.")
    assert path.read_bytes() == broken
    assert not (project / ".loop" / "history.jsonl").exists()
