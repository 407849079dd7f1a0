"""Checks run confined (docs/explanation/proof.md, "Confined checks"): a check runs the
agent's code, so it runs where that code cannot reach the person's files, the per-user
store or the network.

    wrapped = confine.wrap("pytest -q", room=Path(top), cwd=Path(cwd), env=dict(os.environ))
    proc = children.start(wrapped.args, shell=wrapped.shell, env=wrapped.env, ...)
    ...                                      # wrapped.confined: whether it was
    wrapped.close()

On Linux the command runs inside bubblewrap (`confinemounts.layout` says what it sees):
the room (the clean room's worktree, or the project root when checks run in place) is
its only writable place; the rest of the system is read-only; `/tmp` is a private,
empty tmpfs (and TMPDIR points there); the homes and the other shared places are empty
tmpfs, from which only the check's toolchain comes back, read-only; the directories
above the room are masked, so no configuration file there is read; no network (a
network namespace of its own, only its own loopback); no capability, `no_new_privs`, a
new user namespace where the kernel allows one, a PID namespace and a session of its
own. On macOS the command runs under `sandbox-exec` with the profile of
`confinemounts.profile` (written, never run here). Elsewhere, or where neither starts,
the check runs as before and its result says it was not confined (`confined` False).

Whether bubblewrap starts is tried once per process, and a start that worked is kept
for the boot in the per-user state directory (`PROBE_FILE`), so a Stop hook pays the
trial once per boot. Only a success is kept: a file the agent could write can make a
check pay the trial again, never make it run unconfined.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ralphstate.storage.peruser import home
from ralphstate.storage.system import bwrapargs
from ralphstate.verify import confinemounts

# Where bubblewrap is looked for: system places only, never the caller's PATH (a `bwrap`
# the agent put first on PATH would run the check unconfined and say it was not).
BWRAP_PLACES = (
    "/usr/bin/bwrap",
    "/bin/bwrap",
    "/usr/local/bin/bwrap",
    "/run/current-system/sw/bin/bwrap",
)
SANDBOX_EXEC = "/usr/bin/sandbox-exec"
# The shell a check's command line runs in, as `subprocess` runs it with shell=True.
SHELL = "/bin/sh"
# The per-user file that keeps, for the boot, the bubblewrap start that worked.
PROBE_FILE = "confine-probe.json"
# The boot's id on Linux: a new one at every boot.
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# The per-user file whose presence runs checks unconfined: the person's switch.
OFF_FILE = "checks-unconfined"
# How much of the kept answer and of the boot id is read.
PROBE_FILE_BYTES = 4096
# The options that take the check's privileges away (shared with the run's sandbox):
# with `--unshare-user` first, and without it where the kernel allows no user namespace.
PRIVILEGES = bwrapargs.PRIVILEGES
USERNS = bwrapargs.USERNS

# This process's answer: None not asked yet; () bubblewrap cannot start; else its path
# and whether a user namespace is had.
_found: tuple[str, bool] | tuple[()] | None = None


@dataclass
class Wrapped:
    """A check's command as it starts: `args` (a command line when `shell`), `env`, and
    whether it runs confined (`why`: why not, when it does not)."""

    args: str | list[str]
    shell: bool
    env: dict[str, str] | None
    confined: bool
    why: str | None = None
    scratch: list[Path] = field(default_factory=list)

    def close(self) -> None:
        """Remove what the confinement made for the check (macOS's private temp dir)."""
        for path in self.scratch:
            shutil.rmtree(path, ignore_errors=True)


def wrap(command: str, room: Path, cwd: Path, env: Mapping[str, str] | None = None) -> Wrapped:
    """`command` (a shell command line) as it runs confined to `room`, in `cwd` (inside
    the room), with `env` (None: this process's); as before, and saying so, where no
    confinement starts."""
    base = dict(os.environ if env is None else env)
    if switched_off():
        return Wrapped(command, True, None if env is None else base, False, OFF)
    if sys.platform.startswith("linux"):
        found = bubblewrap()
        if not found:
            return Wrapped(command, True, None if env is None else base, False, NO_BWRAP)
        program, userns = found
        base["TMPDIR"] = "/tmp"
        mounts = confinemounts.layout(room, cwd, base, store_dirs(), command)
        options = [*mounts, *bwrapargs.privileges(userns), "--unshare-net"]
        argv = [program, *options, "--chdir", str(cwd), "--", SHELL, "-c", command]
        return Wrapped(argv, False, base, True)
    if sys.platform == "darwin" and Path(SANDBOX_EXEC).is_file():
        return _seatbelt(command, room, base)
    return Wrapped(command, True, None if env is None else base, False, NO_PLATFORM)


# Why a check ran unconfined, in the words its result gives.
NO_BWRAP = "bubblewrap cannot start here"
NO_PLATFORM = f"no confinement for checks on {sys.platform}"
OFF = f"the person switched confinement off ({OFF_FILE} in ralphstate's data directory)"


def switch(off: bool) -> None:
    """Write the person's switch (`off`) or remove it; OSError when it cannot be."""
    path = home.data_dir() / OFF_FILE
    if off:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the checks run unconfined: ralphstate config checks-confined on\n")
    else:
        path.unlink(missing_ok=True)


def switched_off() -> bool:
    """The person's switch: a file `OFF_FILE` in the per-user data directory, where the
    trust store is (a sandboxed agent cannot write there, a confined check cannot see
    it). `ralphstate config checks-confined off` writes it, the person's alone."""
    try:
        return (home.data_dir() / OFF_FILE).is_file()
    except home.NoHome:
        return False


def _seatbelt(command: str, room: Path, env: dict[str, str]) -> Wrapped:
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="ralphstate-check-"))
    env["TMPDIR"] = str(scratch)
    text = confinemounts.profile(room, scratch, env, store_dirs(), command)
    argv = [SANDBOX_EXEC, "-p", text, SHELL, "-c", command]
    return Wrapped(argv, False, env, True, scratch=[scratch])


def store_dirs() -> list[Path]:
    """ralphstate's per-user directories (all of `$RALPHSTATE_HOME` when it is set)."""
    override = os.environ.get(home.ENV_HOME)
    if override:
        return [Path(override).expanduser()]
    try:
        return [home.state_dir(), home.log_dir(), home.data_dir()]
    except home.NoHome:
        return []


def bubblewrap() -> tuple[str, bool] | tuple[()]:
    """bubblewrap's path and whether it gets a user namespace, once it started here;
    () when it does not. Asked once per process, kept for the boot when it worked."""
    global _found
    if _found is None:
        found = _kept()  # () here must not be seen by another thread before the probe
        if not found:
            found = _probe()
            if found:
                _keep(found)
        _found = found
    return _found


def _program() -> str | None:
    for place in BWRAP_PLACES:
        if os.access(place, os.X_OK):
            return place
    return None


def _probe() -> tuple[str, bool] | tuple[()]:
    program = _program()
    if program is None:
        return ()
    for userns in (True, False):
        if _starts(program, userns):
            return program, userns
    return ()


def _starts(program: str, userns: bool) -> bool:
    """A trial start of the confinement the checks get, with a bare layout."""
    options = [*bwrapargs.mounts([Path("/tmp")], [], [], []), "--unshare-net"]
    return bwrapargs.starts(program, userns, options)[0]


def _identity(program: str) -> list[object] | None:
    """What the kept answer is valid for: the boot and the bwrap program as it is."""
    try:
        with Path(BOOT_ID).open("rb") as handle:
            boot = handle.read(PROBE_FILE_BYTES).decode("ascii", "replace").strip()
        info = Path(program).stat()
    except OSError:
        return None
    return [boot, program, info.st_mtime_ns, info.st_size]


def _kept() -> tuple[str, bool] | tuple[()]:
    try:
        path = home.state_dir() / PROBE_FILE
        with path.open("rb") as handle:
            data = json.loads(handle.read(PROBE_FILE_BYTES))
        program, userns, identity = data["program"], data["userns"], data["identity"]
    except (OSError, ValueError, KeyError, TypeError, home.NoHome):
        return ()
    if not isinstance(program, str) or program not in BWRAP_PLACES:
        return ()
    if identity != _identity(program) or not isinstance(userns, bool):
        return ()
    return program, userns


def _keep(found: tuple[str, bool]) -> None:
    identity = _identity(found[0])
    if identity is None:
        return
    data = {"program": found[0], "userns": found[1], "identity": identity}
    with contextlib.suppress(OSError, home.NoHome):
        path = home.state_dir() / PROBE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f"{PROBE_FILE}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(data), encoding="utf-8")
        temp.replace(path)
