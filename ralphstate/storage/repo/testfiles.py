"""Which files hold a project's tests, and the loop's guarded set as git pathspecs
(docs/explanation/proof.md, "Guarded files").

A loop guards the files its proof rests on: the tests its checks run and what decides
how they run. `default_guards` finds them in what git tracks when the loop starts:

- the test directories (`tests/`, `test/`, `spec/`, `__tests__/`, ... at any depth,
  the outermost of a nest), each one pathspec;
- files named like tests outside them (`test_*.py`, `*_test.go`, `*.test.*`, ...), one
  glob a name pattern (`**/test_*.py`), so tests beside the code are guarded too;
- the test configuration files (`conftest.py`, `pytest.ini`, jest and vitest configs,
  ...), one glob a name;
- the tracked files a check's command names as a word (`bash scripts/ci.sh`).

A directory or a glob, not every file: a new test file under them is a new test, which
`compare` lists and never pauses for, while an approved one that changes or goes away
is the person's to review. Every pathspec is relative to the project root, as git
takes it there. Each git command's answer is bounded (`storage/repo/git.py`, `run_git`);
outside a git repository nothing is guarded.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import shlex
import sys
from pathlib import Path

from ralphstate.core import limits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ralphstate.storage.repo.git import Done

# Directories whose tracked files are tests, at any depth.
TEST_DIRS = ("tests", "test", "spec", "specs", "__tests__", "testing", "e2e")
# Names of test files that may live beside the code.
TEST_FILES = (
    "test_*.py",
    "*_test.py",
    "*_test.go",
    "*.test.*",
    "*.spec.*",
    "*_spec.rb",
    "*_test.rb",
    "*Test.php",
)
# Files that change how tests run, whatever they hold: guarded where they exist, and a
# new one anywhere in the project pauses a completion for review. An `__init__.py` is
# not one: a new test package needs it, and it is listed with the new tests.
CONFIG_FILES = (
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    "noxfile.py",
    "sitecustomize.py",
    "usercustomize.py",
    # a module named as the test runner shadows it (`python -m pytest` runs it instead)
    "pytest.py",
    "py.py",
    "*.pth",
    "jest.config.*",
    "vitest.config.*",
    "vitest.workspace.*",
    ".mocharc.*",
    "karma.conf.*",
    "playwright.config.*",
    "cypress.config.*",
    "phpunit.xml",
    "phpunit.xml.dist",
    "phpunit.dist.xml",
    ".rspec",
)
# Files that can hold a test runner's configuration among much else: not guarded by
# default (a dependency added would need a review), but a new one is new configuration
# (pytest reads a `[tool.pytest.ini_options]` of a pyproject.toml beside the tests,
# vitest a vite.config).
# A package named as the test runner or what it imports shadows it (`python -m pytest`
# runs `pytest/__main__.py` of the project): a new file in one is new configuration.
RUNNER_PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "py")
# Bytecode committed beside a module is run in its place, whatever its source says (an
# unchecked-hash `.pyc` is never compared with the source; one with no source is
# imported as it is), and so is an extension module (`calc/__init__.cpython-*.so` is
# imported before `calc/__init__.py`): a new one is new configuration, not code.
BUILT = ("*.pyc", "*.so", "*.pyd")
NEW_CONFIG_FILES = (
    *CONFIG_FILES,
    "pyproject.toml",
    "vite.config.*",
    *BUILT,
    *(f"{package}/*" for package in RUNNER_PACKAGES),
)
# A module at the project root named as one of the standard library's shadows it for
# `python -m pytest` (which puts the current directory first on the import path), and
# pytest imports many (`pprint`, `inspect`, `argparse`, ...): such a file, or a package
# directory, is test configuration too (`shadows`). The test directories' names are
# not counted (`test` is a standard library package).
STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) - set(TEST_DIRS)
SHADOW_SUFFIXES = (".py", ".pyc", ".so", ".pyd")
# The most entries of the project root looked at for them.
MAX_ROOT_ENTRIES = 10_000
# The most rounds `default_guards` takes to find the test directories, each round
# reading up to MAX_GIT_OUTPUT_BYTES of file names.
MAX_ROUNDS = 50
# The most words of the checks' commands looked at as file names.
MAX_CHECK_WORDS = 200
# The pathspec magic a guard may carry; `exclude` is refused (a guard names files).
_MAGIC = {"top", "literal", "glob", "icase"}
_WILD = set("*?[\\")


def _toplevel(root: Path) -> Path | None:
    # storage/repo/git.py is imported when git is asked: it loads subprocess, which `status`
    # of a loop that guards nothing never needs (tests/test_imports.py).
    from ralphstate.storage.repo.git import toplevel

    return toplevel(root)


def _run_git(args: list[str], root: Path, timeout: float = limits.GIT_TIMEOUT) -> Done | None:
    from ralphstate.storage.repo.git import run_git

    return run_git(args, root, timeout=timeout)


class BadGuard(ValueError):
    """A pathspec that cannot be a guard: the text says why."""


def anywhere(name: str) -> str:
    """The pathspec of files called `name` (a glob of one path part) at any depth."""
    return f":(glob)**/{name}"


def literal(path: str) -> str:
    """The pathspec of exactly `path`: plain when git would read it so, else literal."""
    return f":(literal){path}" if _WILD & set(path) or path.startswith(":") else path


def magic(spec: str) -> tuple[list[str], str]:
    """A pathspec's long-form magic words and its path: `:(glob)**/x` → (["glob"], "**/x")."""
    if spec.startswith(":(") and ")" in spec:
        words, path = spec[2:].split(")", 1)
        return [w.strip() for w in words.split(",") if w.strip()], path
    return [], spec


def checked(spec: str) -> str:
    """A guard as the state keeps it: BadGuard for an empty one, an exclusion, a pathspec
    of magic git would not read the same way everywhere; `:/path` becomes `:(top)path`."""
    spec = spec.strip()
    if spec.startswith((":!", ":^")):
        raise BadGuard(f"{spec!r} excludes files; a guard names the files it guards")
    if spec.startswith(":/"):
        spec = ":(top)" + spec[2:].lstrip(":")
    elif spec.startswith(":") and not spec.startswith(":("):
        raise BadGuard(f"{spec!r} uses a short pathspec magic; write it long, as :(glob)PATH")
    words, path = magic(spec)
    unknown = [w for w in words if w not in _MAGIC]
    if "exclude" in words:
        raise BadGuard(f"{spec!r} excludes files; a guard names the files it guards")
    if unknown:
        raise BadGuard(f"a guard may use the magic {', '.join(sorted(_MAGIC))}, not {unknown[0]}")
    if not path.strip():
        raise BadGuard("a guard names some files: give it a path")
    if len(spec) > limits.MAX_GUARD_CHARS:
        raise BadGuard(f"a guard is at most {limits.MAX_GUARD_CHARS} characters")
    return spec


def refusal(root: Path, guards: list[str]) -> str | None:
    """What git says against these guards in `root` (a path outside the repository),
    or None when it takes them, or cannot be asked (no repository, no git)."""
    if not guards:
        return None
    done = _run_git(["ls-files", "-z", "--", *guards], root)
    if done is None or done.ok or _toplevel(root) is None:
        return None
    said = done.err.strip().splitlines()
    return said[0].removeprefix("fatal: ") if said else "git refuses it"


def negated(spec: str) -> str:
    """The exclusion of a guard (`checked`): every file but those it names."""
    words, path = magic(spec)
    return f":({','.join(['exclude', *words])}){path}"


def shown(spec: str) -> str:
    """A guard as a person reads it in a summary: `tests/`, `conftest.py`, `**/*_test.go`."""
    path = magic(spec)[1]
    name = path.removeprefix("**/")
    return name if "/" not in name and not _WILD & set(name) else path


def is_config(path: str, names: tuple[str, ...] = NEW_CONFIG_FILES) -> bool:
    """Whether a file's name is one that changes how tests run."""
    base = posixpath.basename(path)
    parent = posixpath.basename(posixpath.dirname(path))
    return any(
        fnmatch.fnmatchcase(f"{parent}/{base}" if "/" in name else base, name) for name in names
    )


def shadows(root: Path) -> list[str]:
    """The literal pathspecs of what at the project root shadows a standard library
    module: a module file named as one (`pprint.py`), or a directory (a package)."""
    found = []
    try:
        with os.scandir(root) as entries:
            for seen, entry in enumerate(entries):
                if seen >= MAX_ROOT_ENTRIES:
                    break
                if shadows_stdlib(entry.name) or (
                    entry.name in STDLIB and entry.is_dir(follow_symlinks=False)
                ):
                    found.append(literal(entry.name))
    except OSError:
        pass
    return sorted(found)


def shadows_stdlib(path: str) -> bool:
    """Whether `path` (from the project root) is a module file at the root named as a
    standard library module, or a file in a root directory named as one."""
    first, _, rest = path.partition("/")
    if rest:
        return first in STDLIB
    stem = first.split(".", 1)[0]
    return stem in STDLIB and first.endswith(SHADOW_SUFFIXES) and "." in first


def split_names(out: str) -> tuple[list[str], bool]:
    """The names of a `-z` listing, and whether git's answer was cut at its bound (its
    last, partial name is dropped then)."""
    names = out.split("\0")
    cut = len(out.encode("utf-8", "surrogatepass")) >= limits.MAX_GIT_OUTPUT_BYTES or (
        bool(out) and not out.endswith("\0")
    )
    names.pop()  # "" after the last NUL, or a name the bound cut
    return names, cut


def tracked(
    root: Path, specs: list[str], timeout: float = limits.GIT_TIMEOUT
) -> tuple[list[str], bool] | None:
    """The tracked files (relative to `root`) the pathspecs name, and whether the list
    was cut at its bound; None when git fails or `root` is not in a repository."""
    if not [s for s in specs if "exclude" not in magic(s)[0]]:
        return [], False
    done = _run_git(["ls-files", "-z", "--", *specs], root, timeout=timeout)
    if done is None or not done.ok:
        return None
    return split_names(done.out)


def _outer_test_dir(path: str) -> str | None:
    parts = path.split("/")
    for i, part in enumerate(parts[:-1]):
        if part in TEST_DIRS:
            return "/".join(parts[: i + 1]) + "/"
    return None


def _test_dirs(root: Path) -> list[str] | None:
    """The outermost test directories that hold tracked files, found round by round:
    each round leaves out the directories found before, so a listing cut at its bound
    still names a new one."""
    found: list[str] = []
    for _ in range(MAX_ROUNDS):
        specs = [anywhere(f"{d}/**") for d in TEST_DIRS] + [negated(literal(d)) for d in found]
        listed = tracked(root, specs)
        if listed is None:
            return None
        names, cut = listed
        for name in names:
            top = _outer_test_dir(name)
            if top is not None and top not in found:
                found.append(top)
        if not cut:
            break
    return found


def _named(root: Path, names: tuple[str, ...], outside: list[str]) -> list[str]:
    """The globs (`anywhere`) of the file names some tracked file outside the
    directories `outside` has. A listing cut at its bound names some; the next round
    asks only for the others."""
    away = [negated(literal(d)) for d in outside]
    left, hit = list(names), set()
    while left:
        listed = tracked(root, [anywhere(n) for n in left] + away)
        if listed is None:
            break
        files, cut = listed
        bases = {posixpath.basename(f) for f in files}
        now = {n for n in left if any(fnmatch.fnmatchcase(b, n) for b in bases)}
        hit |= now
        left = [n for n in left if n not in now]
        if not cut or not now:
            break
    return [anywhere(n) for n in names if n in hit]


def command_words(command: str) -> list[str]:
    """The words of a check's command that could name a file: shell words, the value
    of `--opt=value`, and the words of a quoted command (`bash -c "..."`)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:  # an unclosed quote: the plain words
        words = command.split()
    parts = [part for word in words for part in word.split()]  # `bash -c "a b"`: a, b
    found = [p.split("=", 1)[1] if p.startswith("-") and "=" in p else p for p in parts]
    return [w for w in found if w and not w.startswith("-")][:MAX_CHECK_WORDS]


def _check_files(root: Path, checks: dict[str, str], covered: list[str]) -> list[str]:
    """The tracked files the checks' commands name (relative to `root`), other than
    those the test directories and globs `covered` already guard."""
    real = root.resolve()
    names: list[str] = []
    for command in checks.values():
        for word in command_words(command):
            path = Path(os.path.normpath(real / Path(word).expanduser()))
            if not path.is_relative_to(real) or path == real or not path.is_file():
                continue
            rel = path.relative_to(real).as_posix()
            if rel not in names and not _covers(covered, rel):
                names.append(rel)
    if not names:
        return []
    listed = tracked(root, [f":(literal){n}" for n in names])
    known = set(listed[0]) if listed else set()
    return [literal(n) for n in names if n in known]


def _covers(guards: list[str], path: str) -> bool:
    """Whether a default guard (a directory or a name glob) names `path`."""
    for spec in guards:
        words, rest = magic(spec)
        if "glob" in words:
            if fnmatch.fnmatchcase(posixpath.basename(path), rest.removeprefix("**/")):
                return True
        elif rest.endswith("/") and path.startswith(rest):
            return True
    return False


def default_guards(root: Path, checks: dict[str, str]) -> list[str]:
    """The guarded set a new loop starts with: the test directories, the test-named
    files and the test configuration outside them (as globs), and the tracked files the
    checks name. [] outside a git repository (`summary` says so)."""
    if _toplevel(root) is None:
        return []
    dirs = _test_dirs(root)
    if dirs is None:
        return []
    found = [literal(d) for d in dirs]
    found += _named(root, TEST_FILES, dirs)
    found += _named(root, CONFIG_FILES, dirs)
    found += _check_files(root, checks, [*dirs, *found])
    return list(dict.fromkeys(found))


def count(root: Path, guards: list[str]) -> tuple[int, bool] | None:
    """How many tracked files the guards name, and whether there are more than that
    (the listing was cut at its bound); None when git cannot say."""
    listed = tracked(root, guards)
    if listed is None:
        return None
    return len(listed[0]), listed[1]


def _files(root: Path, guards: list[str]) -> str:
    """`3 files (tests/, conftest.py, …)`: the tracked files the guards name."""
    counted = count(root, guards)
    names = ", ".join(shown(g) for g in guards[:3]) + (", …" if len(guards) > 3 else "")
    if counted is None:  # git cannot list them: the guards are still there
        return f"{len(guards)} pathspecs ({names})"
    n, more = counted
    files = f"more than {n:,} files" if more else f"{n:,} file" + ("" if n == 1 else "s")
    return f"{files} ({names})"


def _guarding(root: Path, guards: list[str] | None, ask: bool = True) -> str:
    """`off`, `no git`, `none`, or the files the guards name (`_files`). Without `ask`,
    git is not asked about no guards at all."""
    if guards is None:
        return "off"
    if (guards or ask) and _toplevel(root) is None:
        return "no git"
    return _files(root, guards) if guards else "none"


def _them(files: str) -> str:
    return "it" if files.startswith("1 file ") else "them"


def summary(root: Path, guards: list[str] | None) -> str:
    """`init`'s line about the guarded files."""
    files = _guarding(root, guards)
    return {
        "off": "not guarding any files (--no-guard): changing the tests needs no review",
        "no git": "not guarding any files: the project is not in a git repository",
        "none": "guarding no files: git tracks no tests here yet;"
        " `ralphstate config guard add PATH` guards some",
    }.get(
        files,
        f"guarding {files}: changing {_them(files)} needs your review; --no-guard to opt out.",
    )


def status_line(root: Path, guards: list[str] | None) -> str:
    """`status`'s line: `guarded: 3 files (tests/, …)`, or why nothing is (git runs
    only when there are guards: `status` starts no process for less)."""
    files = _guarding(root, guards, ask=False)
    shown = {"no git": "no files (not a git repository)", "none": "no files"}
    return f"guarded: {shown.get(files, files)}"
