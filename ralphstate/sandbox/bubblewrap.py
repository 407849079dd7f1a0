"""Any agent on Linux, inside bubblewrap (Debian's `bubblewrap`, the `bwrap` program).

The system is read-only (`/` bound read-only), `/dev` and `/proc` are the sandbox's
own, the hidden roots (`reach.HIDDEN`, the home) are empty and private (writes there
vanish with the iteration), and from them only what the agent's tools need comes back,
read-only. The project is writable; inside it the protected paths are read-only again,
and so is ralphstate's per-user store wherever it is. The agent sees its own processes
only (a PID namespace of its own) and dies with the run. The network stays on unless
the run asks for none (`offline`): the agent needs its API. It holds no capability, as
root too, and gets a user namespace of its own where the kernel allows one
(storage/system/bwrapargs.py, shared with the confined checks).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.sandbox.reach import Reach
from ralphstate.storage.system import bwrapargs, children

PROGRAM = "bwrap"
# How long the trial start before the first iteration may take.
PROBE_SECONDS = 30.0
# Set inside: Claude Code reads it as a deliberate sandbox (its rule for root).
INSIDE = {"CLAUDE_CODE_BUBBLEWRAP": "1", "RALPHSTATE_SANDBOX": "bwrap"}


def find() -> str | None:
    """bwrap's path on PATH, or None."""
    return shutil.which(PROGRAM)


def layout(where: Reach, offline: bool, userns: bool = True) -> list[str]:
    """bwrap's options for `where`, in the order the mounts must be made, then the
    privileges taken away (a user namespace of its own when `userns`)."""
    args = bwrapargs.mounts(
        where.hidden, where.shown, where.writable, [*where.protected, *where.store]
    )
    for secret in where.secret:  # inside the store: mounted over once it is bound
        args += ["--tmpfs", str(secret)]
    args += [*bwrapargs.privileges(userns), "--unshare-ipc", "--chdir", str(where.root)]
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


def command(
    program: str, where: Reach, offline: bool, argv: list[str], userns: bool = True
) -> list[str]:
    """`argv` as it runs inside the sandbox."""
    return [program, *layout(where, offline, userns), *extra_files(argv, where), "--", *argv]


def probe(program: str, where: Reach, offline: bool) -> tuple[bool, str | None]:
    """Start the sandbox once with `true` inside, with a user namespace of its own, then,
    where the kernel allows none, without: (whether the user namespace was had, None),
    or (False, why not in bwrap's own words)."""
    why: str | None = None
    for userns in (True, False):
        argv = command(program, where, offline, ["true"], userns)
        try:
            done = children.run(argv, cwd=where.root, timeout=PROBE_SECONDS, limit=4096)
        except OSError as exc:
            return False, exc.strerror or type(exc).__name__
        if done.code == 0:
            return userns, None
        if done.code is None:
            return False, f"it did not start within {PROBE_SECONDS:g}s"
        words = done.err.decode("utf-8", "replace").strip().splitlines()
        why = words[-1] if words else f"bwrap exited with {done.code}"
    return False, why


def ready(where: Reach, offline: bool) -> tuple[str, bool]:
    """bwrap's path, and whether a user namespace is had, once a trial start worked;
    RalphstateError in one sentence if not."""
    program = find()
    if program is None:
        raise RalphstateError(
            "the bubblewrap sandbox cannot start: `bwrap` is not on PATH (Debian and"
            " Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap); the run"
            " does not go on unconfined unless you give --no-sandbox."
        )
    userns, why = probe(program, where, offline)
    if why is not None:
        raise RalphstateError(
            f"the bubblewrap sandbox cannot start ({why}); the run does not go on"
            " unconfined (`ralphstate doctor` says which sandboxes work here)."
        )
    return program, userns


def works(offline: bool = False) -> tuple[bool, str]:
    """Whether bubblewrap starts on this machine, for `doctor`: a bare sandbox, not a
    project's (with `offline`, its network unshared too)."""
    program = find()
    if program is None:
        return False, "`bwrap` is not on PATH (Debian and Ubuntu: apt-get install bubblewrap)"
    bare = Reach(root=Path("/"), hidden=bwrapargs.socket_dirs())
    userns, why = probe(program, bare, offline=offline)
    if why is not None:
        return False, why
    users = "a user namespace" if userns else "no user namespace"
    return True, f"{program}, no capability, {users}"
