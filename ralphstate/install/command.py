"""The command an agent's hook runs, and how ralphstate recognises its own.

What `install` writes, for sh (Claude Code's shell; Git Bash on Windows):

    "/abs/python" -I -c "from ralphstate.hooks.entry import main; main()" stop [--agent NAME]

and for PowerShell (Gemini CLI on Windows, Copilot's `powershell` key):

    & '/abs/python' -I -c 'from ralphstate.hooks.entry import main; main()' stop [--agent NAME]

The interpreter that runs ralphstate imports the hook itself: no console-script wrapper
to start first. `-I` (isolated mode) keeps the current directory (the user's repository)
and every PYTHON* variable off the import path, so the hook imports ralphstate and its
dependencies from the installation alone. It is one simple command, which the shell
execs: when the agent signals the shell (a timeout, Esc), the signal reaches the hook.
The hook always exits 0; an entry left behind after ralphstate is uninstalled fails to
import, which is exit 1, an error the agents show the person and do not block on (exit 2
would be "block the stop"); a Python that is gone is the shell's 127, the same.

`-I` also hides the user site-packages, so an installation there (`pip install --user`)
cannot import itself in isolated mode: `install` checks that once, and then writes the
console script older versions wrote, `"/abs/bin/ralphstate" hook stop [--agent NAME]`.

Entries written by older versions are recognised too (`ralphstate hook stop` with any
path in front, `python -m ralphstate hook stop`, and the hook script by its path,
`python .../ralphstate/hooks/__main__.py stop`, which development builds wrote), so an
upgrade replaces them in place and an uninstall removes them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import sysconfig
from pathlib import Path

from ralphstate.agents.table import HOOKS
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.system import children

# The `ralphstate hook` subcommands, one per event an agent reports.
SUBCOMMANDS = HOOKS
# What the interpreter runs (`python -I -c HOOK_CODE stop`), and what shows it can.
HOOK_CODE = "from ralphstate.hooks.entry import main; main()"
# The check imports what the hook command runs and says which ralphstate it found.
IMPORT_CHECK = (
    "import ralphstate; from ralphstate.hooks.entry import main; print(ralphstate.__file__)"
)
CHECK_TIMEOUT = 30.0  # seconds for `install`'s check; `doctor` allows less
CHECK_OUTPUT_BYTES = 64 * 1024  # of its stdout and stderr, the last kept
# How the path of the hook script development builds ran ends (a legacy form).
HOOK_SCRIPT = ("ralphstate", "hooks", "__main__.py")
_CONSOLE_SCRIPT = "ralphstate.exe" if os.name == "nt" else "ralphstate"
_CODE = (
    r"""(?:^|\s)-c\s+["']?from\s+ralphstate\.hooks\.entry\s+"""
    r"""import\s+main\s*;\s*main\(\)["']?\s+"""
)
_OWN = re.compile(
    "|".join(
        prefix + f"({'|'.join(SUBCOMMANDS)})" + r"(?=[\s\"';]|$)"
        for prefix in (
            # this version: the interpreter importing the hook (`-I -c ...`)
            _CODE,
            # development builds: the hook script by its path
            r"""(?:^|[\s"'/\\])ralphstate[/\\]hooks[/\\]__main__\.py["']?\s+""",
            # older versions, and a `--user` install now: the console script; and
            # `python -m ralphstate hook`
            r"""(?:^|[\s"'/\\])ralphstate(?:\.exe)?["']?\s+hook\s+""",
            r"(?:^|\s)-m\s+ralphstate\s+hook\s+",
        )
    ),
    re.IGNORECASE,
)
_RUNS_CODE = re.compile(_CODE, re.IGNORECASE)
_AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_SH_ESCAPED = '"\\$`'


def isolated_import(python: str, timeout: float = CHECK_TIMEOUT) -> tuple[str | None, str]:
    """(why `python -I` cannot import ralphstate's hook, None when it can; the file of the
    ralphstate it imports). A program that exits 0 without naming a ralphstate package
    (not a Python, or not this one) cannot."""
    try:
        done = children.run(
            [python, "-I", "-c", IMPORT_CHECK], timeout=timeout, limit=CHECK_OUTPUT_BYTES, tail=True
        )
    except OSError as exc:
        return exc.strerror or str(exc), ""
    if done.code is None:
        return f"it did not answer within {timeout:g}s", ""
    if done.code != 0:
        lines = done.err.decode(errors="replace").strip().splitlines()
        return (lines[-1].strip() if lines else f"exit code {done.code}"), ""
    found = done.out.decode(errors="replace").strip()
    if Path(found).name not in ("__init__.py", "__init__.pyc") or Path(found).parent.name != (
        "ralphstate"
    ):
        return "it did not say where it found ralphstate", ""
    return None, found


def import_problem(python: str, timeout: float = CHECK_TIMEOUT) -> str | None:
    """Why `python -I` cannot import ralphstate's hook (the last line of its error, or
    why it did not run), None when it can."""
    return isolated_import(python, timeout)[0]


@functools.cache
def imports_isolated(python: str) -> bool:
    """Whether `python -I` imports this very ralphstate's hook (not another copy, as a
    `pip install --user` over a system-wide older one would); checked once per
    interpreter."""
    import ralphstate

    problem, found = isolated_import(python)
    if problem is not None or not ralphstate.__file__:
        return False
    return Path(found).resolve() == Path(ralphstate.__file__).resolve()


def development_checkout() -> Path | None:
    """The checkout this ralphstate runs from when it is an editable install (its
    package is not in the interpreter's site-packages but in a directory that holds
    a `pyproject.toml`), else None. Hooks written from it run that checkout's code."""
    import ralphstate

    package = Path(ralphstate.__file__).resolve().parent
    installed = set()
    for name in ("purelib", "platlib"):
        with contextlib.suppress(KeyError):
            installed.add(Path(sysconfig.get_paths()[name]).resolve())
    if any(place == package.parent or place in package.parents for place in installed):
        return None
    return package.parent if (package.parent / "pyproject.toml").is_file() else None


def console_script() -> str | None:
    """The `ralphstate` console script of this installation: beside the interpreter, in
    the scripts directory, or in the user scheme's (`pip install --user`)."""
    candidates = [Path(sys.executable).absolute().parent] if sys.executable else []
    for scheme in (sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user")):
        try:
            candidates.append(Path(sysconfig.get_path("scripts", scheme)))
        except (KeyError, TypeError):
            continue
    for directory in candidates:
        path = directory / _CONSOLE_SCRIPT
        if path.is_file():
            return str(path.absolute())
    return None


def _parts(sub: str, agent: str | None) -> tuple[str, bool, str]:
    """(program, whether it is the interpreter, arguments) of the hook command for `sub`."""
    if sub not in SUBCOMMANDS:
        raise ValueError(f"unknown hook subcommand {sub!r}")
    args = sub
    if agent is not None:
        if not _AGENT_NAME.fullmatch(agent):
            raise ValueError(f"invalid agent name {agent!r}")
        args += f" --agent {agent}"
    if not sys.executable:
        raise RalphstateError(
            "Cannot tell which Python runs ralphstate; run `ralphstate install` from an"
            " installed ralphstate command."
        )
    python = str(Path(sys.executable).absolute())  # not resolved: a venv's is a symlink
    if imports_isolated(python):
        return python, True, args
    script = console_script()
    if script is None:
        raise RalphstateError(
            f"{python} cannot import ralphstate in isolated mode (-I) and there is no"
            " `ralphstate` command beside it; install ralphstate into a virtual"
            " environment or with pipx and run `ralphstate install` from there."
        )
    return script, False, args


def hook_program(agent: str) -> tuple[str, list[str]]:
    """(program, arguments before the subcommand) of the hook, for a caller that starts
    it without a shell (opencode's plugin): `PYTHON -I -c CODE`, or the console script's
    `hook`."""
    program, python, _args = _parts("stop", agent)
    return program, (["-I", "-c", HOOK_CODE] if python else ["hook"])


def shell_command(sub: str, agent: str | None = None) -> str:
    """The hook command for sh: the program's absolute path in double quotes, so it works
    from any directory and in paths with spaces."""
    program, python, args = _parts(sub, agent)
    if python:
        return f'{quote(program)} -I -c "{HOOK_CODE}" {args}'
    return f"{quote(program)} hook {args}"


def powershell_command(sub: str, agent: str | None = None) -> str:
    """The same command for PowerShell: `& 'PYTHON' -I -c 'CODE' ARGS`."""
    program, python, args = _parts(sub, agent)
    if python:
        return f"& {_ps_quote(program)} -I -c '{HOOK_CODE}' {args}"
    return f"& {_ps_quote(program)} hook {args}"


def quote(path: str) -> str:
    """`path` in double quotes for the shell the agents run hooks with (sh, or Git Bash
    on Windows, where forward slashes keep the path free of backslash escapes)."""
    if os.name == "nt":
        path = path.replace("\\", "/")
    return '"' + "".join("\\" + c if c in _SH_ESCAPED else c for c in path) + '"'


def _ps_quote(path: str) -> str:
    if os.name == "nt":
        path = path.replace("\\", "/")
    return "'" + path.replace("'", "''") + "'"


def own_subcommand(command: object) -> str | None:
    """`stop`, `session-start` or `pre-compact` when `command` runs ralphstate's hook,
    in the form this version writes or one an older version wrote."""
    if not isinstance(command, str):
        return None
    match = _OWN.search(command)
    if match is None:
        return None
    return next(group for group in match.groups() if group).lower()


def runs_hook_code(command: str) -> bool:
    """Whether `command` has its interpreter import the hook (`-c "from ralphstate...`),
    the form this version writes."""
    return _RUNS_CODE.search(command) is not None


def command_words(command: str, limit: int = 2) -> list[str] | None:
    """The first `limit` words of a hook command, read the way this module quotes them:
    "..." with a backslash before `"`, `\\`, `$` and a backtick, '...', or a bare word;
    after a leading `& `, PowerShell's call operator, '...' with '' for a quote. None
    for an empty word or an unbalanced quote among them."""
    text = command.lstrip()
    powershell = text.startswith("& ")
    if powershell:
        text = text[2:]
    words: list[str] = []
    while text.strip() and len(words) < limit:
        text = text.lstrip()
        found = _word(text, powershell)
        if found is None:
            return None
        word, text = found
        words.append(word)
    return words


def _word(text: str, powershell: bool) -> tuple[str, str] | None:
    """The word at the start of `text` and the text after it."""
    quote_char = text[0]
    if quote_char not in "\"'":
        word = text.split(None, 1)[0]
        return word, text[len(word) :]
    out: list[str] = []
    i = 1
    while i < len(text):
        char = text[i]
        if quote_char == '"' and char == "\\" and i + 1 < len(text) and text[i + 1] in _SH_ESCAPED:
            out.append(text[i + 1])
            i += 2
            continue
        if char == quote_char:
            if powershell and text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            word = "".join(out)
            return (word, text[i + 1 :]) if word else None
        out.append(char)
        i += 1
    return None


def command_target(command: str) -> str | None:
    """The program a hook command starts: the path in its leading quotes, else its first
    word (which may be a bare name to look up on PATH). None for an empty or unbalanced
    command."""
    words = command_words(command, limit=1)
    return words[0] if words else None


def command_script(command: str) -> str | None:
    """The hook script an entry of the development builds' form runs (its second word,
    `.../ralphstate/hooks/__main__.py`), else None; `doctor` checks it is still there."""
    words = command_words(command)
    if not words or len(words) < 2:
        return None
    parts = words[1].replace("\\", "/").lower().split("/")
    return words[1] if tuple(parts[-3:]) == HOOK_SCRIPT else None
