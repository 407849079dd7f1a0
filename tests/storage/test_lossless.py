"""Nothing lost: a person's save racing a change, a file read while it is being saved in
place, values ralphstate could read but not write back, and a change that would leave
a file too large to read. Races run real processes against real files."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.system import fsio
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.hardening import cli, cli_kept_its_promises, hook, hook_input_for, make_loop
from tests.helpers.race import editor_race

LINUX_ONLY = pytest.mark.skipif(
    sys.platform != "linux", reason="the atomic exchange is tested on Linux (renameat2)"
)


def store_for(project: Path) -> Store:
    return Store(LoopPaths(project, project / ".loop"))


# -- a person's save racing a change ----------------------------------------------------

# A person saving state.json over and over, alternately in place (truncate and write,
# as most editors do) and by rename; before each save it checks that its previous save
# is still there (ralphstate carries the unknown key `edit` through its changes, so a
# smaller number means ralphstate wrote over the save). Prints how many were lost.
EDITOR = r"""
import json, os, sys, time
path, rounds, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with open(path, "rb") as f:
    base = json.loads(f.read())
lost = 0
for n in range(1, rounds + 1):
    with open(path, "rb") as f:
        seen = json.loads(f.read()).get("edit")
    if seen != base.get("edit"):  # looked again a moment later: lost, not just passing
        time.sleep(0.1)
        with open(path, "rb") as f:
            lost += json.loads(f.read()).get("edit") != base.get("edit")
    base["edit"] = n
    data = json.dumps(base, indent=2).encode()
    if n % 2:
        with open(path, "wb") as f:
            f.write(data)
    else:
        with open(path + ".saving", "wb") as f:
            f.write(data)
        os.replace(path + ".saving", path)
    time.sleep(pause)
with open(path, "rb") as f:
    lost += json.loads(f.read()).get("edit") != rounds
print(lost, flush=True)
"""

# ralphstate changing the loop as fast as it can (a criterion flipped, through the real
# Store) until told to stop; prints how many times it was about to put its file in
# place, and how many changes it wrote.
UPDATER = r"""
import sys
import time
from pathlib import Path
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.system import fsio
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.storage.loopdir.store import Store
root, stop = Path(sys.argv[1]), Path(sys.argv[2])
import os, time
# A busy machine can stop a process for milliseconds at any point; here, just before
# the file is put in place, which is when it hurts.
attempts = 0
def slow(real):
    def call(*args):
        global attempts
        attempts += 1
        time.sleep(float(sys.argv[3]))
        return real(*args)
    return call
if hasattr(fsio, "_swap_if_holds"):
    fsio._swap_if_holds = slow(fsio._swap_if_holds)
else:  # before the exchange
    os.replace = slow(os.replace)
store = Store(LoopPaths(root, root / ".loop"))
def flip(state, events):
    state["criteriaStatus"]["a"] = not state["criteriaStatus"].get("a")
writes = 0
print("ready", flush=True)
while not stop.exists():
    try:
        store.update(flip)
        writes += 1
    except RalphstateError:
        pass
print(attempts, writes, flush=True)
"""


# The editor saves every millisecond or so, 300 times; ralphstate is held up for two
# milliseconds before putting its file in place. Before the exchange, about half of
# its writes went over a save (30 of 50 in one run); the race takes about two seconds.
PAUSE, ROUNDS, DELAY = 0.001, 300, 0.002


def race(project: Path, rounds: int) -> tuple[int, int, int]:
    """(saves lost, writes attempted, changes written) while an editor and ralphstate
    race."""
    path = make_loop(project, criteria=["a"])
    return editor_race(EDITOR, UPDATER, path, project, rounds, PAUSE, DELAY)


@LINUX_ONLY
def test_a_save_racing_a_change_is_never_lost(project: Path) -> None:
    """With the exchange, ralphstate never writes over a save, whenever it lands."""
    lost, attempts, _ = race(project, ROUNDS)
    assert lost == 0
    assert attempts > 20  # the two really raced
    assert fsio._exchanger() is not None


def test_without_the_exchange_a_change_still_checks_just_before_replacing(
    project: Path,
) -> None:
    """Where no exchange is available, a save that landed before the last check is seen:
    nothing is written over it (the window left is the microseconds after the check)."""
    path = make_loop(project, criteria=["a"])
    store = store_for(project)

    def flip_after_a_save(state: st.State, events: list[Any]) -> None:
        if "edit" not in state:  # a person saves while the change is being made
            path.write_bytes(path.read_bytes().replace(b'"spec"', b'"edit": 1, "spec"', 1))
        state["criteriaStatus"]["a"] = True

    fsio._exchange_fn[:] = [None]
    try:
        store.update(flip_after_a_save)
    finally:
        fsio._exchange_fn.clear()
    state = st.parse(path.read_bytes())
    assert state["criteriaStatus"]["a"] is True and state.get("edit") == 1


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "check and replace"])
def test_atomic_write_replaces_only_what_was_expected(tmp_path: Path, exchange: bool) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    if not exchange:
        fsio._exchange_fn[:] = [None]
    try:
        assert fsio.atomic_write(target, b"new", expect=b"older") is False
        assert target.read_bytes() == b"old"
        assert fsio.atomic_write(target, b"new", expect=b"old") is True
        assert target.read_bytes() == b"new"
        target.unlink()
        assert fsio.atomic_write(target, b"newer", expect=b"new") is False
        assert not target.exists()
    finally:
        fsio._exchange_fn.clear()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@LINUX_ONLY
def test_an_exchange_that_finds_a_save_puts_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save lands between the last look and the exchange: it is put back in place,
    untouched (its inode too), and nothing of ralphstate's is left behind."""
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    real = fsio._exchanger()
    assert real is not None
    saved: list[int] = []

    def save_first(a: str, b: str) -> None:
        if not saved:
            Path(b).write_bytes(b"saved by a person")  # in place
            saved.append(Path(b).stat().st_ino)
        real(a, b)

    monkeypatch.setattr(fsio, "_exchange_fn", [save_first])
    assert fsio.atomic_write(target, b"new", expect=b"old") is False
    assert target.read_bytes() == b"saved by a person"
    assert target.stat().st_ino == saved[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


@LINUX_ONLY
def test_a_newer_save_made_while_an_exchange_is_undone_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window the editor race measured (2 saves lost in about 84,000): an editor
    that saves by renaming the file away to a backup and writing a new one. Its save N
    lands just before the exchange; its save N+1 renames the file away while
    ralphstate's is in place, so the undo finds no file, and writes its new file just
    before the save N is put back. Save N+1, the newest, is what stays."""
    target = tmp_path / "state.json"
    backup = tmp_path / "state.json~"
    target.write_bytes(b"old")
    real = fsio._exchanger()
    assert real is not None
    calls: list[int] = []

    def editor_between(a: str, b: str) -> None:
        calls.append(1)
        if len(calls) == 1:
            Path(b).rename(backup)  # save N, by renaming away
            Path(b).write_bytes(b"save N")
            backup.unlink()
            real(a, b)  # ralphstate's file in place, save N displaced
            Path(b).rename(backup)  # save N+1 begins: ralphstate's file renamed away
            return
        try:
            real(a, b)  # the undo: no file at `b`
        finally:
            Path(b).write_bytes(b"save N+1")  # the editor writes its new file

    monkeypatch.setattr(fsio, "_exchange_fn", [editor_between])
    assert fsio.atomic_write(target, b"new", expect=b"old") is False
    assert len(calls) == 2
    assert target.read_bytes() == b"save N+1"
    backup.unlink()  # the editor removes its backup: ralphstate's file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


# -- a file read while it is being saved in place ---------------------------------------

# A person's editor saving state.json in place, in two writes a few milliseconds apart
# (a slow disk, a large file), every 20 milliseconds until told to stop.
SLOW_SAVER = r"""
import sys, time
from pathlib import Path
path, stop = sys.argv[1], Path(sys.argv[2])
with open(path, "rb") as f:
    data = f.read()
half = len(data) // 2
print("saving", flush=True)
while not stop.exists():
    with open(path, "wb") as f:
        f.write(data[:half])
        f.flush()
        time.sleep(0.003)
        f.write(data[half:])
    time.sleep(0.02)
"""


def test_a_file_saved_in_place_is_read_again_until_it_parses(project: Path) -> None:
    path = make_loop(project, criteria=["a"], stallLimit=100)  # ten stops never stall
    stop = project / "stop"
    saver = subprocess.Popen(
        [sys.executable, "-c", SLOW_SAVER, str(path), str(stop)], stdout=subprocess.PIPE
    )
    try:
        assert saver.stdout is not None and saver.stdout.readline() == b"saving\n"
        store = store_for(project)
        failures = 0
        for _ in range(150):  # for at least 0.3 seconds: a dozen saves or more
            try:
                store.load()
            except CorruptState:
                failures += 1
            time.sleep(0.002)
        stopped = [hook("stop", hook_input_for(project)) for _ in range(10)]
        changed = cli("criteria", "set", "a", "true")
    finally:
        stop.touch()
        saver.wait(timeout=30)
        if saver.stdout is not None:
            saver.stdout.close()
    assert failures == 0
    for run in stopped:
        assert b'"decision":"block"' in run.out, run
    assert changed.code == 0, changed


def counting_reads(project: Path) -> tuple[Store, list[int]]:
    store = store_for(project)
    real, reads = store._read, []

    def counted() -> Any:
        reads.append(1)
        return real()

    store._read = counted  # type: ignore[method-assign]
    return store, reads


@pytest.mark.parametrize(
    ("data", "age"),
    [(b'{"spec": }', 0), (b'{"spec": "cut sho', 3600)],
    ids=["broken", "cut short an hour ago"],
)
def test_a_broken_file_that_does_not_change_is_refused_at_once(
    project: Path, data: bytes, age: int
) -> None:
    """Read once more after STATE_REREAD_PAUSE, not for STATE_SETTLE_SECONDS."""
    path = project / ".loop" / "state.json"
    path.parent.mkdir()
    path.write_bytes(data)
    then = time.time() - age
    os.utime(path, (then, then))
    store, reads = counting_reads(project)
    with pytest.raises(CorruptState, match="not valid JSON"):
        store.load()
    assert len(reads) == 2


def test_a_file_cut_short_a_moment_ago_is_waited_for_a_bounded_time(project: Path) -> None:
    path = project / ".loop" / "state.json"
    path.parent.mkdir()
    path.write_bytes(b'{"spec": "cut sho')
    store, reads = counting_reads(project)
    with pytest.raises(CorruptState, match="not valid JSON"):
        store.load()
    assert 3 <= len(reads) <= limits.STATE_SETTLE_SECONDS / limits.STATE_REREAD_PAUSE + 2


# -- values ralphstate could read but not write back --------------------------------------

WIDE = 2**64
COMMANDS = [
    ("status",),
    ("status", "--json"),
    ("criteria", "set", "a", "true"),
    ("step", "add", "two"),
    ("pause",),
    ("cancel",),
    ("adopt",),
    ("doctor",),
]


def deep(levels: int) -> str:
    """JSON text of a value `levels` deep below state.json's own object."""
    return "[" * levels + "]" * levels


WIDE_PROBLEM = "is wider than 64 bits, which ralphstate could not write back exactly"
DEEP_PROBLEM = (
    f"it nests values more than {limits.MAX_STATE_DEPTH} levels deep, which ralphstate"
    " could not write back"
)


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (f'"note": {{"count": {WIDE}}}', f"the whole number {WIDE} {WIDE_PROBLEM}"),
        (f'"note": [{-(2**63) - 1}]', f"the whole number {-(2**63) - 1} {WIDE_PROBLEM}"),
        (f'"note": {deep(limits.MAX_STATE_DEPTH)}', DEEP_PROBLEM),
        (f'"errors": [{{"details": {deep(300)}}}]', DEEP_PROBLEM),
    ],
    ids=["wider than 64 bits", "below -2**63", "one level too deep", "hundreds deep in errors"],
)
def test_a_value_that_could_not_be_written_back_is_refused_by_everything(
    project: Path, extra: str, problem: str
) -> None:
    """Every command, every hook and `doctor` refuse it with the same sentence, and the
    file is left byte for byte."""
    path = make_loop(project, criteria=["a"])
    data = path.read_bytes()
    key = extra.split(":")[0].encode()
    if key in data:  # written once, in place of the key's own value
        data = data.replace(key + b": []", extra.encode(), 1)
        assert extra.encode() in data
    else:
        data = b"{" + extra.encode() + b"," + data.lstrip()[1:]
    path.write_bytes(data)
    sentence = f".loop/state.json: {problem}; it was left untouched"
    for args in COMMANDS:
        run = cli(*args)
        if args == ("doctor",):
            assert sentence in run.out.decode(), run
        else:
            cli_kept_its_promises(run)
            assert (run.code, run.text) == (1, f"ralphstate: {sentence}.\n"), args
    for event in ("stop", "session-start", "pre-compact"):
        run = hook(event, hook_input_for(project))
        assert b'"decision"' not in run.out
        assert sentence in run.out.decode() + run.text, (event, run)
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    "value",
    [2**64 - 1, -(2**63), orjson.loads(deep(limits.MAX_STATE_DEPTH - 1)), 1.5e300, 2.0**70],
    ids=["2**64-1", "-2**63", "at the depth limit", "a large float", "a whole float"],
)
def test_unknown_values_within_reach_come_back_exactly(project: Path, value: Any) -> None:
    path = make_loop(project, criteria=["a"], note=value)
    assert cli("criteria", "set", "a", "true").code == 0
    assert cli("pause").code == 0
    again = orjson.loads(path.read_bytes())
    assert again["note"] == value and type(again["note"]) is type(value)
    assert again["criteriaStatus"] == {"a": True}


# -- a change that would leave a file too large to read ------------------------------------


def test_a_change_past_the_room_a_loop_may_grow_to_is_refused_before_writing(
    project: Path,
) -> None:
    """Adding large criteria stops at the room left for bookkeeping; the file stays one
    every command reads, and pause, resume, cancel and show keep working on it."""
    path = make_loop(project, criteria=["a"])
    room = limits.MAX_STATE_BYTES - limits.STATE_HEADROOM_BYTES
    big = "c" * 30_000
    refused = None
    for n in range(100):
        run = cli("criteria", "add", f"{n} {big}")
        if run.code:
            refused = run
            break
    assert refused is not None
    size = len(path.read_bytes())
    assert size <= room
    assert refused.text.startswith("ralphstate: that change would make .loop/state.json ")
    assert refused.text.endswith(
        f"bytes; a loop may grow to {room} (the rest is kept for pausing, cancelling and the"
        " hooks); nothing was written.\n"
    )
    assert len(path.read_bytes()) == size
    before = path.read_bytes()
    assert cli("show").out.decode() == before.decode()
    for args in (("pause", "--reason", "r" * 2000), ("resume",), ("status",), ("cancel",)):
        run = cli(*args)
        assert run.code == 0, (args, run)
    assert st.parse(path.read_bytes())["status"] == "cancelled"


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one byte more"])
def test_state_headroom_bytes(project: Path, extra: int) -> None:
    """A change that adds to the loop may bring it to MAX_STATE_BYTES -
    STATE_HEADROOM_BYTES exactly, not one byte past."""
    make_loop(project, criteria=["a"])
    store = store_for(project)
    room = limits.MAX_STATE_BYTES - limits.STATE_HEADROOM_BYTES

    def pad(length: int) -> Any:
        def change(state: st.State, events: list[Any]) -> None:
            state["spec"] = "s" * length

        return change

    store.update(pad(0))
    base = len(store.read_bytes())
    if extra:
        with pytest.raises(Exception, match=f"would make .loop/state.json {room + 1} bytes"):
            store.update(pad(room - base + 1))
        assert len(store.read_bytes()) == base
    else:
        store.update(pad(room - base))
        assert len(store.read_bytes()) == room


def test_no_change_writes_past_the_size_ralphstate_reads(project: Path) -> None:
    """Bookkeeping may use the room, never more: a pause whose reason would bring the
    file past MAX_STATE_BYTES is refused, and the file stays readable."""
    make_loop(project, criteria=["a"])
    store = store_for(project)
    run = cli("pause", "--reason", "r" * limits.MAX_STATE_BYTES)
    assert run.code == 1
    assert "more than the 2097152 ralphstate reads; nothing was written." in run.text
    assert store.load()["status"] == "in_progress"


# -- the per-user files --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["state/loops.json", "data/trust.json"])
def test_a_per_user_file_that_cannot_be_used_is_kept_aside_not_overwritten(
    project: Path, isolated: Path, name: str
) -> None:
    """The registry or trust store that does not parse (or is too large) reads as empty,
    and the change that rewrites it first keeps it beside, byte for byte."""
    broken = isolated / name
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_bytes(b'{"version": 1, "loops": {"/somewhere/.loop": {"startedAt": "t"}')
    assert cli("init", "Build it", "-c", "a").code == 0
    assert cli("criteria", "check", "a", "true").code == 0
    assert cli("trust").code == 0
    kept = [p for p in broken.parent.iterdir() if p.name.startswith(broken.name + ".")]
    assert [p.read_bytes() for p in kept if p.suffix == ".bak"] == [
        b'{"version": 1, "loops": {"/somewhere/.loop": {"startedAt": "t"}'
    ]
    assert str((project / ".loop").resolve()) in orjson.loads(broken.read_bytes())["loops"]


def test_a_per_user_file_is_read_within_its_bound(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ralphstate.storage.peruser import jsonstore

    path = isolated / "state" / "loops.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)
    read: list[int] = []
    real = fsio.open_regular

    class Counted:
        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def read(self, size: int = -1) -> bytes:
            data = self.handle.read(size)
            read.append(len(data))
            return bytes(data)

        def __enter__(self) -> Counted:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

    monkeypatch.setattr(fsio, "open_regular", lambda p: Counted(real(p)))
    whole = Path.read_bytes

    def read_bytes(self: Path) -> bytes:  # however the file is read
        data = whole(self)
        read.append(len(data))
        return data

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    assert jsonstore.read(path) == {}
    assert sum(read) == limits.MAX_USER_FILE_BYTES + 1


@pytest.mark.parametrize("refusal", [errno.EINVAL, errno.ENOSYS, errno.EPERM])
def test_a_file_system_that_cannot_exchange_falls_back_to_check_and_replace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: int
) -> None:
    def cannot(a: str, b: str) -> None:
        raise OSError(refusal, os.strerror(refusal), b)

    monkeypatch.setattr(fsio, "_exchange_fn", [cannot])
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    assert fsio.atomic_write(target, b"new", expect=b"older") is False
    assert fsio.atomic_write(target, b"new", expect=b"old") is True
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
