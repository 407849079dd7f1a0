"""A markdown task file as the loop's backlog (`tasksFile`, docs/explanation/design.md,
"The task file").

The loop's steps are the file's checkboxes: a line `- [ ] text` or `- [x] text` (also
`*`, `+`, `1.` or `1)` as the marker, at any indentation: a nested box is a step of its
own, in the file's order). Boxes inside fenced code blocks are not steps. A step is done
when every box with its text is checked. The file is re-read at every stop and every
iteration of `ralphstate run`; `ralphstate step done` checks a box by changing only that
line's checkbox character, written atomically and never over an edit made meanwhile.
"""

from __future__ import annotations

import re
from pathlib import Path

from ralphstate.core import clock
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.limits import MAX_TASKS_FILE_BYTES
from ralphstate.storage.system import fsio

# Every line is read by hand, in one pass: a pattern with two runs of blanks side by side
# backtracks over a long run of blanks, quadratically (tests/loop/test_linear_parsing.py).
_BLANKS = b" \t"
_MARKERS = b"-*+"
_NUMERALS = tuple(bytes([d]) for d in b"0123456789")
_TICKS = (b" ", b"x", b"X")
_MAX_NUMBER_DIGITS = 9
# Where a box's own check may start: `(check:` at the end of its text.
_CHECK_AT = re.compile(r"\(\s*check:\s*")
# Reading a file a person or agent may be writing: read it until two reads agree.
_READS = 5


class TaskFileError(RalphstateError):
    """The task file cannot be used: missing, unreadable, too big, outside the project,
    or changed while being written. The message is one sentence."""


class Box:
    """One checkbox: the byte offset of its check character, its text, whether checked."""

    __slots__ = ("done", "offset", "text")

    def __init__(self, offset: int, text: str, done: bool) -> None:
        self.offset = offset
        self.text = text
        self.done = done


def boxes(data: bytes) -> list[Box]:
    """The checkboxes of a task file's bytes, in order."""
    found: list[Box] = []
    fence: bytes | None = None
    start = 0
    for line in data.split(b"\n"):
        opened = _fence(line)
        if opened:
            if fence is None:
                fence = opened
            elif opened == fence:
                fence = None
        elif fence is None:
            box = _box(line, start)
            if box is not None:
                found.append(box)
        start += len(line) + 1
    return found


def _fence(line: bytes) -> bytes | None:
    """The fence a line opens or closes (blanks, then ```` ``` ```` or `~~~`), else None."""
    head = line.lstrip(_BLANKS)[:3]
    return head if head in (b"```", b"~~~") else None


def _box(line: bytes, start: int) -> Box | None:
    """The checkbox the line (at byte `start` of the file) is, else None: blanks, a
    marker (`-`, `*`, `+`, or 1 to 9 digits then `.` or `)`), blanks, `[ ]`, `[x]` or
    `[X]`, blanks, then its text, which starts with no white space, without the blanks
    and the carriage return at its end."""
    at = len(line) - len(line.lstrip(_BLANKS))
    if line[at : at + 1] and line[at] in _MARKERS:
        at += 1
    else:
        digits = at
        while digits - at <= _MAX_NUMBER_DIGITS and line[digits : digits + 1] in _NUMERALS:
            digits += 1
        if not 0 < digits - at <= _MAX_NUMBER_DIGITS or line[digits : digits + 1] not in (
            b".",
            b")",
        ):
            return None
        at = digits + 1
    rest = line[at:].lstrip(_BLANKS)
    tick = rest[1:2]
    if len(rest) == len(line) - at or rest[:1] != b"[" or rest[2:3] != b"]" or tick not in _TICKS:
        return None
    text = rest[3:].lstrip(_BLANKS)
    if len(text) == len(rest) - 3 or not text or text[:1].isspace():
        return None
    text = text.removesuffix(b"\r").rstrip(_BLANKS)
    return Box(start + len(line) - len(rest) + 1, text.decode("utf-8", "replace"), tick != b" ")


def own_check(text: str) -> tuple[str, str | None]:
    """(the name, the check) of an item that ends with `(check: `COMMAND`)`; (the
    text, None) for one that does not.

    The first `(check:` the rest of the text closes counts: a run of backticks opens
    the command, and the same run (the command may end with more backticks) then `)`
    end the text, white space allowed around them. The name is what comes before, the
    command what comes between, each without the white space around it; neither may be
    empty. Read in one pass over the text."""
    if not text.endswith(")"):
        return text, None
    body = text[:-1].rstrip()
    closing = len(body) - len(body.rstrip("`"))
    if not closing:
        return text, None
    for found in _CHECK_AT.finditer(text, 0, len(body)):
        opens = found.end()
        run = opens
        while text[run : run + 1] == "`":
            run += 1
        fence = min(run - opens, closing)
        if not fence:
            continue
        begin, end = opens + fence, len(body) - fence
        if begin >= end:
            continue
        between = text[begin:end]
        command = between.strip() if fence == run - opens else between.rstrip()
        if not command:
            continue
        name = text[: found.start()].rstrip()
        return (name, command) if name else (text, None)
    return text, None


def steps(found: list[Box]) -> tuple[list[str], list[str]]:
    """(the steps, the done ones): a step is done when every box with its text is."""
    names = list(dict.fromkeys(b.text for b in found))
    open_ = {b.text for b in found if not b.done}
    return names, [n for n in names if n not in open_]


def resolve(root: Path, name: str) -> Path:
    """The task file `name` (relative to the project root) as a path inside `root`;
    TaskFileError when it lies outside."""
    base = root.resolve()
    path = (base / name).resolve()
    if path != base and base not in path.parents:
        raise TaskFileError(f"the task file {name} is outside the project ({base}).")
    return path


def relative(root: Path, given: Path) -> str:
    """The task file `given` (as typed: relative to the current directory) as the
    project-relative name kept in `tasksFile`; TaskFileError outside the project."""
    base = root.resolve()
    path = given.resolve() if given.is_absolute() else (Path.cwd() / given).resolve()
    if base not in path.parents:
        raise TaskFileError(f"the task file {given} is outside the project ({base}).")
    return path.relative_to(base).as_posix()


def _read_once(path: Path, name: str) -> bytes:
    try:
        with fsio.open_regular(path) as handle:
            data = handle.read(MAX_TASKS_FILE_BYTES + 1)
    except FileNotFoundError:
        raise TaskFileError(f"the task file {name} does not exist.") from None
    except fsio.NotRegular:
        raise TaskFileError(f"the task file {name} is not a regular file.") from None
    except OSError as exc:
        raise TaskFileError(
            f"the task file {name} cannot be read ({exc.strerror or exc})."
        ) from None
    if len(data) > MAX_TASKS_FILE_BYTES:
        raise TaskFileError(
            f"the task file {name} is bigger than {MAX_TASKS_FILE_BYTES // 1024} KiB."
        )
    return data


def read(root: Path, name: str) -> bytes:
    """The task file's bytes, read (bounded) until two reads agree, so a file being
    written is never taken half-written; TaskFileError in one sentence."""
    path = resolve(root, name)
    data = _read_once(path, name)
    for _ in range(_READS):
        again = _read_once(path, name)
        if again == data:
            return data
        data = again
    raise TaskFileError(f"the task file {name} kept changing while being read.")


def apply(state: st.State, found: list[Box]) -> None:
    """Make the state's steps the file's boxes, and, in a loop whose contract they are,
    its box criteria their ticks (loop/boxcontract.py)."""
    names, done = steps(found)
    st.set_steps(state, names, done)
    if state["boxCriteria"]:
        _box_criteria(state, found)


def _box_criteria(state: st.State, found: list[Box]) -> None:
    """Set each box criterion without a check (loop/boxcontract.py) from its boxes: met,
    as a claim, while every one is ticked; unmet when one is not, or none is left."""
    ticks: dict[str, bool] = {}
    for box in found:
        name = own_check(box.text)[0]
        ticks[name] = ticks.get(name, True) and box.done
    for name in state["boxCriteria"]:
        if name not in state["criteria"] or name in state["checks"]:
            continue  # removed, or proved by its check
        met = ticks.get(name, False)
        claimed = state["evidence"].get(name, {}).get("result") == "claimed"
        if state["criteriaStatus"].get(name) is met and claimed == met:
            continue
        state["criteriaStatus"][name] = met
        if met:
            state["evidence"][name] = {"result": "claimed", "at": clock.now_iso()}
        else:
            state["evidence"].pop(name, None)


def sync(state: st.State, root: Path) -> None:
    """Re-read the state's task file, if it has one, into its steps."""
    name = state.get("tasksFile")
    if name:
        apply(state, boxes(read(root, name)))


def tick(root: Path, name: str, step: str, done: bool) -> bool:
    """Check (or, `done` False, uncheck) every box of `step` in the task file, changing
    only their check characters; False when they already were. The file is replaced
    atomically, only while it holds what was read (an edit made meanwhile is re-read and
    the tick tried again), and keeps its permissions."""
    path = resolve(root, name)
    for _ in range(_READS):
        data = read(root, name)
        mine = [b for b in boxes(data) if b.text == step]
        if not mine:
            raise TaskFileError(f"the task file {name} has no box {step!r} any more.")
        change = [b for b in mine if b.done != done]
        if not change:
            return False
        new = bytearray(data)
        for box in change:
            new[box.offset] = ord("x") if done else ord(" ")
        try:
            mode = path.stat().st_mode & 0o7777
            if fsio.atomic_write(path, bytes(new), expect=data):
                if mode != fsio.FILE_MODE:
                    path.chmod(mode)
                return True
        except OSError as exc:
            raise TaskFileError(
                f"the task file {name} cannot be written ({exc.strerror or exc})."
            ) from None
    raise TaskFileError(f"the task file {name} kept changing; its box was not checked.")
