"""`.loop/.gitignore`, written by `init` when there is none: every file ralphstate
writes under `.loop/` that belongs to this machine only (the locks and their soft
markers, `init --force`'s copies, an interrupted write's temporary files, the run logs,
`report --html`'s page). state.json, history.jsonl, config.toml and lessons.md may be
committed."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.storage.system.paths import LoopPaths

GITIGNORE_HEADER = "# Written by `ralphstate init`."
LOCAL_FILES = ("*.lock", "*.lock.soft", "*.bak", "*.tmp", "runs/", "report.html")
GITIGNORE = (
    f"{GITIGNORE_HEADER} state.json, history.jsonl, config.toml and lessons.md can\n"
    "# be committed; these files belong to this machine only.\n"
    + "".join(f"{name}\n" for name in LOCAL_FILES)
)
_GITIGNORE_READ_LIMIT = 64 * 1024


def ignore_local_files(loop: LoopPaths) -> None:
    """Write `.loop/.gitignore` unless there is one (or anything by that name). One that
    ralphstate wrote (it starts with `GITIGNORE_HEADER`) but that misses some of
    `LOCAL_FILES` (an older version's) gets the missing lines added; a person's own is
    never changed, and a symlink is never followed. A convenience: the loop works
    without it, so every failure is ignored."""
    path = Path(loop.dir) / ".gitignore"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        _complete_gitignore(path)
        return
    except OSError:
        return
    with contextlib.suppress(OSError), os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
        f.write(GITIGNORE)


def _complete_gitignore(path: Path) -> None:
    from ralphstate.storage.system import fsio

    if path.is_symlink():
        return
    try:
        raw = fsio.read_regular(path, _GITIGNORE_READ_LIMIT)  # never a FIFO
    except (OSError, RalphstateError):
        return
    if len(raw) > _GITIGNORE_READ_LIMIT:
        return
    text = raw.decode("utf-8", "replace")
    if not text.startswith(GITIGNORE_HEADER):
        return
    have = {line.strip() for line in text.splitlines()}
    missing = [name for name in LOCAL_FILES if name not in have]
    if not missing:
        return
    if text == _OLD_GITIGNORE:  # as init wrote it: now as init writes it
        new = GITIGNORE
    else:
        new = text + ("" if text.endswith("\n") else "\n") + "".join(f"{n}\n" for n in missing)
    with contextlib.suppress(OSError, RalphstateError):
        fsio.atomic_write(path, new.encode("utf-8"), expect=raw)


_OLD_GITIGNORE = """\
# Written by `ralphstate init`. state.json, history.jsonl and config.toml can be
# committed; these files belong to this machine only.
state.lock
*.bak
*.tmp
runs/
"""
