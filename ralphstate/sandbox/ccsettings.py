"""Claude Code's own sandbox for `ralphstate run --sandbox claude` and for sessions
(`install --sandbox`).

The settings turn the client's sandbox on and make it refuse to run unsandboxed
(`failIfUnavailable`; `allowUnsandboxedCommands` false, so the Bash tool has no way
out), and deny writes to the protected paths twice: to the sandboxed commands
(`sandbox.filesystem.denyWrite`, absolute paths) and to the file tools (`Edit` deny
rules, which cover every file-editing tool; their absolute paths start with `//`).
Commands that run in the sandbox need no prompt (`autoAllowBashIfSandboxed`), so the
agent's `ralphstate`, git and the test runner work.

For a run the settings go to a file of the run's own, outside the project (`--settings`),
and the client is told to read the project's and the local settings only
(`--setting-sources project,local`): the person's user-level hooks and plugins do not
join the run, unless the agent command chooses its own `--setting-sources`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from ralphstate.sandbox.reach import Reach
from ralphstate.storage.peruser import home

SOURCES = "project,local"
# Claude Code's sandbox needs these programs on Linux (the client's own words:
# "Linux needs bubblewrap and socat").
LINUX_NEEDS = ("bwrap", "socat")


def settings(where: Reach, also: list[Path] | None = None) -> dict[str, Any]:
    """The sandbox settings that keep the agent from the protected paths (and from
    `also`: the settings file itself)."""
    paths = [*where.protected, *where.store, *(also or [])]
    denied = [str(p) for p in paths]
    # `Edit` rules cover every file-editing tool; a directory's rule names what is in it.
    rules = [f"Edit(/{p}/**)" if p.is_dir() else f"Edit(/{p})" for p in paths]
    return {
        "sandbox": {
            "enabled": True,
            "failIfUnavailable": True,
            "allowUnsandboxedCommands": False,
            "autoAllowBashIfSandboxed": True,
            "filesystem": {"denyWrite": denied},
        },
        "permissions": {"deny": rules},
    }


def settings_file(where: Reach) -> Path:
    """The run's settings file, in the per-user state directory (protected itself),
    named after the project."""
    key = hashlib.sha256(str(where.root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return home.state_dir() / "sandbox" / f"claude-{key}.json"


def write(where: Reach) -> Path:
    """Write the run's settings file; its path. OSError when it cannot be written."""
    path = settings_file(where)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    data = settings(where, also=[path])
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    temp.chmod(0o644)
    temp.replace(path)
    return path


def command(argv: list[str], path: Path) -> list[str]:
    """The agent command with the run's settings, and the project's and local settings
    only, unless it names its own sources."""
    more = ["--settings", str(path)]
    if not any(a == "--setting-sources" or a.startswith("--setting-sources=") for a in argv):
        more += ["--setting-sources", SOURCES]
    return [argv[0], *more, *argv[1:]]


def is_claude(argv: list[str]) -> bool:
    return Path(argv[0]).name.lower().removesuffix(".exe") == "claude"


def missing() -> str | None:
    """What Claude Code's sandbox lacks on this machine, or None."""
    import shutil

    if sys.platform == "darwin":
        return None if shutil.which("sandbox-exec") else "sandbox-exec is not on PATH"
    if not sys.platform.startswith("linux"):
        return f"Claude Code has no command sandbox on {sys.platform}"
    lacking = [name for name in LINUX_NEEDS if shutil.which(name) is None]
    if lacking:
        return (
            f"{' and '.join(lacking)} {'is' if len(lacking) == 1 else 'are'} not on PATH"
            " (Debian and Ubuntu: apt-get install bubblewrap socat)"
        )
    return None
