"""bubblewrap's arguments that every confinement shares: the run's agent
(sandbox/bubblewrap.py) and the checks (verify/confine.py) build their command lines
from these, so that both keep the same privileges and hide the same places.

- `PRIVILEGES` (and `USERNS` where the kernel allows a user namespace): no capability
  at all, as root too (`--cap-drop ALL`), a session of its own (no `TIOCSTI` into the
  person's terminal), a PID namespace, death with the parent. bwrap itself sets
  `no_new_privs`, so nothing inside gains a privilege by a setuid program.
- `SOCKET_DIRS`: the runtime directories that hold the host's socket files (a container
  engine's `/run/docker.sock`, the session bus): hidden in every mode. `/var/run` is a
  link to `/run` on every current system; where it is a directory, it is hidden too.
- `mounts`: the mounts of a layout, in the order bwrap must make them.
- `starts`: a trial start, `true` inside, with or without a user namespace.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ralphstate.storage.system import children

PRIVILEGES = ["--cap-drop", "ALL", "--new-session", "--die-with-parent", "--unshare-pid"]
USERNS = "--unshare-user"
SOCKET_DIRS = ("/run", "/var/run")
# The files of /run a network needs (the resolver's configuration where
# /etc/resolv.conf links into /run), shown again read-only when the network is on.
RESOLVER = "/etc/resolv.conf"
# How long a trial start may take.
TRIAL_SECONDS = 10.0


def privileges(userns: bool) -> list[str]:
    """The options that take every privilege away; a new user namespace when `userns`."""
    return [*PRIVILEGES, *([USERNS] if userns else [])]


def socket_dirs() -> list[Path]:
    """The socket directories to hide, real and existing (a `/var/run` link to `/run`
    is `/run`)."""
    found: dict[str, Path] = {}
    for place in SOCKET_DIRS:
        real = Path(os.path.realpath(place))
        if real.is_dir():
            found.setdefault(str(real), real)
    return list(found.values())


def resolver() -> list[Path]:
    """The resolver's file when it lies in a hidden socket directory (systemd-resolved's
    stub), so that names still resolve with the network on."""
    real = Path(os.path.realpath(RESOLVER))
    hidden = socket_dirs()
    inside = any(real == h or h in real.parents for h in hidden)
    return [real] if inside and real.is_file() else []


def mounts(
    hidden: Iterable[Path],
    shown: Iterable[Path],
    writable: Iterable[Path],
    readonly: Iterable[Path],
) -> list[str]:
    """The system read-only, `/dev` and `/proc` the sandbox's own, `hidden` empty tmpfs,
    then `shown` read-only, `writable` read-write, and `readonly` read-only again."""
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in hidden:
        args += ["--tmpfs", str(path)]
    for path in shown:
        args += ["--ro-bind", str(path), str(path)]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    for path in readonly:
        args += ["--ro-bind", str(path), str(path)]
    return args


def starts(program: str, userns: bool, options: list[str] | None = None) -> tuple[bool, str]:
    """A trial start with `true` inside: whether it worked, and bwrap's last words (or
    why it did not start) when not."""
    argv = [program, *(options or mounts([Path("/tmp")], [], [], []))]
    argv += [*privileges(userns), "--", "true"]
    try:
        done = children.run(argv, cwd="/", timeout=TRIAL_SECONDS, limit=4096)
    except OSError as exc:
        return False, exc.strerror or type(exc).__name__
    if done.code == 0:
        return True, ""
    if done.code is None:
        return False, f"it did not start within {TRIAL_SECONDS:g}s"
    words = done.err.decode("utf-8", "replace").strip().splitlines()
    return False, words[-1] if words else f"bwrap exited with {done.code}"
