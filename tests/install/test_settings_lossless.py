"""Nothing lost in a settings file: a person's save (or the agent's own) racing
`ralphstate install` never is written over, whether the file is rewritten, created or
removed. The race runs real processes against a real file, as
tests/storage/test_lossless.py does for the state file."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ralphstate.install import settings
from ralphstate.storage.system import fsio
from tests.helpers.race import editor_race

LINUX_ONLY = pytest.mark.skipif(
    sys.platform != "linux", reason="the atomic exchange is tested on Linux (renameat2)"
)

# A person saving the settings file over and over, alternately in place (truncate and
# write, as most editors do) and by rename; before each save it checks that its
# previous save is still there (ralphstate's edits keep the key `edit`, so another
# number means ralphstate wrote over the save). Prints how many were lost.
EDITOR = r"""
import json, os, sys, time
path, rounds, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def edit_now():
    with open(path, "rb") as f:
        return json.loads(f.read()).get("edit")
lost, last = 0, 0
for n in range(1, rounds + 1):
    if edit_now() != last:  # looked again a moment later: lost, not just passing
        time.sleep(0.1)
        lost += edit_now() != last
    with open(path, "rb") as f:
        data = json.loads(f.read())
    data["edit"] = last = n
    raw = json.dumps(data, indent=2).encode()
    if n % 2:
        with open(path, "wb") as f:
            f.write(raw)
    else:
        with open(path + ".saving", "wb") as f:
            f.write(raw)
        os.replace(path + ".saving", path)
    time.sleep(pause)
lost += edit_now() != rounds
print(lost, flush=True)
"""

# `ralphstate install` changing the file as fast as it can (through settings.update, as
# every agent's install does) until told to stop, held up for a moment just before it
# puts its file in place; prints how many times it got there, and how many changes
# it wrote.
UPDATER = r"""
import os, sys, time
from pathlib import Path
from ralphstate.core.errors import RalphstateError
from ralphstate.install import settings
from ralphstate.storage.system import fsio
path, stop, delay = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
attempts = 0
def slow(real):
    def call(*args):
        global attempts
        attempts += 1
        time.sleep(delay)
        return real(*args)
    return call
if hasattr(fsio, "_swap_if_holds"):
    fsio._swap_if_holds = slow(fsio._swap_if_holds)
os.replace = slow(os.replace)  # the plain replace (and, before the exchange, the only one)
def flip(data):
    data["flip"] = not data.get("flip")
    return ["flipped"]
writes = 0
print("ready", flush=True)
while not stop.exists():
    try:
        writes += settings.update(path, settings.parse, flip).changed
    except RalphstateError:
        pass
print(attempts, writes, flush=True)
"""

# The editor saves every millisecond or so, 300 times; install is held up for two
# milliseconds before putting its file in place. Compare-then-replace wrote over a
# save in about half of its writes.
PAUSE, ROUNDS, DELAY = 0.001, 300, 0.002


def race(path: Path) -> tuple[int, int, int]:
    """(saves lost, writes attempted, changes written) while an editor and install race."""
    return editor_race(EDITOR, UPDATER, path, path, ROUNDS, PAUSE, DELAY)


@LINUX_ONLY
def test_a_save_racing_install_is_never_lost(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model": "opus", "edit": 0}))
    lost, attempts, writes = race(path)
    assert lost == 0
    assert attempts > 20 and writes > 0  # the two really raced
    data = json.loads(path.read_text())
    assert data["edit"] == ROUNDS and data["model"] == "opus"
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.local.json", "stop"]


# -- the save landing at the worst moment, every way the file is put in place ----------


@pytest.fixture(params=["exchange", "check and replace"])
def exchange(request: pytest.FixtureRequest) -> Iterator[bool]:
    """Each case with the platform's exchange and without it (where there is none)."""
    if request.param == "check and replace":
        fsio._exchange_fn[:] = [None]
    try:
        yield request.param == "exchange"
    finally:
        fsio._exchange_fn.clear()


def save_at_the_last_moment(
    monkeypatch: pytest.MonkeyPatch, path: Path, save: Callable[[], object]
) -> list[str]:
    """Make the person's `save` happen once, just before the first call that would put
    a file at `path` or take it away (a replace, a link, an exchange or an unlink): after
    every check ralphstate makes before it. Returns the calls made, by name."""
    calls: list[str] = []
    name = os.fspath(path)

    def wrap(label: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not calls and any(os.fspath(a) == name for a in args if isinstance(a, (str, Path))):
                calls.append(label)
                save()
            return real(*args, **kwargs)

        return call

    for label in ("replace", "link", "unlink"):
        monkeypatch.setattr(os, label, wrap(label, getattr(os, label)))
    real_exchange = fsio._exchanger()
    if real_exchange is not None:
        monkeypatch.setattr(fsio, "_exchange_fn", [wrap("exchange", real_exchange)])
    return calls


def flip(data: dict[str, Any]) -> list[str]:
    data["flip"] = not data.get("flip")
    return ["flipped"]


@LINUX_ONLY
def test_a_save_just_before_the_rewrite_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the platform can exchange two names (without it, the microseconds after
    the last check stay open: tests/storage/test_lossless.py)."""
    path = tmp_path / "settings.json"
    path.write_text('{"model": "opus"}')
    calls = save_at_the_last_moment(
        monkeypatch, path, lambda: path.write_text('{"model": "opus", "edit": 1}')
    )
    assert settings.update(path, settings.parse, flip).changed is True
    assert json.loads(path.read_text()) == {"model": "opus", "edit": 1, "flip": True}
    assert calls == ["exchange"]
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_a_file_saved_just_before_install_creates_it_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    path = tmp_path / "settings.json"
    calls = save_at_the_last_moment(monkeypatch, path, lambda: path.write_text('{"edit": 1}'))
    assert settings.update(path, settings.parse, flip).changed is True
    assert json.loads(path.read_text()) == {"edit": 1, "flip": True}
    assert calls == ["link"]
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_a_save_just_before_uninstall_removes_the_file_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    path = tmp_path / "hooks.json"
    path.write_text('{"flip": true}')

    def nothing_left(data: dict[str, Any]) -> bool:
        return not any(key != "flip" for key in data)

    saved = '{"flip": true, "edit": 1}'
    calls = save_at_the_last_moment(monkeypatch, path, lambda: path.write_text(saved))
    result = settings.update(path, settings.parse, flip, remove_when=nothing_left)
    assert calls
    assert result.changed is True
    # the save was put back, and the edit made again on it: written, not removed
    assert json.loads(path.read_text()) == {"flip": False, "edit": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["hooks.json"]


def test_uninstall_removes_the_file_it_read(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text('{"flip": true}')
    result = settings.update(path, settings.parse, flip, remove_when=lambda data: True)
    assert result.changed is True and result.actions[-1] == f"removed {path}"
    assert list(tmp_path.iterdir()) == []


def test_remove_if_holds_removes_only_what_was_expected(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_bytes(b"theirs")
    assert fsio.remove_if_holds(path, b"ours") is False
    assert path.read_bytes() == b"theirs"
    assert fsio.remove_if_holds(path, b"theirs") is True
    assert fsio.remove_if_holds(path, b"theirs") is False  # nothing there
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_creates_only_where_there_is_nothing(
    tmp_path: Path, exchange: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "settings.json"
    assert fsio.atomic_write(path, b"first", absent=True, mode=0o600) is True
    assert path.read_bytes() == b"first" and path.stat().st_mode & 0o777 == 0o600
    assert fsio.atomic_write(path, b"second", absent=True) is False
    assert path.read_bytes() == b"first"

    def no_links(*args: Any) -> None:  # a file system without hard links: FAT, some mounts
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    assert fsio.atomic_write(path, b"second", absent=True) is False
    path.unlink()
    assert fsio.atomic_write(path, b"third", absent=True) is True
    assert path.read_bytes() == b"third"
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_an_empty_file_is_looked_at_again_before_it_counts_as_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor saving in place empties the file, then writes: install reading it in
    between must not take the save in progress for an empty file and write over it."""
    path = tmp_path / "settings.json"
    path.write_bytes(b"")  # truncated just now, the save not yet written
    pauses: list[float] = []

    def the_save_lands(seconds: float) -> None:
        pauses.append(seconds)
        path.write_text('{"edit": 1}')

    monkeypatch.setattr(time, "sleep", the_save_lands)
    assert settings.update(path, settings.parse, flip).changed is True
    assert json.loads(path.read_text()) == {"edit": 1, "flip": True}
    assert pauses == [settings.EMPTY_PAUSE]


def age(path: Path, seconds: float) -> None:
    """Make `path` look `seconds` older (its modification time moved back)."""
    info = path.stat()
    os.utime(path, (info.st_atime - seconds, info.st_mtime - seconds))


def test_an_empty_file_emptied_a_moment_ago_counts_as_empty_once_it_stays_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(b"\n")
    pauses: list[float] = []

    def time_passes(seconds: float) -> None:
        pauses.append(seconds)
        age(path, seconds)

    monkeypatch.setattr(time, "sleep", time_passes)
    assert settings.update(path, settings.parse, flip).changed is True
    assert json.loads(path.read_text()) == {"flip": True}
    assert 0.9 * settings.EMPTY_SETTLE <= sum(pauses) <= settings.EMPTY_SETTLE + 0.1


def test_an_empty_file_left_so_long_ago_is_written_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(b"")
    age(path, 60)
    pauses: list[float] = []
    monkeypatch.setattr(time, "sleep", pauses.append)
    assert settings.update(path, settings.parse, flip).changed is True
    assert json.loads(path.read_text()) == {"flip": True}
    assert pauses == []
