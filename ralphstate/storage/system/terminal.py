"""A question asked at the controlling terminal, never on stdin
(docs/explanation/proof.md, "Only a person approves").

`ask` writes its lines to the process's controlling terminal and reads one typed line
back from it: `/dev/tty` on Linux and macOS, `CONIN$` and `CONOUT$` on Windows. A
process with no controlling terminal (the agent's Bash tool, `claude -p`, an iteration
of `ralphstate run`, a pipe, a service) cannot open it, and gets NO_TERMINAL: stdin is
never read, so an answer piped into the command is no answer.
"""

from __future__ import annotations

import sys
from pathlib import Path

NO_TERMINAL = None
_TTY = "/dev/tty"
# The longest answer read: a person types a word.
_MAX_ANSWER = 200


def ask(lines: list[str], prompt: str) -> str | None:
    """Show `lines` and `prompt` at the controlling terminal, and return the line typed
    there (without its end); NO_TERMINAL when this process has none."""
    try:
        inward, outward = ("CONIN$", "CONOUT$") if sys.platform == "win32" else (_TTY, _TTY)
        reader = Path(inward).open(encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        return NO_TERMINAL
    try:
        writer = Path(outward).open("w", encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError:
        reader.close()
        return NO_TERMINAL
    with reader, writer:
        try:
            writer.write("".join(f"{line}\n" for line in lines) + prompt)
            writer.flush()
            answer = reader.readline(_MAX_ANSWER)
        except OSError:
            return NO_TERMINAL
    if not answer:
        return ""  # end of input at the terminal: no answer
    return answer.rstrip("\r\n")


def available() -> bool:
    """Whether this process has a controlling terminal it can ask at."""
    try:
        inward = "CONIN$" if sys.platform == "win32" else _TTY
        with Path(inward).open(encoding="utf-8"):
            return True
    except OSError:
        return False
