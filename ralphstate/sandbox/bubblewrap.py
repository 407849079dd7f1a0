"""Any agent on Linux, inside bubblewrap (Debian's `bubblewrap`, the `bwrap` program).

The system is read-only (`/` bound read-only), `/dev` and `/proc` are the sandbox's
own, the hidden roots (`reach.HIDDEN`, the home) are empty and private (writes there
vanish with the iteration), and from them only what the agent's tools need comes back,
read-only. The project is writable; inside it the protected paths are read-only again,
and so is ralphstate's per-user store wherever it is. The agent sees its own processes
only (a PID namespace of its own) and dies with the run. The network stays on unless
the run asks for none (`offline`): the agent needs its API.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.sandbox.reach import Reach
from ralphstate.storage.system import children

PROGRAM = "bwrap"
# How long the trial start before the first iteration may take.
PROBE_SECONDS = 30.0
# Set inside: Claude Code reads it as a deliberate sandbox (its rule for root).
INSIDE = {"CLAUDE_CODE_BUBBLEWRAP": "1", "RALPHSTATE_SANDBOX": "bwrap"}


def find() -> str | None:
    """bwrap's path on PATH, or None."""
    return shutil.which(PROGRAM)


def layout(where: Reach, offline: bool) -> list[str]:
    """bwrap's options for `where`, in the order the mounts must be made."""
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for hidden in where.hidden:
        args += ["--tmpfs", str(hidden)]
    for shown in where.shown:
        args += ["--ro-bind", str(shown), str(shown)]
    for writable in where.writable:
        args += ["--bind", str(writable), str(writable)]
    for path in [*where.protected, *where.store]:
        args += ["--ro-bind", str(path), str(path)]
    for secret in where.secret:  # inside the store: mounted over once it is bound
        args += ["--tmpfs", str(secret)]
    args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--chdir", str(where.root)]
    if offline:
        args.append("--unshare-net")
    return args


def extra_files(argv: list[str], where: Reach) -> list[str]:
    """Files the command names that a hidden root would hide (the prompt file), shown
    read-only for this command only."""
    args: list[str] = []
    for arg in argv[1:]:
        if not Path(arg).is_absolute() or not Path(arg).is_file():
            continue
        real = os.path.realpath(arg)
        hidden = any(os.path.commonpath([real, str(h)]) == str(h) for h in where.hidden)
        if hidden:
            args += ["--ro-bind", real, arg]
    return args


def command(program: str, where: Reach, offline: bool, argv: list[str]) -> list[str]:
    """`argv` as it runs inside the sandbox."""
    return [program, *layout(where, offline), *extra_files(argv, where), "--", *argv]


def probe(program: str, where: Reach, offline: bool) -> str | None:
    """Start the sandbox once with `true` inside; None when it works, else why not
    (bwrap's own words)."""
    argv = command(program, where, offline, ["true"])
    try:
        done = children.run(argv, cwd=where.root, timeout=PROBE_SECONDS, limit=4096)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if done.code == 0:
        return None
    if done.code is None:
        return f"it did not start within {PROBE_SECONDS:g}s"
    words = done.err.decode("utf-8", "replace").strip().splitlines()
    return words[-1] if words else f"bwrap exited with {done.code}"


def ready(where: Reach, offline: bool) -> str:
    """bwrap's path once a trial start worked; RalphstateError in one sentence if not."""
    program = find()
    if program is None:
        raise RalphstateError(
            "the bubblewrap sandbox cannot start: `bwrap` is not on PATH (Debian and"
            " Ubuntu: apt-get install bubblewrap); the run does not go on unconfined."
        )
    why = probe(program, where, offline)
    if why is not None:
        raise RalphstateError(
            f"the bubblewrap sandbox cannot start ({why}); the run does not go on"
            " unconfined (`ralphstate doctor` says which sandboxes work here)."
        )
    return program


def works() -> tuple[bool, str]:
    """Whether bubblewrap starts on this machine, for `doctor`: a bare sandbox, not a
    project's."""
    program = find()
    if program is None:
        return False, "`bwrap` is not on PATH (Debian and Ubuntu: apt-get install bubblewrap)"
    bare = Reach(root=Path("/"))
    why = probe(program, bare, offline=False)
    return (True, program) if why is None else (False, why)
