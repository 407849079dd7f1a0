"""macOS: `sandbox-exec` with a profile equivalent to bubblewrap's layout.

Written, never run here: the tests run on Linux, so this profile is untested (docs/how-to/
sandbox.md says so). It allows everything but file writes and reads of the hidden
roots, then allows writes to the project (minus the protected paths and the per-user
store), to the system's temporary directories and to `/dev`; reads of the hidden roots
come back for what the agent's tools need. The last matching rule wins in a profile, so
the denials of the protected paths come last.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.sandbox.reach import Reach
from ralphstate.storage.system import children

PROGRAM = "sandbox-exec"
PROBE_SECONDS = 30.0
INSIDE = {"RALPHSTATE_SANDBOX": "sandbox-exec"}


def _quoted(path: object) -> str:
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def profile(where: Reach, offline: bool) -> str:
    """The sandbox profile (SBPL) for `where`."""
    lines = ["(version 1)", "(allow default)", "(deny file-write*)"]
    lines += [f"(deny file-read* (subpath {_quoted(p)}))" for p in where.hidden]
    lines += [f"(allow file-read* (subpath {_quoted(p)}))" for p in where.shown]
    writable = [*where.writable, "/private/tmp", "/private/var/folders", "/dev"]
    lines += [f"(allow file-read* file-write* (subpath {_quoted(p)}))" for p in writable]
    lines += [f"(deny file-write* (subpath {_quoted(p)}))" for p in where.protected]
    lines += [f"(deny file-write* (subpath {_quoted(p)}))" for p in where.store]
    lines += [f"(allow file-read* (subpath {_quoted(p)}))" for p in where.store]
    if offline:
        lines.append("(deny network*)")
    return "\n".join(lines) + "\n"


def command(where: Reach, offline: bool, argv: list[str]) -> list[str]:
    return [PROGRAM, "-p", profile(where, offline), *argv]


def ready() -> str:
    found = shutil.which(PROGRAM)
    if found is None:
        raise RalphstateError(
            "the sandbox-exec sandbox cannot start: `sandbox-exec` is not on PATH (it comes"
            " with macOS); the run does not go on unconfined."
        )
    return found


def works() -> tuple[bool, str]:
    """Whether sandbox-exec starts here, for `doctor`: `true` run once inside the
    profile of a bare sandbox (the project `/`, nothing protected); (True, its path) or
    (False, why not in its own words)."""
    found = shutil.which(PROGRAM)
    if found is None:
        return False, f"`{PROGRAM}` is not on PATH (it comes with macOS)"
    argv = [found, "-p", profile(Reach(root=Path("/")), offline=False), "/usr/bin/true"]
    try:
        done = children.run(argv, cwd="/", timeout=PROBE_SECONDS, limit=4096)
    except OSError as exc:
        return False, exc.strerror or type(exc).__name__
    if done.code == 0:
        return True, found
    if done.code is None:
        return False, f"it did not start within {PROBE_SECONDS:g}s"
    words = done.err.decode("utf-8", "replace").strip().splitlines()
    return False, words[-1] if words else f"{PROGRAM} exited with {done.code}"
