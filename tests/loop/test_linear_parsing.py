"""The task file's parsers are linear in a line's length: a 1 MiB line of blanks in the
task file (a box's text, its own check, a tracker's frontmatter) is read by the real
SessionStart and Stop hooks within the client's SessionStart timeout. The patterns
they replace had two runs of blanks side by side and backtracked over a long run,
quadratically: a 1 MiB box line kept SessionStart past Claude Code's 30 s timeout (the
hook killed, the loop unenforced) and the Stop hook about an hour and a half.

Linearity is asserted as a ratio, never as a time: reading a line four times as long
takes well under sixteen times as long. The hand parsers are also held to the patterns
they replace, on short lines, where those are quick."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as hs

from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.loop import taskfile, tracker
from tests.helpers import run_process
from tests.helpers.loops import SID, make_loop

# Claude Code's default timeout for a command hook: a hook still running then is killed.
HOOK_TIMEOUT = 30
# The patterns the hand parsers replaced (the reference on short lines).
OLD_BOX = re.compile(rb"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\[([ xX])\][ \t]+(\S.*?)[ \t]*\r?$")
OLD_CHECK = re.compile(
    r"^(?P<name>.*?)\s*\(\s*check:\s*(?P<fence>`+)\s*(?P<command>.+?)\s*(?P=fence)\s*\)$"
)
OLD_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:[ \t]*(.*?)[ \t]*")


def blanks(n: int) -> str:
    return (" \t" * n)[:n]


# Each line is of a shape the old patterns backtracked on: n blanks then a non-match.
LINES: dict[str, Callable[[int], str]] = {
    "a box's text then blanks": lambda n: "- [ ] a" + blanks(n) + "\r\r",
    "blanks in a box's check": lambda n: "- [ ] a (check: `" + blanks(n) + "x",
    "blanks around a check": lambda n: "- [ ] a (check:" + blanks(n) + "`x`" + blanks(n) + "y)",
    "many checks opened": lambda n: "- [ ] a" + " (check: `" * (n // 10) + "x`)",
    "blanks before a box": lambda n: blanks(n) + "- [ ] a",
    "blanks after a marker": lambda n: "-" + blanks(n) + "x",
}


def read_line(line: str) -> None:
    """What the hooks do with a task-file line: its boxes, their checks, as a tracker."""
    for box in taskfile.boxes(line.encode()):
        taskfile.own_check(box.text)
    with contextlib.suppress(RalphstateError):  # refused in one sentence: time is the point
        tracker.split(f"---\nkey:{line}\n---\n", "TASKS.md")


def cost(line: str, reps: int) -> float:
    """The least time of a few readings of `line`, `reps` times each (the least is the
    least disturbed by the rest of the machine)."""
    times = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(reps):
            read_line(line)
        times.append(time.perf_counter() - start)
    return min(times)


def ratio(shape: str, small: int) -> float:
    """How many times longer a line of `shape` four times as long takes to read."""
    reps = 1
    while cost(LINES[shape](small), reps) < 0.005:
        reps *= 2
    return cost(LINES[shape](4 * small), reps) / cost(LINES[shape](small), reps)


@pytest.mark.parametrize("shape", sorted(LINES))
def test_reading_a_line_four_times_as_long_costs_well_under_sixteen_times(shape: str) -> None:
    # Linear is 4, quadratic 16: one try of five under 8 will do, as the machine is
    # shared (a quadratic reading is never under 8).
    tries = []
    for _ in range(5):
        tries.append(ratio(shape, 4096))
        if tries[-1] < 8:
            return
    raise AssertionError(f"{shape}: x{min(tries):.1f} for a line four times as long")


@pytest.mark.parametrize("event", ["session-start", "stop"])
@pytest.mark.parametrize("shape", ["a box's text then blanks", "blanks in a box's check"])
def test_the_hooks_answer_with_a_one_mebibyte_task_file_line(
    tmp_path: Path, event: str, shape: str
) -> None:
    line = LINES[shape](limits.MAX_TASKS_FILE_BYTES - 100)
    (tmp_path / "TASKS.md").write_text(f"- [ ] write it (check: `true`)\n{line}\n")
    make_loop(tmp_path, steps=[], tasksFile="TASKS.md", boxCriteria=["write it"])
    data = {"session_id": SID, "cwd": str(tmp_path), "source": "compact"}
    done = run_process(
        ["hook", event], cwd=tmp_path, input=orjson.dumps(data), timeout=HOOK_TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    out = orjson.loads(done.stdout)  # one JSON object, within the timeout
    if event == "session-start":
        assert "write it" in out["hookSpecificOutput"]["additionalContext"]
    else:  # a step of a mebibyte, kept three times, is too big for state.json: said
        assert out.get("decision") == "block" or "state.json" in out["systemMessage"]


LINE_CHARS = [" ", "\t", "-", "*", "+", "1", "12", ".", ")", "[", "]", "x", "X", "a", "\r"]
LINE_CHARS += ["\x0b", "```", "~~~", "- [ ] ", "1. [x] ", "\n", "é"]


@settings(max_examples=500, deadline=None)
@given(hs.lists(hs.sampled_from(LINE_CHARS), max_size=16))
def test_the_boxes_are_the_old_patterns_boxes(parts: list[str]) -> None:
    data = "".join(parts).encode()
    old = []
    fence: bytes | None = None
    start = 0
    for line in data.split(b"\n"):
        opened = re.match(rb"^[ \t]*(```|~~~)", line)
        if opened:
            fence = (
                opened.group(1) if fence is None else (None if opened.group(1) == fence else fence)
            )
        elif fence is None and (match := OLD_BOX.match(line)):
            old.append((start + match.start(1), match.group(2).decode(), match.group(1) != b" "))
        start += len(line) + 1
    assert [(b.offset, b.text, b.done) for b in taskfile.boxes(data)] == old


CHECK_CHARS = ["a", " ", "\t", "\xa0", "(", "check:", "(check:", "`", "``", ")", "b", "\r"]


@settings(max_examples=500, deadline=None)
@given(hs.lists(hs.sampled_from(CHECK_CHARS), max_size=14))
def test_a_box_check_is_the_old_patterns_check(parts: list[str]) -> None:
    text = "".join(parts)
    own = OLD_CHECK.match(text)
    old = (own.group("name"), own.group("command")) if own and own.group("name") else (text, None)
    # A command of only blanks and backticks is read differently now (never blank).
    assume(old[1] is None or bool(old[1].strip(" \t\xa0\r`")))
    assert taskfile.own_check(text) == old


@settings(max_examples=500, deadline=None)
@given(
    hs.lists(hs.sampled_from(["a", "_", "-", "1", ":", " ", "\t", "b", "\xa0", '"']), max_size=10)
)
def test_a_frontmatter_line_is_the_old_patterns_line(parts: list[str]) -> None:
    line = "".join(parts)
    match = OLD_LINE.fullmatch(line)
    assert tracker._key_value(line) == (None if match is None else match.groups())
