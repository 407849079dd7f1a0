"""An agent's JSON settings (or hooks) file: read, checked, edited and written back.

One read-modify-write for every agent: the file is read and parsed, edited in memory,
and written only when the edit changed something, atomically, through a symlink, with
its permission bits kept, and only if nobody rewrote it in the meantime (the lossless
write of storage/system/fsio.py, the state file's: a save that lands between the read and the
write is never written over); when somebody did, the edit starts over on their
version. A file that is not what the agent expects is reported in one sentence and
never rewritten.
"""

from __future__ import annotations

import copy
import json
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.system import fsio
from ralphstate.storage.system.fsio import atomic_write, makedirs

WRITE_ATTEMPTS = 5
# An empty file changed less than EMPTY_SETTLE seconds ago may be a save in progress:
# it is looked at every EMPTY_PAUSE seconds until it is that old (or changes).
EMPTY_SETTLE = 1.0
EMPTY_PAUSE = 0.05
Handler = tuple[dict[str, Any], dict[str, Any]]  # (matcher group, handler)


@dataclass
class InstallResult:
    """What `install` did: the settings file, whether it was rewritten, and each step."""

    path: Path
    changed: bool
    actions: list[str] = field(default_factory=list)


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, None when there is no file."""
    try:  # bounded, and never blocking on a FIFO or a device
        data = fsio.read_regular(path, limits.MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RalphstateError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if len(data) > limits.MAX_SETTINGS_BYTES:
        raise RalphstateError(f"{path} is larger than {limits.MAX_SETTINGS_BYTES} bytes.")
    return data


def parse(raw: bytes, path: Path, events: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON object in `raw`, whose `hooks` (if any) is an object and whose `events`
    under it (if present) are lists; an empty file is an empty object."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise RalphstateError(f"{path} is not UTF-8 text; nothing was changed.") from None
    if not text.strip():
        return {}  # an empty file holds nothing to lose
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RalphstateError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno});"
            " fix it and run again, nothing was changed."
        ) from None
    if not isinstance(data, dict):
        raise RalphstateError(f"{path} does not hold a JSON object; nothing was changed.")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise RalphstateError(f'"hooks" in {path} is not an object; nothing was changed.')
    for event in events:
        if event in hooks and not isinstance(hooks[event], list):
            raise RalphstateError(f'"hooks.{event}" in {path} is not a list; nothing was changed.')
    return data


def update(
    path: Path,
    load: Callable[[bytes, Path], dict[str, Any]],
    edit: Callable[[dict[str, Any]], list[str]],
    *,
    remove_when: Callable[[dict[str, Any]], bool] | None = None,
    within: Path | None = None,
) -> InstallResult:
    """Read `path` (a missing file is `{}`), `load` it (`parse`, and whatever the agent
    needs checked on top), `edit` it in place (returning
    what it did), and write it back when the edit changed it; or remove the file when
    `remove_when` says what is left is nothing worth keeping. A `path` that resolves
    outside `within` (the project, for a project's own file) is refused: a cloned
    project's settings file linked to `~/.bash_profile` is not written through. A
    person's own user file (`within` None) is written through a link, as a dotfiles
    manager makes it."""
    if within is not None:
        _check_inside(path, within)
    target = path.resolve() if path.is_symlink() else path  # write through a symlink
    for _ in range(WRITE_ATTEMPTS):
        original = read_bytes(target)
        if original is not None and not original.strip() and not _settled(target, original):
            continue
        data = {} if original is None else load(original, path)
        before = copy.deepcopy(data)
        actions = edit(data)
        if data == before:
            return InstallResult(path, False, actions)
        try:
            if remove_when is not None and remove_when(data) and original is not None:
                if not fsio.remove_if_holds(target, original):
                    continue
                return InstallResult(path, True, [*actions, f"removed {path}"])
            payload = (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
            mode = _mode(target)  # keep a private settings file private
            makedirs(target.parent)  # never world-writable, whatever the umask
            written = atomic_write(
                target,
                payload,
                expect=original,
                absent=original is None,
                mode=fsio.FILE_MODE if mode is None else mode,
            )
        except OSError as exc:
            raise RalphstateError(f"Cannot write {path}: {exc.strerror or exc}.") from None
        if written:
            return InstallResult(path, True, actions)
    raise RalphstateError(
        f"{path} kept changing while ralphstate was updating it; nothing was written, try again."
    )


def _check_inside(path: Path, within: Path) -> None:
    """RalphstateError when `path`, its links and its directories' links followed, is
    not inside `within` (followed the same way)."""
    real, home = path.resolve(), within.resolve()
    if real != home and home not in real.parents:
        raise RalphstateError(
            f"{path} leads outside {within} (to {real}); ralphstate refuses to write"
            " through it. Nothing was changed."
        )


def _settled(target: Path, empty: bytes) -> bool:
    """Whether the empty file `target` counts as empty; False when it changed.

    An editor saving in place empties the file, then writes the save: an install that
    read the file in between, and wrote over it, would lose the save. An empty file
    that was changed a moment ago is looked at again until it is EMPTY_SETTLE seconds
    old (and never longer than that, whatever its time stamp says)."""
    deadline = time.monotonic() + EMPTY_SETTLE
    while True:
        try:
            age = time.time() - target.stat().st_mtime
        except OSError:
            return False  # gone: read it again
        if age >= EMPTY_SETTLE or time.monotonic() >= deadline:
            return True
        time.sleep(EMPTY_PAUSE)
        if read_bytes(target) != empty:
            return False


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


# -- Claude Code's grouped shape: {"hooks": {EVENT: [{"matcher"?, "hooks": [HANDLER]}]}} --


def handlers(groups: object) -> list[Handler]:
    """(matcher group, handler) pairs, skipping anything malformed (left as it is)."""
    pairs: list[Handler] = []
    if not isinstance(groups, list):
        return pairs
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            pairs += [(group, h) for h in group["hooks"] if isinstance(h, dict)]
    return pairs


def drop(group: dict[str, Any], handler: dict[str, Any]) -> None:
    """Remove `handler` (this very object) from its matcher group."""
    group["hooks"] = [h for h in group["hooks"] if h is not handler]


def prune(groups: list[Any], touched: list[dict[str, Any]]) -> None:
    """Remove the matcher groups that our removals left empty, and only those."""
    emptied = [g for g in touched if not g["hooks"]]
    groups[:] = [g for g in groups if not any(g is e for e in emptied)]
