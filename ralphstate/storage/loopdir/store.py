"""The state file on disk: locked read-modify-write, atomic replace, history.

Every change happens under `.loop/state.lock`, re-reads the file inside the lock,
writes a temporary file in `.loop/`, fsyncs it and puts it in place of `state.json`
only while that still holds what was read (fsio's exchange-and-check). An agent or a
person may also edit the file by hand without the lock; a change never writes over
their save: it starts again on the new content.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

import orjson

from ralphstate.core import actor, clock, limits, proof
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState, NoLoop, RalphstateError
from ralphstate.storage.system import fsio
from ralphstate.storage.system.paths import LoopPaths, check_safe

# One line of history.jsonl, before `at` and `iteration` are added.
Event = dict[str, object]
R = TypeVar("R")
# A change: edits the state it is given in place, appends the history events that say
# what it did, and returns whatever its caller wants back.
Change = Callable[[st.State, list[Event]], R]

_RETRIES = 5


def _os_error(action: str, path: str, exc: OSError) -> RalphstateError:
    reason = exc.strerror or exc.__class__.__name__
    return RalphstateError(f"could not {action} {path}: {reason}.")


class Store:
    def __init__(self, paths: LoopPaths, lock_timeout: float | None = None) -> None:
        self.paths = paths
        # Read at call time, so the bound in `limits` is the one in force.
        self.lock_timeout = limits.LOCK_TIMEOUT if lock_timeout is None else lock_timeout

    # -- reading ---------------------------------------------------------------

    def exists(self) -> bool:
        return os.path.lexists(self.paths.state)

    def _read(self) -> tuple[bytes, tuple[int, int, int]]:
        """The file's bytes and (mtime, size, inode) as read."""
        path = self.paths.state
        shown = self.paths.display(path)
        check_safe(self.paths)
        try:
            with fsio.open_regular(path) as handle:  # a FIFO is refused, not waited on
                info = os.fstat(handle.fileno())
                if info.st_size > limits.MAX_STATE_BYTES:
                    raise CorruptState(
                        f"{shown} is {info.st_size} bytes, more than the"
                        f" {limits.MAX_STATE_BYTES} ralphstate reads; it was left as it is."
                    )
                data = handle.read(limits.MAX_STATE_BYTES + 1)
        except FileNotFoundError:
            raise NoLoop(
                f"no loop here: {shown} does not exist (start one with `ralphstate init`)."
            ) from None
        except (IsADirectoryError, fsio.NotRegular):
            raise CorruptState(f"{shown} is not a regular file.") from None
        except OSError as exc:
            raise _os_error("read", shown, exc) from None
        return data, (info.st_mtime_ns, info.st_size, info.st_ino)

    def read_bytes(self) -> bytes:
        return self._read()[0]

    def load(self) -> st.State:
        """The current state, read without the lock. A file ralphstate writes is never
        seen torn; one saved in place by an editor can be, and is read again
        (`_settled`)."""
        return self._settled()[0]

    def _settled(self) -> tuple[st.State, bytes]:
        """The state and the bytes it was read from. A file that does not parse may be
        an editor's save in place, half written: it is read again after
        limits.STATE_REREAD_PAUSE, and again while it keeps changing or looks like a
        save under way (cut short, written less than limits.STATE_SETTLE_SECONDS ago),
        for at most limits.STATE_SETTLE_SECONDS. A file that stays as it is, or never
        settles, is refused as it reads."""
        data, signature = self._read()
        deadline: float | None = None
        while True:
            try:
                return self._parse(data), data
            except CorruptState:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + limits.STATE_SETTLE_SECONDS
                if now >= deadline:
                    raise
            time.sleep(limits.STATE_REREAD_PAUSE)
            again, signature_again = self._read()
            if (again, signature_again) == (data, signature) and not _being_saved(
                data, signature[0]
            ):
                return self._parse(data), data  # not changing: refused as it is
            data, signature = again, signature_again

    def _parse(self, data: bytes) -> st.State:
        try:
            return st.parse(data)
        except CorruptState as exc:
            shown = self.paths.display(self.paths.state)
            text = str(exc).replace("state.json", shown, 1)
            raise CorruptState(f"{text}; it was left untouched.") from None

    # -- locking and writing ---------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        check_safe(self.paths)
        # only a change pays for the lock (and filelock): reading takes none
        # (docs/explanation/design.md, "Reading is tolerant, writing is stable")
        from ralphstate.storage.system import locking

        held = locking.hold(self.paths.lock, self.lock_timeout)
        try:
            held.__enter__()
        except locking.Held:
            raise RalphstateError(
                f"{self.paths.display(self.paths.lock)} is held by another process;"
                f" gave up after {self.lock_timeout:g}s."
            ) from None
        except OSError as exc:
            raise _os_error("lock", self.paths.display(self.paths.lock), exc) from None
        try:
            yield
        finally:
            held.__exit__(None, None, None)

    def _write(self, data: bytes, read: bytes | None) -> bool:
        """Write atomically; False when the file no longer holds `read`, the bytes the
        change started from (fsio's exchange-and-check: a save by anyone else is
        never overwritten)."""
        target = self.paths.state
        try:
            return fsio.atomic_write(target, data, expect=read)
        except OSError as exc:
            raise _os_error("write", self.paths.display(target), exc) from None

    def update(self, change: Change[R], *, read: st.State | None = None) -> R:
        """Apply `change` to the freshest state under the lock, write the state back with
        its events in the history, and return what `change` returned. A change that
        leaves the state as it was and records no event writes nothing; a
        RalphstateError raised by `change` leaves the file as it is.

        With `read`, a state the caller read without the lock (`load`), the change is
        first asked about that one: when it would write nothing, its answer stands and
        no lock is taken (the hooks: a stop or a session that changes nothing must not
        wait for, or create, a lock). `read` is left as it was."""
        if read is not None:
            state = copy.deepcopy(read)
            events: list[Event] = []
            value = change(state, events)
            if _unchanged(read, state, events):
                return value
        with self.locked():
            for _ in range(_RETRIES):
                state, data = self._settled()
                before = st.dumps(state)
                status, contract = state["status"], proof.contract_of(state)
                events = []
                value = change(state, events)
                if not events and st.dumps(state) == before:
                    return value
                state["updatedAt"] = clock.now_iso()
                self._check_readable(state)
                new = st.dumps(state)
                self._check_size(new, state, data)
                fsio.remove_stale_temps(self.paths.dir, self.paths.state.stem)
                if self._write(new, data):
                    self._log(events, state)
                    if state["status"] != status or proof.contract_of(state) != contract:
                        from ralphstate.storage.peruser import ledger

                        ledger.after_write(self.paths, status, contract, state)
                    return value
            raise RalphstateError(
                f"{self.paths.display(self.paths.state)} kept changing while being updated;"
                " nothing was written. Try again."
            )

    def _check_readable(self, state: st.State) -> None:
        """Refuse to write a state that reading would refuse (a `resume --more` past the
        iteration ceiling, say): the file on disk stays the last good one."""
        try:
            st.normalise(state)
        except CorruptState as exc:
            detail = str(exc).removeprefix("state.json: ")
            raise RalphstateError(
                f"that change would leave {self.paths.display(self.paths.state)} unreadable"
                f" ({detail}); nothing was written."
            ) from None

    def _check_size(self, data: bytes, state: st.State, read: bytes | None) -> None:
        """Refuse a change that would write a file reading would refuse, or that adds to
        the loop past the room kept for its bookkeeping (limits.STATE_HEADROOM_BYTES);
        `read` is the file the change started from (None for a new loop)."""
        shown = self.paths.display(self.paths.state)
        if len(data) > limits.MAX_STATE_BYTES:
            raise RalphstateError(
                f"that change would make {shown} {len(data)} bytes, more than the"
                f" {limits.MAX_STATE_BYTES} ralphstate reads; nothing was written."
            )
        room = limits.MAX_STATE_BYTES - limits.STATE_HEADROOM_BYTES
        if len(data) > room and (read is None or _content(state) > _content(st.parse(read))):
            raise RalphstateError(
                f"that change would make {shown} {len(data)} bytes; a loop may grow to"
                f" {room} (the rest is kept for pausing, cancelling and the hooks); nothing"
                " was written."
            )

    def create(self, state: st.State, events: list[Event], backup: bool) -> Path | None:
        """Write a new loop; with `backup`, keep the old file beside it first."""
        try:
            fsio.makedirs(self.paths.dir)
        except OSError as exc:
            raise _os_error("create", self.paths.display(self.paths.dir), exc) from None
        data = st.dumps(state)
        self._check_size(data, state, None)
        with self.locked():
            kept = None
            if backup and os.path.lexists(self.paths.state):
                kept = self._backup_path()
                try:
                    self.paths.state.replace(kept)
                except OSError as exc:
                    shown = self.paths.display(self.paths.state)
                    raise _os_error("keep a copy of", shown, exc) from None
            elif os.path.lexists(self.paths.state):
                raise RalphstateError(f"{self.paths.display(self.paths.state)} already exists.")
            try:
                self._write(data, None)
            except RalphstateError:
                if kept is not None:  # put the old file back rather than leave none
                    with contextlib.suppress(OSError):
                        kept.replace(self.paths.state)
                raise
            self._log(events, state)
            return kept

    def _backup_path(self) -> Path:
        """A name for the kept copy that no earlier copy has (two in a second differ)."""
        stamp = clock.now().strftime("%Y%m%dT%H%M%S")
        kept = self.paths.dir / f"state.{stamp}.json.bak"
        n = 1
        while os.path.lexists(kept):
            kept = self.paths.dir / f"state.{stamp}.{n}.json.bak"
            n += 1
        return kept

    # -- history -----------------------------------------------------------------

    def _log(self, events: list[Event], state: st.State) -> None:
        if not events:
            return
        try:
            append_history(
                self.paths.history, events, state["iteration"], loop_id=state.get("loopId")
            )
        except RalphstateError as exc:  # the state is written; say so, not just "failed"
            shown = self.paths.display(self.paths.state)
            raise RalphstateError(f"the change was saved in {shown}, but {exc}") from None

    def history(self, limit: int | None = None) -> list[Event]:
        """The newest history entries, oldest first: at most `limit` of them, from at
        most the last limits.MAX_HISTORY_TAIL_BYTES of the file (a line that does not
        fit whole is left out, as are lines that do not parse)."""
        lines = sys.maxsize if limit is None else limit
        with self._history_file() as handle:
            if handle is None:
                return []
            data = fsio.read_tail(handle, lines, limit_bytes())
        return _entries(data.splitlines()[-lines:] if lines > 0 else [])

    def history_since(self, offset: int | None) -> tuple[list[Event], int, bool]:
        """The entries appended since `offset` (as an earlier call returned it), the
        offset to pass next time, and whether this is a fresh start rather than what
        followed `offset`: with None, when the file shrank (it was replaced), or when
        more than limits.MAX_HISTORY_TAIL_BYTES was appended meanwhile, it is the
        newest entries that fit in that bound, as `history` reads them. Only whole lines
        are taken: one still being written is left for the next call. So a reader
        that follows the history (`ralphstate run`) reads each line once."""
        with self._history_file() as handle:
            if handle is None:
                return [], 0, offset is None or offset > 0
            end = handle.seek(0, os.SEEK_END)
            if offset is None or offset > end or end - offset > limit_bytes():
                fresh, data = True, fsio.read_tail(handle, sys.maxsize, limit_bytes())
            else:
                handle.seek(offset)
                fresh, data = False, handle.read(end - offset)
        whole = data.rfind(b"\n") + 1
        return _entries(data[:whole].splitlines()), end - (len(data) - whole), fresh

    @contextlib.contextmanager
    def _history_file(self) -> Iterator[BinaryIO | None]:
        check_safe(self.paths)
        try:
            with fsio.open_regular(self.paths.history) as handle:
                yield handle
        except FileNotFoundError:
            yield None
        except OSError as exc:
            raise _os_error("read", self.paths.display(self.paths.history), exc) from None


def append_history(path: Path, events: list[Event], iteration: int, *, loop_id: str | None) -> None:
    """Append one JSON line per event (`at`, `event`, `iteration`, `loop` when the loop
    has an id, details) to the history of the loop directory `path` is in, refusing a
    path that leads outside it."""
    loop = LoopPaths(path.parent.parent, path.parent)
    check_safe(loop)
    at = clock.now_iso()
    lines = b"".join(bounded(_line(at, ev, iteration, loop_id)) for ev in events)
    try:
        fsio.append_line_bytes(path, lines)
    except OSError as exc:
        raise _os_error("append to", loop.display(path), exc) from None


def _line(at: str, event: Event, iteration: int, loop_id: str | None) -> Event:
    line: Event = {"at": at, "event": event["event"], "iteration": iteration}
    if loop_id:
        line["loop"] = loop_id
    line.update(event)
    line.setdefault("actor", actor.current())
    return line


def of_loop(entries: list[Event], loop_id: str | None) -> list[Event]:
    """The entries of one loop (docs/explanation/design.md, "history.jsonl"): those naming its id;
    for a loop from before ids, those since the newest `init` that name no loop."""
    if loop_id:
        return [e for e in entries if e.get("loop") == loop_id]
    start = 0
    for index, entry in enumerate(entries):
        if entry.get("event") == "init" and "loop" not in entry:
            start = index
    return [e for e in entries[start:] if "loop" not in e]


def _being_saved(data: bytes, mtime_ns: int) -> bool:
    """A file that may be a save still under way: it ends before its JSON does (every
    cut of a JSON text fails at its very end) and was written a moment ago."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        age = time.time() - mtime_ns / 1e9
        return exc.pos >= len(data) and age < limits.STATE_SETTLE_SECONDS
    return False


# What a loop's life rewrites in place (status, owner, times, counters, the bounded
# `errors`): everything else is the loop itself, which the headroom does not serve. The
# evidence and the mirrored task list are the loop's life, yet they grow with it.
_BOOKKEEPING = frozenset(st.RUN_FIELDS) - {"evidence", "taskList"}


def _content(state: st.State) -> int:
    """The size of the loop itself, without its bookkeeping."""
    return len(orjson.dumps({k: v for k, v in state.items() if k not in _BOOKKEEPING}))


def limit_bytes() -> int:
    return limits.MAX_HISTORY_TAIL_BYTES  # read at call time: the bound in force


def _entries(lines: list[bytes]) -> list[Event]:
    entries = []
    for line in lines:
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def bounded(line: Event) -> bytes:
    """One history line, at most limits.MAX_HISTORY_LINE_BYTES long with its newline: a
    longer one has its lists cut to MAX_HISTORY_LIST_ITEMS items (the last saying how
    many more there were) and its texts to MAX_HISTORY_TEXT_CHARS characters, and says
    `"clipped": true`; if it is still too long, only its event is kept."""
    data = orjson.dumps(line) + b"\n"
    if len(data) <= limits.MAX_HISTORY_LINE_BYTES:
        return data
    cut: Event = {k: _clip(v) for k, v in line.items()}
    cut["clipped"] = True
    data = orjson.dumps(cut) + b"\n"
    if len(data) <= limits.MAX_HISTORY_LINE_BYTES:
        return data
    keep = ("at", "event", "iteration", "loop", "actor")
    return orjson.dumps({k: _clip(line[k]) for k in keep if k in line} | {"clipped": True}) + b"\n"


def _clip(value: object, depth: int = 0) -> object:
    if isinstance(value, str):
        limit = limits.MAX_HISTORY_TEXT_CHARS
        return value if len(value) <= limit else value[: limit - 1] + "…"
    if depth > 4:  # ralphstate's own events are shallow
        return "…"
    if isinstance(value, list):
        keep = limits.MAX_HISTORY_LIST_ITEMS
        items = [_clip(v, depth + 1) for v in value[:keep]]
        return [*items, f"… {len(value) - keep} more"] if len(value) > keep else items
    if isinstance(value, dict):
        return {
            str(k)[: limits.MAX_HISTORY_TEXT_CHARS]: _clip(v, depth + 1) for k, v in value.items()
        }
    return value


def _unchanged(before: st.State, after: st.State, events: list[Event]) -> bool:
    return not events and st.dumps(after) == st.dumps(before)
