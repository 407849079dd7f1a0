"""What a confined check sees (verify/confine.py): bubblewrap's mounts on Linux
(`layout`), the equivalent `sandbox-exec` profile on macOS (`profile`), and the
toolchain that comes back read-only into the places they hide (`toolchain`).

Hidden (empty): the homes and the shared scratch places (`HIDDEN`), the person's home
wherever it is, and the directories above the room (`above`: from the first directory
under `/` that is not the system's, so no configuration file a runner looks for above
the room is found). Shown again from them, read-only: the check's toolchain, found on
its PATH, conservatively (`toolchain`): for a directory on PATH, its prefix's `bin`,
`lib`, `lib64`, `include` and `libexec` and a venv's `pyvenv.cfg` (never the prefix
whole, so `~/.local/share` and the like stay hidden), and the same for the interpreter a
venv is made from; a version manager's own directory under the home (`~/.pyenv` for
`~/.pyenv/shims`) whole, since its shims start its program and read its versions (what
it holds besides, a `~/.cargo/credentials.toml` say, is readable by the check, which has
no network). Never shown, even inside what is: ralphstate's per-user store. In
the room itself, the loop's own directory (`.loop`) and git's directory are read-only,
and so is a toolchain that lies in it (a project's `.venv`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

# Where other people's, other projects' and other programs' files live, and the runtime
# directories that hold sockets: hidden.
HIDDEN = ("/home", "/root", "/tmp", "/var/tmp", "/mnt", "/media", "/run", "/srv")
# The system's own top directories: the room's parents are masked from the first
# directory below these (a room in /opt/work/x masks /opt/work, not /opt).
SYSTEM = frozenset(
    {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "nix", "gnu"}
    | {"snap", "var", "proc", "sys", "dev", "boot"}
)
# What of a toolchain's prefix comes back: enough to run it, nothing of its data.
PREFIX_PARTS = ("bin", "lib", "lib64", "include", "libexec", "pyvenv.cfg")
# The directories under a home that many programs share: never shown whole.
SHARED_BASES = frozenset({".local", ".config", ".cache"})
# A venv's configuration file, and how much of it is read.
PYVENV = "pyvenv.cfg"
PYVENV_BYTES = 64 * 1024
# macOS's places that a profile hides, besides the home.
MAC_HIDDEN = ("/Users", "/Volumes", "/private/tmp", "/private/var/folders", "/private/var/tmp")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _is(kind: str, path: Path) -> bool:
    """`path.is_dir()` or `path.is_file()`, False where the user may not look (a PATH
    entry in a directory they cannot enter is left out, never a traceback)."""
    try:
        return bool(getattr(path, kind)())
    except OSError:
        return False


def _inside(path: Path, top: Path) -> bool:
    inner, outer = str(path), str(top)
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """`paths` without those inside another, parents first."""
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: (len(p.parts), str(p))):
        if not any(_inside(path, k) for k in kept):
            kept.append(path)
    return kept


def above(room: Path) -> Path | None:
    """The directory masked above the room: its first ancestor below `/` that is not
    the system's (one level further down under a system directory), or None."""
    parts = room.parts
    depth = 3 if len(parts) > 1 and parts[1] in SYSTEM else 2
    if len(parts) <= depth:
        return None
    return Path(*parts[:depth])


def user_home(env: Mapping[str, str]) -> Path | None:
    found = env.get("HOME") or os.environ.get("HOME") or ""
    path = Path(found)
    return _real(path) if path.is_absolute() and _real(path) != Path("/") else None


def masks(room: Path, env: Mapping[str, str], mac: bool = False) -> list[Path]:
    """The hidden roots of a check in `room`, parents first."""
    places = [Path(p) for p in (MAC_HIDDEN if mac else HIDDEN)]
    found = [_real(p) for p in places if mac or p.is_dir()]  # a rule on nothing is harmless
    where = user_home(env)
    if where is not None and (mac or where.is_dir()):
        found.append(where)
    top = above(room)
    if top is not None:
        found.append(top)
    return _outermost(found)


def _manager(directory: Path, home: Path | None) -> Path | None:
    """The version manager's own directory a PATH entry under a home (the person's,
    root's or another user's in /home) belongs to
    (`~/.pyenv` for `~/.pyenv/shims`, `~/.nvm` for `~/.nvm/versions/node/v22/bin`): a
    shim starts its manager's program and reads its versions, so the whole directory
    comes back, read-only. Never one of the shared bases (`~/.local`, `~/.config`,
    `~/.cache`), which hold every program's data."""
    homes = [h for h in (home, Path("/root")) if h is not None]
    homes += [Path("/home", directory.parts[2])] if directory.parts[:2] == ("/", "home") else []
    home = next((h for h in homes if _inside(directory, h) and directory != h), None)
    if home is None or len(directory.relative_to(home).parts) < 2:
        return None
    top = home / directory.relative_to(home).parts[0]
    if not top.name.startswith(".") or top.name in SHARED_BASES or top == directory:
        return None
    return top


def _prefix(directory: Path) -> list[Path]:
    """What of `directory`'s prefix comes back: the prefix's parts when it is a `bin` of
    one, else the directory alone."""
    parent = directory.parent
    if directory.name != "bin" or not ((parent / PYVENV).is_file() or (parent / "lib").is_dir()):
        return [directory]
    return [parent / part for part in PREFIX_PARTS if (parent / part).exists()]


def _venv_home(directory: Path) -> list[Path]:
    """The interpreter a venv whose `bin` is `directory` is made from, and where the
    venv's `python` links to."""
    found: list[Path] = []
    with_cfg = directory.parent / PYVENV
    try:
        with with_cfg.open("rb") as handle:
            text = handle.read(PYVENV_BYTES).decode("utf-8", "replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and Path(value.strip()).is_absolute():
            found.append(_real(Path(value.strip())))
    python = directory / "python"
    if python.is_symlink():
        found.append(_real(python).parent)
    return found


def programs(command: str) -> list[Path]:
    """The directories of the programs a command line names by absolute path (`"/x/.venv/
    bin/python" -m pytest`), each as named and as its links lead."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found: list[Path] = []
    for word in words:
        path = Path(word)
        if path.is_absolute() and _is("is_file", path) and os.access(path, os.X_OK):
            found += [path.parent, _real(path).parent]
    return found


def toolchain(
    env: Mapping[str, str], hidden: list[Path], room: Path, command: str = ""
) -> list[Path]:
    """The directories of the check's toolchain (on its PATH, or named by its command)
    that a hidden root or the room holds, to be shown read-only, parents first; never
    one that holds a hidden root, the home or the room."""
    entries = [Path(p) for p in env.get("PATH", "").split(os.pathsep) if p]
    entries += programs(command)
    dirs = [_real(p) for p in entries if p.is_absolute() and _is("is_dir", p)]
    places = [*hidden, room]
    where = user_home(env)
    wanted: list[Path] = []
    for directory in dirs:
        if not any(_inside(directory, h) for h in places):
            continue
        manager = _manager(directory, where)
        wanted += [manager] if manager is not None else _prefix(directory)
        wanted += [p for home in _venv_home(directory) for p in _prefix(home)]
    keep = [p for p in wanted if any(_inside(p, h) for h in places)]
    keep = [p for p in keep if not any(_inside(h, p) for h in places)]
    keep = [p for p in keep if where is None or not _inside(where, p)]
    return _outermost(keep)


def _visible(path: Path, hidden: list[Path], shown: list[Path]) -> bool:
    if any(_inside(path, s) for s in shown):
        return True
    return not any(_inside(path, h) for h in hidden)


def layout(
    room: Path, cwd: Path, env: Mapping[str, str], store: list[Path], command: str = ""
) -> list[str]:
    """bwrap's mounts for a check in `room` (its working directory `cwd`), in the order
    they must be made; the privileges and namespaces are verify/confine.py's."""
    room = _real(room)
    hidden = masks(room, env)
    tools = toolchain(env, hidden, room, command)
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in hidden:
        args += ["--tmpfs", str(path)]
    outside = [p for p in tools if not _inside(p, room)]
    for path in outside:
        args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(room), str(room)]
    own = [_real(cwd) / ".loop", room / ".git"]
    for path in [*[p for p in tools if _inside(p, room)], *own]:
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    for path in _outermost(_real(p) for p in store):
        if path.is_dir() and not _inside(room, path) and _visible(path, hidden, [*tools, room]):
            args += ["--tmpfs", str(path)]
    return args


def _quoted(path: object) -> str:
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def profile(
    room: Path, scratch: Path, env: Mapping[str, str], store: list[Path], command: str = ""
) -> str:
    """The `sandbox-exec` profile (SBPL) of a check in `room` with its private temporary
    directory `scratch`: bubblewrap's layout as rules; the last matching rule wins."""
    room, scratch = _real(room), _real(scratch)
    hidden = masks(room, env, mac=True)
    lines = ["(version 1)", "(allow default)", "(deny network*)", "(deny file-write*)"]
    lines += [f"(deny file-read* (subpath {_quoted(p)}))" for p in hidden]
    tools = toolchain(env, hidden, room, command)
    lines += [f"(allow file-read* (subpath {_quoted(p)}))" for p in tools]
    writable = [room, scratch, Path("/dev")]
    lines += [f"(allow file-read* file-write* (subpath {_quoted(p)}))" for p in writable]
    own = [room / ".loop", room / ".git"]
    lines += [f"(deny file-write* (subpath {_quoted(p)}))" for p in own]
    lines += [f"(deny file-read* file-write* (subpath {_quoted(_real(p))}))" for p in store]
    return "\n".join(lines) + "\n"
