"""Bounded work on every read of the history: its tail is read within a byte bound
whatever its lines, a line ralphstate writes is bounded, `ralphstate run` follows the
history instead of reading it again each iteration, and `status` is linear in the
loop's size."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import limits, views
from ralphstate.core import state as st
from ralphstate.run import prompt
from ralphstate.storage.loopdir.store import Store, append_history, bounded
from ralphstate.storage.system import fsio
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.hardening import SID, cli, hook, hook_input_for, make_loop


def store_for(project: Path) -> Store:
    return Store(LoopPaths(project, project / ".loop"))


class Counted:
    """A file handle that counts the bytes read through it."""

    def __init__(self, handle: Any, tally: list[int]) -> None:
        self.handle, self.tally = handle, tally

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.tally.append(len(data))
        return bytes(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)

    def __enter__(self) -> Counted:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()


@pytest.fixture
def bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every read of history.jsonl, in bytes."""
    tally: list[int] = []
    real = fsio.open_regular

    def counted(path: Path) -> Any:
        handle = real(path)
        return Counted(handle, tally) if Path(path).name == "history.jsonl" else handle

    monkeypatch.setattr(fsio, "open_regular", counted)
    return tally


def line(n: int, **more: Any) -> bytes:
    return orjson.dumps({"at": "t", "event": "note", "iteration": 0, "n": n, **more}) + b"\n"


# -- the tail of the history ---------------------------------------------------------------


def test_a_history_whose_tail_has_no_newline_is_read_within_the_bound(
    project: Path, bytes_read: list[int]
) -> None:
    """64 MB with no newline at all (a sparse file of zeros): `log` reads at most
    MAX_HISTORY_TAIL_BYTES of it and shows nothing."""
    make_loop(project)
    history = project / ".loop" / "history.jsonl"
    with history.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)
    bytes_read.clear()
    run = cli("log", "-n", "5")
    assert (run.code, run.out) == (0, b"")
    assert sum(bytes_read) <= limits.MAX_HISTORY_TAIL_BYTES + 1


def test_very_long_lines_are_read_within_the_bound(project: Path, bytes_read: list[int]) -> None:
    """Lines of a megabyte each: `log -n 20` reads at most the bound, shows the newest
    lines that fit in it whole, and never a piece of a line."""
    make_loop(project)
    history = project / ".loop" / "history.jsonl"
    big = "x" * (1024 * 1024)
    history.write_bytes(b"".join(line(n, pad=big) for n in range(12)))
    bytes_read.clear()
    run = cli("log", "--json", "-n", "20")
    assert sum(bytes_read) <= limits.MAX_HISTORY_TAIL_BYTES + 1
    shown = [orjson.loads(x)["n"] for x in run.out.splitlines()]
    fit = limits.MAX_HISTORY_TAIL_BYTES // len(line(0, pad=big))
    assert shown == list(range(12 - fit, 12))


@pytest.mark.parametrize("cut", [0, 1], ids=["a line starts at the bound", "the bound cuts a line"])
def test_read_tail_starts_at_a_line(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "history.jsonl"
    lines = [line(n) for n in range(10)]
    path.write_bytes(b"".join(lines))
    bound = len(b"".join(lines[6:])) + cut
    with path.open("rb") as handle:
        assert fsio.read_tail(handle, 100, bound) == b"".join(lines[6:])


# -- what a history line holds --------------------------------------------------------------


def test_a_blocked_stop_at_thousands_of_criteria_writes_a_bounded_line(project: Path) -> None:
    names = [f"criterion number {i:05d}" for i in range(5000)]
    make_loop(project, criteria=names)
    history = project / ".loop" / "history.jsonl"
    run = hook("stop", hook_input_for(project))
    assert b'"decision":"block"' in run.out
    written = history.read_bytes().splitlines()[-1]
    assert len(written) + 1 <= limits.MAX_HISTORY_LINE_BYTES
    entry = orjson.loads(written)
    assert entry["event"] == "unmet" and entry["clipped"] is True
    keep = limits.MAX_HISTORY_LIST_ITEMS
    assert entry["unmet"] == [*names[:keep], f"… {5000 - keep} more"]


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one byte more"])
def test_max_history_line_bytes(extra: int) -> None:
    event = {"at": "2026-01-01T00:00:00Z", "event": "note", "iteration": 1, "text": ""}
    base = len(orjson.dumps(event)) + 1
    event["text"] = "t" * (limits.MAX_HISTORY_LINE_BYTES - base + extra)
    data = bounded(event)
    if extra:
        text = "t" * (limits.MAX_HISTORY_TEXT_CHARS - 1) + "…"
        assert orjson.loads(data) == {**event, "text": text, "clipped": True}
    else:
        assert data == orjson.dumps(event) + b"\n"
        assert len(data) == limits.MAX_HISTORY_LINE_BYTES


def test_a_line_that_cannot_be_cut_down_keeps_only_its_event() -> None:
    event = {"at": "t", "event": "note", "iteration": 1}
    many = {f"key {i}": "v" * 400 for i in range(100)}
    assert orjson.loads(bounded({**event, **many})) == {**event, "clipped": True}


# -- `ralphstate run` follows the history ---------------------------------------------------


def test_run_reads_each_history_line_once(project: Path, bytes_read: list[int]) -> None:
    """The notes the run's prompt quotes: the first iteration reads the history's tail,
    the next ones only what was appended since (not the newest 10,000 lines again)."""
    make_loop(project, criteria=["a", "b"])
    store = store_for(project)
    state = store.load()
    history = project / ".loop" / "history.jsonl"
    filler = b"".join(line(n) for n in range(10_000))
    with history.open("ab") as handle:
        handle.write(filler)
    notes = prompt.Notes(store)
    bytes_read.clear()
    assert notes.read(state) == {}
    assert sum(bytes_read) >= len(filler)
    size = history.stat().st_size
    assert cli("criteria", "set", "a", "true", "--note", "the tests pass").code == 0
    appended = history.stat().st_size - size
    bytes_read.clear()
    assert notes.read(store.load()) == {"a": "the tests pass"}
    assert sum(bytes_read) <= appended + 1
    bytes_read.clear()
    assert notes.read(store.load()) == {"a": "the tests pass"}
    assert sum(bytes_read) == 0


@pytest.mark.parametrize("loop_id", [None, "0123456789abcdef"], ids=["no loop id", "loop id"])
def test_run_notes_agree_with_reading_the_history_again(project: Path, loop_id: Any) -> None:
    """Followed bit by bit or read whole, the notes are the same: the newest note of
    each criterion of this loop."""
    make_loop(project, criteria=["a", "b"], loopId=loop_id)
    store = store_for(project)
    state = store.load()
    notes = prompt.Notes(store)
    history = store.paths.history
    steps: list[tuple[list[dict[str, Any]], str | None]] = [
        ([{"event": "criterion_set", "criterion": "a", "note": "old"}], loop_id),
        ([{"event": "init"}], None),  # an earlier loop's history ends here
        ([{"event": "criterion_set", "criterion": "b", "note": "other loop"}], "fedcba9876543210"),
        ([{"event": "criterion_set", "criterion": "a", "note": "new"}], loop_id),
        ([{"event": "criterion_set", "criterion": "b", "note": "mine"}], loop_id),
        ([{"event": "criterion_set", "criterion": "a"}], loop_id),
    ]
    for events, owner in steps:
        append_history(history, events, 1, loop_id=owner)
        assert notes.read(state) == prompt.recent_notes(store, state)
    assert notes.read(state) == {"b": "mine"}


# -- status is linear in the loop's size ----------------------------------------------------


class CountedList(list[str]):
    """A list that counts the times something is looked for in it."""

    lookups = 0

    def __contains__(self, item: object) -> bool:
        CountedList.lookups += 1
        return super().__contains__(item)


def test_status_looks_each_step_up_once() -> None:
    """`status` of a loop with thousands of steps does not scan the completed steps
    once per step (quadratic)."""
    steps = [f"step {i}" for i in range(3000)]
    state = st.new("Build it", ["a"], steps, session_id=SID, now="2026-01-01T00:00:00Z")
    st.set_steps(state, steps, steps[:1500])
    state["completedSteps"] = CountedList(state["completedSteps"])
    CountedList.lookups = 0
    text = views.status(state, views.StatusFacts("here"))
    assert "steps 1500/3000:" in text and "[>] step 1500  (next)" in text
    assert CountedList.lookups == 0


# -- files ralphstate reads but does not own ------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize(
    ("where", "args", "said"),
    [
        ("template.json", ("init", "Build it", "--from", "template.json"), "cannot read template"),
        (".loop/config.toml", ("run", "--dry-run"), "could not read"),
        (".claude/settings.local.json", ("install",), "Cannot read"),
    ],
    ids=["a template", "the run's config", "Claude Code's settings"],
)
def test_a_fifo_where_a_file_is_read_is_refused_without_blocking(
    project: Path, where: str, args: tuple[str, ...], said: str
) -> None:
    """A FIFO (or a device) where a template, `.loop/config.toml` or a settings file is
    read is refused at once, as the loop's own files are: nothing waits for a writer
    that never comes. (A real process: the old read blocked for good.)"""
    make_loop(project, criteria=["a"])
    fifo = project / where
    fifo.parent.mkdir(exist_ok=True)
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1, done
    assert said in done.stderr and "not a regular file" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("where", [".loop/config.toml", ".claude/settings.local.json"])
def test_a_settings_file_past_its_bound_is_refused(project: Path, where: str) -> None:
    make_loop(project, criteria=["a"])
    path = project / where
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"#" * (limits.MAX_SETTINGS_BYTES + 1))
    run = cli(*(("run", "--dry-run") if "config" in where else ("install",)))
    assert run.code == 1
    assert run.text == (
        f"ralphstate: {path} is larger than {limits.MAX_SETTINGS_BYTES} bytes.\n"
    ), run.text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_the_status_line_never_waits_on_a_fifo(project: Path) -> None:
    """Claude Code runs the status line at every refresh: a FIFO where state.json
    belongs gives no line, at once. (A real process: the old open blocked for good.)"""
    (project / ".loop").mkdir()
    os.mkfifo(project / ".loop" / "state.json")
    done = subprocess.run(
        [sys.executable, "-c", "from ralphstate.hooks.statusline import main; main()"],
        input=orjson.dumps({"workspace": {"project_dir": str(project)}}),
        capture_output=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_the_status_line_looks_each_step_up_once() -> None:
    from ralphstate.hooks import statusline

    steps = [f"step {i}" for i in range(3000)]
    state = st.new("Build it", ["a"], steps, session_id=SID, now="2026-01-01T00:00:00Z")
    st.set_steps(state, steps, steps[:1500])
    state["completedSteps"] = CountedList(state["completedSteps"])
    CountedList.lookups = 0
    assert statusline.render(state) == "loop 0/20 · 0/1 verified · next: step 1500"
    assert CountedList.lookups == 0
