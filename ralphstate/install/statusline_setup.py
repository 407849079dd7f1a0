"""`ralphstate install --statusline`: put the loop into Claude Code's status line.

Claude Code has one status line command per settings file,

    {"statusLine": {"type": "command", "command": "...", "padding": 0}}

(a plugin cannot set it). Ours is this interpreter importing `hooks.statusline` in
isolated mode, like the hooks (`install.command`), or the console script when isolated
mode cannot import it. When the file already has a status line of the person's, ours
wraps it: their whole `statusLine` object rides along in the command (`--wrap`, JSON
in base64), their command runs first and our line is added under its output, their
other keys (`padding`) stay; `--uninstall` puts their object back exactly. Installing
again replaces our command and keeps what it wraps.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from ralphstate.core.errors import RalphstateError
from ralphstate.core.wrapping import decode, encode
from ralphstate.install import settings
from ralphstate.install.command import console_script, imports_isolated, quote
from ralphstate.install.settings import InstallResult

CODE = "from ralphstate.hooks.statusline import main; main()"
KEY = "statusLine"
_OURS = re.compile(
    r"""(-c\s+["']?from\s+ralphstate\.hooks\.statusline\s+import\s+main"""
    r"""|(^|[\s"'/\\])ralphstate(\.exe)?["']?\s+statusline(\s|$))"""
)
_WRAP = re.compile(r"\s--wrap\s+([A-Za-z0-9+/=]+)\s*$")


def command(wrap: dict[str, Any] | None = None) -> str:
    """The status line command of this installation, wrapping `wrap` when given."""
    python = str(Path(sys.executable).absolute()) if sys.executable else ""
    if python and imports_isolated(python):
        line = f'{quote(python)} -I -c "{CODE}"'
    else:
        script = console_script()
        if script is None:
            raise RalphstateError(
                "Cannot tell how to run ralphstate's status line here; install ralphstate"
                " into a virtual environment or with pipx and run it from there."
            )
        line = f"{quote(script)} statusline"
    return line + (f" --wrap {encode(wrap)}" if wrap is not None else "")


def is_ours(value: object) -> bool:
    """Whether a `statusLine` value is ralphstate's (wrapping another or not)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("command"), str)
        and bool(_OURS.search(value["command"]))
    )


def wrapped(value: dict[str, Any]) -> dict[str, Any] | None:
    """The person's `statusLine` object that ours wraps, None when it wraps none."""
    found = _WRAP.search(str(value.get("command", "")))
    return decode(found.group(1)) if found else None


def install(path: Path, *, uninstall: bool = False) -> InstallResult:
    """Set (or remove) ralphstate's status line in the settings file `path`."""

    def edit(data: dict[str, Any]) -> list[str]:
        current = data.get(KEY)
        if current is not None and not isinstance(current, dict):
            raise RalphstateError(f'"{KEY}" in {path} is not an object; nothing was changed.')
        if uninstall:
            if not is_ours(current):
                return ["no ralphstate status line here"]
            assert current is not None
            original = wrapped(current)
            if original is None:
                del data[KEY]
                return ["removed the ralphstate status line"]
            data[KEY] = original
            return ["restored your own status line"]
        if is_ours(current):
            assert current is not None
            original = wrapped(current)
            new = {**current, "command": command(original)}
            data[KEY] = new
            return ["status line: ralphstate" + (" after your own" if original else "")]
        if current is None:
            data[KEY] = {"type": "command", "command": command(), "padding": 0}
            return ["status line: ralphstate"]
        data[KEY] = {**current, "type": "command", "command": command(current)}
        return ["status line: your own, then ralphstate's line under it"]

    return settings.update(path, settings.parse, edit)
