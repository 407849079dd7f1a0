"""Whether Claude Code's own sandbox is on for a project's sessions, as the status line
asks at every assistant message of a running loop.

Claude Code reads `sandbox.enabled` from its settings files, the nearer the project
the stronger: the project's local file (`.claude/settings.local.json`), then its
shared one (`.claude/settings.json`), then the user's (`$CLAUDE_CONFIG_DIR` or
`~/.claude/settings.json`); the first that sets it to true or false decides, and none
means off. Each file is read once, at most `enforcement.MAX_READ` bytes, never
blocking on a FIFO; a file that does not name `"sandbox"` is not parsed at all, so the
common case costs a few `open` calls. A file that cannot be read or parsed says
nothing, as a key of the wrong type does.

Not read: managed settings (an organization's `managed-settings.json`, MDM, the
console) and a session's `--settings`: a sandbox turned on only there is reported as
off, the cautious side. A sandbox switched on that Claude Code cannot start runs the
session unconfined unless `sandbox.failIfUnavailable` is set (`ralphstate install
--sandbox` sets it); `ralphstate doctor` starts it to tell.
"""

from __future__ import annotations

import os

from ralphstate.loop.enforcement import SCOPES, hook_file_path, read_bounded

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from collections.abc import Iterable

KEY = b'"sandbox"'


def enabled(roots: Iterable[str], home: str | None = None) -> bool:
    """Whether Claude Code's settings turn its sandbox on for a session in a project at
    one of `roots` (the local and shared files of each, then the user's)."""
    return deciding(roots, home)[0]


def deciding(roots: Iterable[str], home: str | None = None) -> tuple[bool, str | None]:
    """(on, the settings file that decides it, or None when none sets it)."""
    from ralphstate.agents import table

    hook_file = table.get("claude").hook_file
    tops = list(dict.fromkeys(os.path.abspath(r) for r in roots))
    for scope in SCOPES:
        for top in tops if scope != "user" else tops[:1]:
            path = hook_file_path(hook_file, scope, top, home)
            found = _switch(read_bounded(path))
            if found is not None:
                return found, path
    return False, None


def _switch(raw: bytes | None) -> bool | None:
    """The file's `sandbox.enabled` when it is true or false, else None."""
    if not raw or KEY not in raw:
        return None
    import orjson

    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    box = data.get("sandbox") if isinstance(data, dict) else None
    value = box.get("enabled") if isinstance(box, dict) else None
    return value if isinstance(value, bool) else None
