"""Whether the program a check runs can be found, said when the check is set.

A check is a command line the platform's shell runs in the project root (`sh -c` on
POSIX, `cmd /c` on Windows). Its first program is the first word of its first simple
command, past variable assignments (`CI=1 pytest`) and redirections: a path (with a
separator) is looked up from the project root, where the check runs; a bare name on
PATH (PATHEXT on Windows); `python -m MODULE` also asks that Python whether it finds
MODULE's top-level package, from the project root (finding it runs none of its code).
A shell builtin or keyword (`test`, `cd`, `[`, `if`, cmd's `dir`) is not a program and
passes; so does a word the shell would expand (`$VENV/bin/pytest`), and a command this
reading does not follow (`for`, `case`, a function).

It warns and never refuses: the program may be one the loop's own work creates (a
`./check.sh` written in its first step) or installs, or one only the environment of the
hooks and of `ralphstate run` has on its PATH. A check that cannot start fails all the
same when it runs, with the shell's "not found" in its output.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from pathlib import Path

from ralphstate.core.text import visible

WINDOWS = sys.platform == "win32"
# Words the POSIX shell runs itself: builtins and reserved words that precede a program.
POSIX_BUILTINS = frozenset(
    ": . [ [[ alias bg break builtin cd command continue declare echo eval exec exit"  # noqa: SIM905
    " export false fg getopts hash jobs kill let local printf pwd read readonly return"
    " set shift source test time times trap true type ulimit umask unalias unset wait".split()
)
# cmd.exe's internal commands.
CMD_BUILTINS = frozenset(
    "assoc break call cd chdir cls color copy date del dir echo endlocal erase exit for"  # noqa: SIM905
    " ftype goto if md mkdir mklink move path pause popd prompt pushd rd rem ren rename"
    " rmdir set setlocal shift start time title type ver verify vol".split()
)
# Reserved words that start a command this reading does not follow.
_UNFOLLOWED = frozenset({"for", "case", "select", "function", "while", "until", "if", "{", "("})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_EXPANDS = re.compile(r"[$`*?%!]")
_PYTHON = re.compile(r"^(python(\d+(\.\d+)*)?w?|py|pypy\d*)(\.exe)?$", re.IGNORECASE)
# How long the Python a check names may take to say whether it finds a module.
MODULE_LOOKUP_SECONDS = 10.0
# Asks the Python it runs in whether it finds the top-level package argv[1] from the
# current directory, first on sys.path as for `python -m`; exits 3 when it does not.
_FIND = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)"


def missing(command: str, root: Path) -> str | None:
    """Why the check `command`, run in `root`, cannot start its program, as part of a
    sentence (`no program "pytst" on PATH`); None when it can, or cannot be told."""
    words = _first_command(command)
    if not words:
        return None
    program = words[0]
    builtins = CMD_BUILTINS if WINDOWS else POSIX_BUILTINS
    if program.lower() in builtins or _EXPANDS.search(program):
        return None
    found = _locate(program, root)
    if found is None and not _is_path(program):
        return f"no program {_shown(program)} on PATH"
    if found is None:
        relative = not Path(program).expanduser().is_absolute()
        return f"no file {_shown(program)}" + (" in the project" if relative else "")
    if not WINDOWS and not os.access(found, os.X_OK):
        return f"{_shown(program)} is not executable (`chmod +x {program}`)"
    module = _module(words)
    if module is not None and _PYTHON.match(Path(program).name):
        return _module_missing(found, module, root)
    return None


def warning(criterion: str, command: str, root: Path) -> str | None:
    """The one line said when the check `command` of `criterion` is set and its program
    cannot be found; None when it can."""
    why = missing(command, root)
    if why is None:
        return None
    return (
        f"warning: the check of {visible(criterion)!r} would fail now: {why}; correct it"
        f' with `ralphstate criteria check "{visible(criterion)}" "COMMAND"` unless the'
        " loop's work provides it."
    )


def _first_command(command: str) -> list[str]:
    """The words of the first simple command of `command`, from its program on, with
    assignments before it and redirections (`2>/dev/null`) left out; [] when there is
    none or the line cannot be read (an unclosed quote, a compound command)."""
    lexer = shlex.shlex(command, posix=not WINDOWS, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "" if WINDOWS else "#"
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    words: list[str] = []
    skip = False
    for index, token in enumerate(tokens):
        if token and set(token) <= set(";&|()"):
            break
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        if skip or (token.isdecimal() and following[:1] in ("<", ">")):
            skip = False
        elif token[:1] in ("<", ">"):
            skip = True  # the redirection's target follows
        elif words or not _ASSIGNMENT.match(token):
            words.append(_unquoted(token) if WINDOWS else token)
    if words and words[0].lower() in _UNFOLLOWED:
        return []
    return words


def _unquoted(word: str) -> str:
    """A word as cmd.exe hands it to a program: its double quotes taken away."""
    return word.replace('"', "")


def _is_path(program: str) -> bool:
    return "/" in program or (WINDOWS and "\\" in program)


def _locate(program: str, root: Path) -> str | None:
    """The file the shell would run for `program` from `root`, or None."""
    if _is_path(program):
        path = Path(program).expanduser()
        path = path if path.is_absolute() else root / path
        if path.is_file():
            return str(path)
        if WINDOWS:  # cmd finds `scripts\check` as scripts\check.bat too
            return shutil.which(str(path))
        return None
    if WINDOWS and (root / program).is_file():  # cmd runs a file of the current directory
        return str(root / program)
    return shutil.which(program)


def _module(words: list[str]) -> str | None:
    """MODULE of `python [options] -m MODULE ...`; None when the words run no module."""
    valued = False  # the word is the value of `-X` or `-W`
    for index, word in enumerate(words[1:], 1):
        if valued:
            valued = False
        elif word == "-m":
            return words[index + 1] if index + 1 < len(words) else None
        elif word.startswith("-m") and len(word) > 2:
            return word[2:]
        elif not word.startswith("-") or word in ("-c", "-"):
            return None  # a script, or code: no module
        else:
            valued = word in ("-X", "-W")
    return None


def _module_missing(python: str, module: str, root: Path) -> str | None:
    """`no module "pytest" for python3` when that Python does not find the module's
    top-level package from `root`; None when it does, or cannot be asked."""
    from ralphstate.storage.system import children

    top = module.split(".", 1)[0]
    if not top.isidentifier():
        return None
    try:
        done = children.run(
            [python, "-c", _FIND, top],
            cwd=root,
            timeout=MODULE_LOOKUP_SECONDS,
            limit=4096,
        )
    except OSError:
        return None
    if done.code != 3:
        return None
    return f"{Path(python).name} finds no module {_shown(top)}"


def _shown(word: str) -> str:
    return '"' + visible(word) + '"'
