"""The paths a sandbox is about: what the agent must not change, and what its honest
tools need to see.

Read-only, whatever the sandbox: ralphstate's per-user store (the trust store, the
ledger with the approved contracts, the registry, the log), the guarded files and the
files that change how tests run as they are when the run starts, and git's
configuration, hooks and `info/` (a filter or a hook there runs code outside any
check). The agent still writes the rest of the project, `.loop/` included, and git's
objects and refs, so that it can edit, record progress and commit. The project's `.git`
is bound onto itself (a directory) or read-only (a worktree's pointer file), so it is
never moved aside or replaced by a repository of the agent's, whose configuration the
person's own git would run after the sandbox.

Hidden by bubblewrap: the held-out checks' directory of the store (`secret`). Hidden by
bubblewrap and sandbox-exec: the home directories, `/tmp` and the other
shared scratch places (`HIDDEN`). What the agent's tools need from them comes back
read-only (`needed`): the directories on PATH, the agent's own program and the files
its command names, the Python and the `ralphstate` the run uses and the one on PATH,
and the agent's own configuration and credentials (`AGENT_CONFIG`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ralphstate.storage.peruser import heldoutstore, home
from ralphstate.storage.repo import testfiles
from ralphstate.storage.repo.git import run_git
from ralphstate.storage.system import bwrapargs
from ralphstate.storage.system.paths import LoopPaths

# Where other people's, other projects' and other programs' files live: hidden.
# The runtime directories with the host's socket files (bwrapargs.SOCKET_DIRS) too.
HIDDEN = ("/home", "/root", "/tmp", "/var/tmp", "/mnt", "/media", "/srv")
# An agent's own configuration and credentials, relative to the home, by program name.
AGENT_CONFIG: dict[str, tuple[str, ...]] = {
    "claude": (".claude", ".claude.json"),
    "codex": (".codex",),
    "gemini": (".gemini",),
    "copilot": (".copilot", ".config/github-copilot"),
    "opencode": (".config/opencode", ".local/share/opencode", ".local/state/opencode"),
    "cursor-agent": (".cursor",),
    "aider": (".aider.conf.yml",),
}
# The variables that move an agent's configuration out of the home, by program name.
AGENT_CONFIG_ENV: dict[str, tuple[str, ...]] = {
    "claude": ("CLAUDE_CONFIG_DIR",),
    "codex": ("CODEX_HOME",),
    "gemini": ("GEMINI_CONFIG_DIR",),
    "copilot": ("COPILOT_HOME",),
}
# git's own files that run code or change what a command does.
GIT_PROTECTED = ("config", "config.worktree", "hooks", "info")


@dataclass
class Reach:
    """One project's paths, absolute and real: `writable` (the project, and git's
    directory when it lies outside it), `protected` (read-only inside what is
    writable), `store` (the per-user directories, read-only), `hidden` and `shown`
    (hidden roots, and what comes back from them read-only)."""

    root: Path
    writable: list[Path] = field(default_factory=list)
    protected: list[Path] = field(default_factory=list)
    store: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    shown: list[Path] = field(default_factory=list)
    # Hidden inside the store: the held-out checks (storage/peruser/heldoutstore.py).
    secret: list[Path] = field(default_factory=list)


def user_home() -> Path | None:
    found = Path(os.environ.get("HOME") or "~").expanduser()
    return found if found.is_absolute() else None


def store_dirs() -> list[Path]:
    """ralphstate's per-user directories (all of `$RALPHSTATE_HOME` when it is set)."""
    override = os.environ.get(home.ENV_HOME)
    if override:
        return [Path(override).expanduser()]
    try:
        return [home.state_dir(), home.log_dir(), home.data_dir()]
    except home.NoHome:
        return []


def _secret_dirs() -> list[Path]:
    """The held-out checks' directory: the agent never reads it, even read-only."""
    try:
        return [heldoutstore.top()]
    except home.NoHome:
        return []


def guarded_files(root: Path, guards: list[str]) -> list[Path]:
    """The files the guards name and the files that change how tests run, tracked or
    untracked (not ignored), as the work tree has them now."""
    specs = [*guards, *(testfiles.anywhere(name) for name in testfiles.CONFIG_FILES)]
    found: list[Path] = []
    for extra in ([], ["--others", "--exclude-standard"]):
        done = run_git(["ls-files", "-z", *extra, "--", *specs], root)
        if done is None or not done.ok:
            return found
        found += [root / name for name in testfiles.split_names(done.out)[0]]
    return found


def git_dirs(root: Path) -> tuple[Path, Path] | None:
    """The repository's git directory and its common one (a worktree's differ)."""
    done = run_git(["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"], root)
    if done is None or not done.ok:
        return None
    lines = done.out.splitlines()
    if len(lines) != 2:
        return None
    return Path(lines[0]), Path(lines[1])


def _real(paths: Iterable[Path]) -> list[Path]:
    seen: dict[str, Path] = {}
    for path in paths:
        try:  # a PATH entry the user may not enter is left out, never a traceback
            if path.exists() or path.is_symlink():
                real = Path(os.path.realpath(path))
                seen.setdefault(str(real), real)
        except OSError:
            continue
    return list(seen.values())


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _inside(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def install_root(program: Path) -> Path:
    """The directory a program comes with: a node package's prefix, a venv or prefix
    for a `bin/` entry, else its own directory."""
    real = Path(os.path.realpath(program))
    for parent in real.parents:
        if parent.name == "node_modules":
            return parent.parent
    if real.parent.name == "bin":
        return real.parent.parent
    return real.parent


def tools(argv: list[str]) -> list[Path]:
    """What the agent's honest tools need to see: PATH, the agent's program and the
    files its command names, the interpreters and the `ralphstate` in use."""
    entries = [Path(p) for p in os.environ.get("PATH", "").split(os.pathsep)]
    found = [p for p in entries if p.is_absolute()]
    found += [install_root(Path(argv[0])), Path(sys.prefix), Path(sys.base_prefix)]
    found.append(Path(__file__).resolve().parent.parent.parent)  # ralphstate's own
    on_path = shutil.which("ralphstate")
    if on_path is not None:
        found.append(install_root(Path(on_path)))
        found += _shebang(Path(on_path))
    found += [Path(arg) for arg in argv[1:] if Path(arg).is_absolute() and Path(arg).is_file()]
    return found


def _shebang(script: Path) -> list[Path]:
    """The interpreter a script names on its first line, and where it comes from."""
    try:
        with script.open("rb") as handle:
            first = handle.readline(4096)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    words = first[2:].decode("utf-8", "replace").split()
    if not words or not Path(words[0]).is_absolute():
        return []
    return [install_root(Path(words[0]))]


def agent_config(argv: list[str], where: Path | None) -> list[Path]:
    """The agent's own configuration and credentials in the home `where`, and where its
    variables move them."""
    name = Path(argv[0]).name.lower().removesuffix(".exe")
    found = [Path(os.environ[v]) for v in AGENT_CONFIG_ENV.get(name, ()) if os.environ.get(v)]
    if where is not None:
        found += [where / part for part in AGENT_CONFIG.get(name, ())]
    return [p for p in found if p.is_absolute()]


def reach(paths: LoopPaths, guards: list[str], commands: list[list[str]]) -> Reach:
    """The paths at stake when the agents `commands` (argument lists) work on the loop
    at `paths`."""
    root = Path(os.path.realpath(paths.root))
    found = Reach(root=root, writable=[root])
    protected = guarded_files(root, guards)
    dirs = git_dirs(root)
    if dirs is not None:
        for git_dir in dict.fromkeys(dirs):
            if not _inside(Path(os.path.realpath(git_dir)), root):
                found.writable.append(git_dir)
            protected += [git_dir / name for name in GIT_PROTECTED]
    dot = root / ".git"
    if dot.is_dir() and not dot.is_symlink():  # a mount of its own: never moved aside
        found.writable.append(dot)
    elif dot.is_file():  # a worktree's pointer: never replaced by a directory
        protected.append(dot)
    found.protected = _real(protected)
    found.store = _real(store_dirs())
    found.secret = [p for p in _real(_secret_dirs()) if p.is_dir()]
    where = user_home()
    hidden = [Path(p) for p in HIDDEN] + ([where] if where is not None else [])
    hidden += bwrapargs.socket_dirs()
    found.hidden = [p for p in _real(hidden) if _is_dir(p)]
    wanted = [p for argv in commands for p in [*tools(argv), *agent_config(argv, where)]]
    wanted += bwrapargs.resolver()
    shown = _real(wanted)
    found.shown = [p for p in shown if _comes_back(p, found.hidden, root)]
    return found


def _comes_back(path: Path, hidden: list[Path], root: Path) -> bool:
    """Whether `path` must be shown again: it lies inside a hidden root, is not one
    (nor holds one: an install root that is the home itself shows nothing), and is not
    the project's (which is shown whole)."""
    if not any(_inside(path, h) for h in hidden) or _inside(path, root):
        return False
    return not any(_inside(h, path) for h in hidden)
