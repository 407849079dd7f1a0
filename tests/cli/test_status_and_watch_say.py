"""What `status`, `watch` and `log` say about a loop the hooks will not enforce here: a
loop this machine does not know (a clone, a restored copy), checks not trusted here, and
a state file that cannot be read (the history stays readable)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

UNKNOWN = (
    "this loop was not created or adopted on this machine; the hooks ignore it until you"
    " run `ralphstate adopt`"
)
UNTRUSTED = (
    "checks 1: NOT trusted on this machine (changed outside ralphstate, or they came with"
    " the repository); they will not run until you review them and run `ralphstate trust`"
    " · verify on stop: on (the default)"
)


@pytest.fixture
def clone(project: Path, rs: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A loop made here, then copied to another directory: as a clone brings it."""
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    there = tmp_path / "clone"
    shutil.copytree(project / ".loop", there / ".loop")
    monkeypatch.chdir(there)
    return there


def test_status_says_the_hooks_ignore_a_loop_this_machine_does_not_know(
    clone: Path, rs: Any
) -> None:
    done = rs("status")
    assert done.code == 0
    assert UNKNOWN in done.out.splitlines()
    assert orjson.loads(rs("status", "--json").out)["knownHere"] is False
    assert rs("adopt").code == 0
    assert UNKNOWN not in rs("status").out
    assert orjson.loads(rs("status", "--json").out)["knownHere"] is True


def test_watch_says_the_hooks_ignore_a_loop_this_machine_does_not_know(
    clone: Path, rs: Any
) -> None:
    assert UNKNOWN in rs("watch", "--once").out.splitlines()
    rs("adopt")
    assert UNKNOWN not in rs("watch", "--once").out


def test_a_finished_loop_needs_no_word_about_the_hooks(clone: Path, rs: Any) -> None:
    path = clone / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw["status"] = "cancelled"
    path.write_bytes(orjson.dumps(raw))
    assert UNKNOWN not in rs("status").out
    assert UNKNOWN not in rs("watch", "--once").out


def test_watch_says_the_checks_are_not_trusted_as_status_does(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "tests pass")
    path = project / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw["checks"] = {"tests pass": "pytest -q"}  # a hand edit: not trusted here
    path.write_bytes(orjson.dumps(raw))
    assert UNTRUSTED in rs("status").out.splitlines()
    assert UNTRUSTED in rs("watch", "--once").out.splitlines()
    assert rs("trust").code == 0
    assert "checks 1: trusted on this machine" in rs("watch", "--once").out


def test_log_reads_the_history_when_the_state_file_is_broken(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "tests pass")
    rs("criteria", "set", "tests pass", "true")
    before = rs("log").out
    assert before.count("\n") == 2
    (project / ".loop" / "state.json").write_bytes(b"{broken")
    done = rs("log")
    assert done.code == 0
    assert done.out == before
    assert done.err == (
        "ralphstate: the state file cannot be read (.loop/state.json is not valid JSON (line"
        " 1, column 2): unexpected character, expected a string key; it was left untouched);"
        " the history below is that of the newest loop in it\n"
    )
    every = rs("log", "--all")
    assert (every.code, every.out) == (0, before)


def test_log_on_a_broken_state_shows_only_the_newest_loops_entries(project: Path, rs: Any) -> None:
    rs("init", "First", "-c", "a")
    rs("cancel")
    rs("init", "Second", "-c", "b")
    rs("criteria", "set", "b", "true")
    newest = rs("log").out
    (project / ".loop" / "state.json").write_bytes(b"[]")
    done = rs("log")
    assert done.out == newest
    assert done.err.startswith("ralphstate: the state file cannot be read (.loop/state.json ")
    assert rs("log", "--all").out.count("\n") == 4
