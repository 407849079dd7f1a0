"""What an agent's output says to the person watching a `ralphstate run`: the one line
its failure is quoted by, and its machine-readable report held back from the terminal.

An agent that fails before it does anything (a refused flag, a missing key, a client
that will not run as root) says why in its last line; the run quotes that line, bounded
and made safe to show, wherever it names the failure (the pause line, `status`, the
state's `errors`, the next prompt). An agent run with its JSON output switched on
(`claude -p --output-format json`, `codex exec --json`, `gemini --output-format json`)
prints kilobytes of JSON an iteration: the terminal gets one line instead, and the
iteration's log (`.loop/runs/NNNN.log`) keeps every byte.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ralphstate.core.render import clip
from ralphstate.core.text import plain_output, visible
from ralphstate.run import usage

# How much of a line the run quotes, and how much of the log's end it reads for it.
QUOTE_CHARS = 200
TAIL_BYTES = 16 * 1024
# How much of an indented JSON object is held back before it is shown as it came.
HOLD_BYTES = 256 * 1024
# How much of what the agent said the terminal's line shows.
SAID_CHARS = 100

Echo = Callable[[bytes], None]


def quoted(text: str, size: int = QUOTE_CHARS) -> str:
    """`"text"`: one line, at most `size` characters, escape sequences dropped and what
    is left unprintable shown as `\\xNN`."""
    return f'"{visible(clip(plain_output(text), size))}"'


def last_line(text: str) -> str | None:
    """The last line of `text` that says something (not blank, not a JSON object)."""
    for line in reversed(plain_output(text).splitlines()):
        line = line.strip()
        if line and not line.startswith("{"):
            return line
    return None


def failure(log: Path, figures: usage.Usage | None) -> str | None:
    """The agent's own words for its failure, quoted: the error its JSON report ended
    on, else the last line it printed; None when it printed nothing."""
    if figures is not None and figures.error:
        return quoted(figures.error)
    found = last_line(usage.tail(log, TAIL_BYTES))
    return quoted(found) if found else None


def said(found: dict[str, Any]) -> str | None:
    """What the agent said last, from one object of its JSON report: Claude Code's
    `result`, Gemini CLI's `response`, Codex's `agent_message` item."""
    for key in ("result", "response"):
        if isinstance(found.get(key), str):
            return str(found[key])
    item = found.get("item")
    if isinstance(item, dict) and item.get("type") == "agent_message":
        text = item.get("text")
        return text if isinstance(text, str) else None
    return None


class Quiet:
    """The agent's output on its way to the terminal, without its JSON objects.

    A line that opens a JSON object (`{` at its start) is held until it ends: when it
    is a whole object it is counted, not shown. An indented object (a line that is `{`
    alone) is held until a line that is `}` alone closes it. Anything else passes as it
    comes. `close` shows what was held back but never closed, then one line saying how
    much JSON there was, where it is kept, and what the agent said last.
    """

    def __init__(self, echo: Echo, kept_in: str) -> None:
        self.echo = echo
        self.kept_in = kept_in
        self.lock = threading.Lock()
        self.held = bytearray()
        self.indented = False  # the held object opened with `{` alone on its line
        self.lines = 0  # the held text's lines that ended
        self.at_start = True  # the next byte starts a line
        self.count = 0
        self.size = 0
        self.last: str | None = None

    def __call__(self, chunk: bytes) -> None:
        with self.lock:
            for piece in chunk.splitlines(keepends=True):
                self._take(piece)

    def _take(self, piece: bytes) -> None:
        ends = piece.endswith((b"\n", b"\r"))
        if not self.held:
            if not (self.at_start and piece.lstrip().startswith(b"{")):
                self.echo(piece)
                self.at_start = ends
                return
            self.lines = 0
        self.held += piece
        if ends:
            self.lines += 1
            self._line_ended()

    def _line_ended(self) -> None:
        """A line of the held text ended: count the object once it is whole, or let it
        through once it cannot be one."""
        if self.lines == 1:
            self.indented = self.held.strip() == b"{"
        if self.indented and _last_line(self.held) != b"}" and len(self.held) < HOLD_BYTES:
            return
        self._settle()

    def _settle(self) -> None:
        """Count the held object when it is a whole one, else show it as it came."""
        try:
            found = json.loads(bytes(self.held).decode("utf-8", "replace"))
        except ValueError:
            found = None
        if isinstance(found, dict):
            self.count += 1
            self.size += len(self.held)
            self.last = said(found) or self.last
        else:
            self.echo(bytes(self.held))
        self.held.clear()
        self.at_start = True

    def close(self) -> None:
        """The agent's output ended: what is still held, then the one line."""
        with self.lock:
            if self.held:  # an object the output ended in, or text that only looked like one
                ends = self.held.endswith((b"\n", b"\r"))
                self._settle()
                self.at_start = ends
            if not self.count:
                return
            objects = "1 object" if self.count == 1 else f"{self.count} objects"
            line = f"  the agent's JSON output ({objects}, {_size(self.size)}) is in {self.kept_in}"
            if self.last:
                line += f"; it said {quoted(self.last, SAID_CHARS)}"
            lead = b"" if self.at_start else b"\n"
            self.echo(lead + visible(line).encode("utf-8") + b"\n")
            self.count = 0


def _last_line(held: bytearray) -> bytes:
    text = bytes(held).rstrip(b"\r\n")
    return text[text.rfind(b"\n") + 1 :].rstrip()  # `}` closes only at the line's start


def _size(count: int) -> str:
    return f"{count} bytes" if count < 1024 else f"{count / 1024:.1f} KB"
