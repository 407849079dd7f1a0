"""Which of ralphstate's hooks Claude Code's settings files already run: the launcher
(`plugin_launcher.py`) asks before it hands a hook over, so that a hook `ralphstate
install` also put into one of them stays silent, and one stop is never judged twice.

Imported only for a hook that may have a loop, never on the no-loop path (`launch.py`
says why that path imports nothing it can do without). Like the rest of the launcher,
standard library only and Python 3.8 syntax. The hooks and their Claude Code events
are the launcher's `EVENTS`, passed in, so this module imports nothing of the
launcher's and the two import each other one way only.
"""

import os

from plugin_env import loads

TYPE_CHECKING = False  # `typing` is not imported at run time
if TYPE_CHECKING:
    import re

# The largest settings file read (ralphstate.core.limits.MAX_SETTINGS_BYTES).
MAX_SETTINGS_BYTES = 1024 * 1024
# The same recognition `ralphstate install` uses for its own settings entries
# (ralphstate.install.command): the interpreter importing the hook (`-I -c ...`), the
# hook script by its path (development builds), and the forms older versions wrote (the
# console script, `python -m ralphstate hook`), then one of the launcher's EVENTS (see
# `own_pattern`). Each form names ralphstate, so a command that does not is none of them
# and compiles no pattern.
FORMS = (
    (
        r"""(?:^|\s)-c\s+["']?from\s+ralphstate\.hooks\.entry\s+"""
        r"""import\s+main\s*;\s*main\(\)["']?\s+"""
    ),
    r"""(?:^|[\s"'/\\])ralphstate[/\\]hooks[/\\]__main__\.py["']?\s+""",
    r"""(?:^|[\s"'/\\])ralphstate(?:\.exe)?["']?\s+hook\s+""",
    r"(?:^|\s)-m\s+ralphstate\s+hook\s+",
)
_compiled: "dict[str, re.Pattern[str]]" = {}


def own_pattern(events: "dict[str, str]") -> str:
    """Each of FORMS followed by one of the hooks `events` names (the launcher's EVENTS),
    as a whole word: the hook is the pattern's group."""
    return "|".join(prefix + "(" + "|".join(events) + r")(?=[\s\"';]|$)" for prefix in FORMS)


def own(events: "dict[str, str]") -> "re.Pattern[str]":
    """`own_pattern(events)`, compiled once, ignoring case as `ralphstate install` does."""
    pattern = own_pattern(events)
    if pattern not in _compiled:
        import re

        _compiled[pattern] = re.compile(pattern, re.IGNORECASE)
    return _compiled[pattern]


def installed(event: str, events: "dict[str, str]", data: bytes, project: "str | None") -> bool:
    """True when a Claude Code settings file already runs `ralphstate hook EVENT`: the
    project's (`project`, else the hook input's `cwd`) or the person's."""
    project = project or _input_cwd(data)
    config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    files = [os.path.join(config, "settings.json")]
    if project:
        files[:0] = [
            os.path.join(project, ".claude", "settings.json"),
            os.path.join(project, ".claude", "settings.local.json"),
        ]
    return any(event in own_events(path, events[event], events) for path in files)


def own_events(path: str, name: str, events: "dict[str, str]") -> "set[str]":
    """The ralphstate subcommands of `events` that `path` runs for Claude Code event
    `name`."""
    found: set[str] = set()
    try:
        raw = _read_settings(path)
        if len(raw) > MAX_SETTINGS_BYTES:  # ralphstate refuses such a file too
            return found
        groups = loads(raw.decode("utf-8-sig"))["hooks"][name]  # type: ignore[index]
    except Exception:  # noqa: BLE001 - missing or odd settings: nothing installed there
        return found
    for group in groups if isinstance(groups, list) else []:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler in handlers if isinstance(handlers, list) else []:
            command = handler.get("command") if isinstance(handler, dict) else None
            if not isinstance(command, str) or (
                # Every form names ralphstate (IGNORECASE folds only ASCII to ASCII).
                command.isascii() and "ralphstate" not in command.lower()
            ):
                continue
            match = own(events).search(command)
            if match:
                found.add(next(group for group in match.groups() if group).lower())
    return found


def _read_settings(path: str) -> bytes:
    """The first MAX_SETTINGS_BYTES + 1 bytes of a regular file; b"" for anything else (a
    link to a device or a pipe, which a clone can put in place of its settings: opened
    without waiting for a writer, and not read)."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        chunks = []
        left = MAX_SETTINGS_BYTES + 1
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _input_cwd(data: bytes) -> "str | None":
    try:
        cwd = loads(data.decode("utf-8")).get("cwd")  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001
        return None
    return cwd if isinstance(cwd, str) and cwd else None
