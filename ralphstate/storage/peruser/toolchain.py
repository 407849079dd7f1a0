"""What a loop's checks resolve to, fingerprinted at approval and compared at each
sealed verification (docs/explanation/proof.md, "The environment and toolchain of approval").

A check's command line names programs, and the files behind them decide what runs: a
plugin installed into the virtualenv, a `.pth` file in its site-packages or the user's,
or a configuration file the runner finds above the project changes every test's
outcome while the command stays the same. `fingerprint` records, as
`{what: hash}`:

- each program a command line starts (the first word of each simple command, past
  assignments and wrappers such as `env` or `timeout`), found on the approved `PATH`;
- for a Python program (`python`, `python -m ...`, a script whose `#!` line names a
  Python, `uv run ...` and the like, which use the project's `.venv`): the interpreter
  as it answers itself, its `sys.path`, the `.pth`, `sitecustomize` and
  `usercustomize` files of its site directories and of the user's site-packages, and
  every installed distribution with its entry points (pytest's `pytest11` plugins
  among them), those at the project's root too (`python -m` imports from there);
- for pytest, what pytest itself says it read: its rootdir, the configuration file
  (hashed) and the plugins it loaded, from the header of a `--collect-only` that
  collects nothing.

It is cheap on the way through: a file is hashed only when its size, modification time
or change time changed (a cache in the per-user data directory; the agent's user can set
a modification time back, never a change time), the interpreter is asked again only when
it or a site directory changed, and pytest only when a directory it searched for its
configuration changed (from the project up to the file it read; with none, up to the
filesystem's root).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core import limits
from ralphstate.storage.peruser import home
from ralphstate.storage.peruser.toolcache import Cache
from ralphstate.storage.system import fsio

# How long asking an interpreter or pytest may take, in seconds.
ASK_TIMEOUT = 60.0
MAX_ANSWER_BYTES = 1024 * 1024
# The most changes a review names.
MAX_NAMED = 8
# The most entries of the project root looked at for modules that shadow others.
MAX_ROOT_ENTRIES = 10_000
_WRAPPERS = frozenset(
    {"env", "command", "exec", "nohup", "nice", "stdbuf", "timeout", "xargs", "time", "!"}
)
_RUNNERS = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv", "rye"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_ASK_PYTHON = (
    "import json, site, sys\n"
    "user = site.getusersitepackages() if site.ENABLE_USER_SITE else None\n"
    "sites = site.getsitepackages() if hasattr(site, 'getsitepackages') else []\n"
    "print(json.dumps({'exe': sys.executable, 'version': sys.version,"
    " 'path': sys.path, 'sites': sites, 'user': user}))\n"
)
_ASK_PYTEST = ["-m", "pytest", "--collect-only", "--noconftest", "-p", "no:cacheprovider"]
_ASK_PYTEST += ["--ignore-glob=*", "-o", "addopts=", "-o", "python_files=", "-v"]


def fingerprint(commands: Iterable[str], root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """What the check commands resolve to, run in `root` with `env`: {what: hash}."""
    cache = Cache.load()
    found: dict[str, str] = {}
    pythons: dict[str, bool] = {}  # interpreter -> runs pytest
    for command in commands:
        for words in simple_commands(command):
            _program(words, root, env, cache, found, pythons)
    for python, runs_pytest in pythons.items():
        found.update(_python(python, root, env, cache))
        if runs_pytest:
            found.update(_pytest(python, root, env, cache))
    cache.save()
    return found


def keep(loop: str, found: dict[str, str]) -> str:
    """Keep the approved fingerprint `found` of the loop `loop` in a file of its own
    (`toolchains/HASH.json` in the per-user data directory: the trust store holds only
    the hash, so it stays small); its hash. RalphstateError if it cannot be written."""
    import hashlib

    from ralphstate.core.errors import RalphstateError

    data = orjson.dumps({"loop": loop, "toolchain": found}, option=orjson.OPT_SORT_KEYS)
    digest = hashlib.sha256(data).hexdigest()
    path = home.data_dir() / "toolchains" / f"{digest}.json"
    try:
        fsio.makedirs(path.parent)
        if not path.exists():
            fsio.atomic_write(path, data)
    except OSError as exc:
        raise RalphstateError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return digest


def kept(digest: str) -> dict[str, str]:
    """The fingerprint kept under `digest`; one that cannot be read, or no longer
    matches its hash, reads as a fingerprint that matches nothing (a review says so)."""
    import hashlib

    lost = {"the record of the approved toolchain": f"unreadable ({digest[:16]})"}
    try:
        path = home.data_dir() / "toolchains" / f"{digest}.json"
        data = fsio.read_regular(path, limits.MAX_USER_FILE_BYTES)
    except (OSError, home.NoHome):
        return lost
    if hashlib.sha256(data).hexdigest() != digest:
        return lost
    found = orjson.loads(data).get("toolchain")
    return found if isinstance(found, dict) else lost


def forget(digest: str) -> None:
    """Remove the fingerprint kept under `digest` (a newer approval replaced it)."""
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        return
    with contextlib.suppress(OSError, home.NoHome):
        (home.data_dir() / "toolchains" / f"{digest}.json").unlink()


def changes(approved: Mapping[str, object], now: Mapping[str, str]) -> list[str]:
    """The review's sentences for what differs between the approved fingerprint and
    `now`; [] when nothing does."""
    said = []
    for what in sorted(set(approved) | set(now)):
        if what not in now:
            said.append(f"gone: {what}")
        elif what not in approved:
            said.append(f"new: {what}")
        elif approved[what] != now[what]:
            said.append(f"changed: {what}")
    if not said:
        return []
    named = [f"what the checks run changed since approval: {s}" for s in said[:MAX_NAMED]]
    if len(said) > MAX_NAMED:
        named.append(f"what the checks run: {len(said) - MAX_NAMED} more changes")
    return named


def simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command of a shell line, as a POSIX shell splits them
    (a line that does not split: its words split on spaces)."""
    import shlex

    lexer = shlex.shlex(command.replace("`", "\n"), posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        words = command.split()
    from ralphstate.core.approving import split_simple

    return [simple for simple in split_simple(words) if simple]


def _program(
    words: list[str],
    root: Path,
    env: Mapping[str, str],
    cache: Cache,
    found: dict[str, str],
    pythons: dict[str, bool],
) -> None:
    """Fingerprint the program of one simple command, and note its Python."""
    i = 0
    while i < len(words) and (_ASSIGNMENT.match(words[i]) or _base(words[i]) in _WRAPPERS):
        i += 1
        while i < len(words) and words[i].startswith("-"):
            i += 1  # a wrapper's options
        if i < len(words) and re.match(r"^\d+(\.\d+)?[smhd]?$", words[i]):
            i += 1  # `timeout 60`
    if i >= len(words):
        return
    word, rest = words[i], words[i + 1 :]
    path = _which(word, root, env.get("PATH", ""))
    if path is None:
        return
    found[f"program {word} ({path})"] = cache.hash(path)
    runs_pytest = "pytest" in _base(word) or "pytest" in rest[:3]
    base = _base(word)
    if base in _RUNNERS and "run" in rest[:2]:
        venv = root / ".venv" / ("Scripts" if sys.platform == "win32" else "bin")
        venv_python = venv / ("python.exe" if sys.platform == "win32" else "python")
        if venv_python.exists():
            name = str(venv_python)
            pythons[name] = pythons.get(name, False) or "pytest" in rest[:4]
        return
    python = _python_of(path, base, env)
    if python is not None:
        pythons[python] = pythons.get(python, False) or runs_pytest


def _base(word: str) -> str:
    name = re.split(r"[\\/]", word)[-1].lower()
    for suffix in (".exe", ".cmd", ".bat"):
        name = name.removesuffix(suffix)
    return name


def _which(word: str, root: Path, path: str) -> str | None:
    """The file `word` starts: a path as written (relative to `root`), else found on
    `path`; None for a shell builtin, a function or a program not found."""
    if "/" in word or "\\" in word:
        candidate = Path(word) if Path(word).is_absolute() else root / word
        return str(candidate) if candidate.is_file() else None
    return shutil.which(word, path=path)


def _python_of(path: str, base: str, env: Mapping[str, str]) -> str | None:
    """The Python interpreter a program is, or runs: itself for `python*`, the one its
    `#!` line names for a script, the `python.exe` beside a Windows console script."""
    if base.startswith("python") or base == "py":
        return path
    beside = Path(path).parent / "python.exe"
    if sys.platform == "win32":
        return str(beside) if beside.exists() else None
    try:
        with fsio.open_regular(Path(path)) as handle:
            first = handle.read(512).split(b"\n", 1)[0]
    except OSError:
        return None
    if not first.startswith(b"#!") or b"python" not in first:
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if words and _base(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
        return shutil.which(words[0], path=env.get("PATH", "")) if words else None
    return words[0] if words else None


def _ask(argv: list[str], root: Path, env: Mapping[str, str]) -> str | None:
    """What a program printed, run in `root` with `env`; None when it could not run."""
    from ralphstate.storage.system import children

    try:
        done = children.run(argv, cwd=root, env=env, timeout=ASK_TIMEOUT, limit=MAX_ANSWER_BYTES)
    except OSError:
        return None
    return None if done.code is None else done.out.decode("utf-8", "replace")


def _python(python: str, root: Path, env: Mapping[str, str], cache: Cache) -> dict[str, str]:
    """The interpreter as it answers itself, and its site directories' contents."""
    key = f"python {python} in {root}"
    answer = cache.answer(key)
    if answer is None:
        said = _ask([python, "-c", _ASK_PYTHON], root, env)
        try:
            answer = orjson.loads(said or "")
        except orjson.JSONDecodeError:
            return {f"python {python}": "did not answer"}
        if not isinstance(answer, dict):
            return {f"python {python}": "did not answer"}
        sites = [*answer.get("sites", []), *([answer["user"]] if answer.get("user") else [])]
        cache.keep(key, [python, *sites], answer)
    exe = str(answer.get("exe"))
    found = {f"python {python}": f"{exe} {answer.get('version')}"}
    found[f"python {python}: sys.path"] = orjson.dumps(answer.get("path")).decode()
    sites = [*answer.get("sites", []), *([answer["user"]] if answer.get("user") else [])]
    for site in sites:
        found.update(_site(str(site), cache))
    # `python -m` puts the directory it runs in first on the import path: a distribution
    # there registers entry points (a `pytest11` plugin) as an installed one does.
    here = _site(str(root), cache)
    found.update({what: value for what, value in here.items() if what.startswith("distrib")})
    found.update(_shadows(root, [str(p) for p in answer.get("path") or []]))
    return found


# What makes a name at the project root a module Python imports: a package directory
# (a regular one: a namespace portion never wins over a module found later) or a file.
_MODULE_SUFFIXES = (".py", ".pyc", ".pyd", ".so")


def _shadows(root: Path, path: list[str]) -> dict[str, str]:
    """The modules at `root` that `python -m` (the root first on the import path) would
    import in place of one the interpreter finds on its own path: the standard
    library's, a library pytest imports as it starts (`pygments`), any installed one.
    Found by asking that path, not by a list of names."""
    try:
        entries = list(os.scandir(root))[:MAX_ROOT_ENTRIES]
    except OSError:
        return {}
    names = set()
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if (Path(entry.path) / "__init__.py").exists():
                names.add(entry.name)
        elif entry.name.endswith(_MODULE_SUFFIXES):
            names.add(entry.name.split(".", 1)[0])
    here = Path(os.path.realpath(root))
    dirs = [Path(p or str(root)) for p in path]  # "" is where it was asked: the root
    others = [p for p in dirs if p.is_dir() and Path(os.path.realpath(p)) != here]
    found = {}
    for name in sorted(n for n in names if n.isidentifier()):
        for other in others:
            there = other / name
            if there.is_dir() or any(
                (other / f"{name}{suffix}").exists() for suffix in _MODULE_SUFFIXES
            ):
                found[f"module {name} at the project root, in place of {there}"] = "shadows"
                break
    return found


def _site(site: str, cache: Cache) -> dict[str, str]:
    """A site directory's path files, customize modules and distributions."""
    found: dict[str, str] = {}
    try:
        entries = sorted(os.scandir(site), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        name = entry.name
        where = f"{name} in {site}"
        if name.endswith(".pth") or name in ("sitecustomize.py", "usercustomize.py"):
            found[f"path file {where}"] = cache.hash(entry.path)
        elif name.endswith((".dist-info", ".egg-info")) and entry.is_dir():
            points = os.path.join(entry.path, "entry_points.txt")  # noqa: PTH118 - cheaper
            found[f"distribution {where}"] = cache.hash(points)
    return found


def _pytest(python: str, root: Path, env: Mapping[str, str], cache: Cache) -> dict[str, str]:
    """What pytest says it read: its rootdir, its configuration file (hashed) and its
    plugins. Asked again only when a directory it searched changed: from `root` up to
    the configuration file's directory, or, with none, up to the filesystem's root."""
    key = f"pytest {python} in {root}"
    answer = cache.answer(key)
    if answer is None:
        said = _ask([python, *_ASK_PYTEST], root, env) or ""
        answer = {"rootdir": None, "configfile": None, "plugins": None}
        for line in said.splitlines()[:40]:
            if line.startswith("plugins: "):
                answer["plugins"] = line[len("plugins: ") :].strip()
                continue
            for part in line.split(", "):
                name, _, value = part.partition(": ")
                if name in answer and answer[name] is None:
                    answer[name] = value.strip()
        cache.keep(key, _searched(root, answer), answer)
    found = {
        "pytest rootdir": str(answer.get("rootdir")),
        "pytest plugins": str(answer.get("plugins")),
    }
    config = answer.get("configfile")
    if config and answer.get("rootdir"):
        path = Path(str(answer["rootdir"])) / str(config)
        found[f"pytest configuration file {path}"] = cache.hash(str(path))
    else:
        found["pytest configuration file"] = "none"
    return found


def _searched(root: Path, answer: dict[str, Any]) -> list[str]:
    """The directories pytest looked in for its configuration: up from `root` to the
    one holding the file it read; all of them when it read none, or only a
    `pyproject.toml` without a pytest table (pytest takes one as a last resort, after
    looking in every directory above for a configuration of its own)."""
    ups = [root, *list(root.parents)[:64]]
    config = answer.get("configfile")
    if config:
        path = Path(str(answer.get("rootdir"))) / str(config)
        if path.parent in ups and not _fallback(path):
            ups = ups[: ups.index(path.parent) + 1]
        ups.append(path)  # its own edit can change where pytest looks
    return [str(p) for p in ups]


def _fallback(path: Path) -> bool:
    if path.name != "pyproject.toml":
        return False
    try:
        return b"[tool.pytest" not in fsio.read_regular(path, limits.MAX_SETTINGS_BYTES)
    except OSError:
        return True
