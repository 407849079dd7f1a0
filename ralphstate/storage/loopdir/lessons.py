"""`.loop/lessons.md`: what the agents of a loop learned, one line each, for the next
one. Every `ralphstate run` prompt and the SessionStart restore carry its end."""

from __future__ import annotations

import os
from pathlib import Path

from ralphstate.core import limits

LESSONS = "lessons.md"

__all__ = ["LESSONS", "read"]


def read(loop_dir: Path) -> str | None:
    """.loop/lessons.md, its last `limits.LESSONS_CHARS` characters (the newest lessons
    are at the end); None when there is none or it cannot be read. At most four bytes a
    character are read."""
    path = loop_dir / LESSONS
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            start = max(0, size - limits.LESSONS_CHARS * 4)
            handle.seek(start)
            data = handle.read(limits.LESSONS_CHARS * 4)
    except OSError:
        return None
    text = data.decode("utf-8", "replace")
    if not text.strip():
        return None
    if len(text) > limits.LESSONS_CHARS or start:
        text = text[-limits.LESSONS_CHARS :]
        text = "[… earlier lessons left out]\n" + text[text.find("\n") + 1 :]
    return text
