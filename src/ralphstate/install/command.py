"""The command an agent's hook runs, and how ralphstate recognises its own.

What `install` writes, for sh (Claude Code's shell; Git Bash on Windows):

    "/abs/python" "/abs/site-packages/ralphstate/hooks/__main__.py" stop [--agent NAME] || exit 1

and for PowerShell (Gemini CLI on Windows, Copilot's `powershell` key):

    & '/abs/python' '/abs/.../ralphstate/hooks/__main__.py' stop [--agent NAME];
      if ($LASTEXITCODE -ne 0) { exit 1 }

The hook itself always exits 0. The tail is for the day ralphstate is uninstalled and
the entry left behind: Python cannot open the script and exits 2, which Claude Code,
Codex and Gemini CLI read as "block the stop"; exit 1 is an error they show the person
and do not block on, as a missing console script's 127 was.

The interpreter that runs ralphstate runs the hook script by its path: no console-script
wrapper to start first, and, unlike `python -m`, no current directory (the user's
repository) on the import path. Entries written by older versions are recognised too
(`ralphstate hook stop` with any path in front, `python -m ralphstate hook stop`), so an
upgrade replaces them in place and an uninstall removes them.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ralphstate.core.errors import RalphstateError

# The `ralphstate hook` subcommands, one per event an agent reports.
SUBCOMMANDS = ("stop", "session-start", "pre-compact")
HOOK_SCRIPT = ("ralphstate", "hooks", "__main__.py")  # how the hook script's path ends
_OWN = re.compile(
    "|".join(
        prefix + f"({'|'.join(SUBCOMMANDS)})" + r"(?=[\s\"']|$)"
        for prefix in (
            # this version: the hook script by its path, or the same package with -m
            r"""(?:^|[\s"'/\\])ralphstate[/\\]hooks[/\\]__main__\.py["']?\s+""",
            r"(?:^|\s)-m\s+ralphstate\.hooks\s+",
            # older versions: the console script, or `python -m ralphstate hook`
            r"""(?:^|[\s"'/\\])ralphstate(?:\.exe)?["']?\s+hook\s+""",
            r"(?:^|\s)-m\s+ralphstate\s+hook\s+",
        )
    ),
    re.IGNORECASE,
)
# Any failure to run the hook at all becomes exit 1, never 2 ("block"): see above.
SH_TAIL = " || exit 1"
POWERSHELL_TAIL = "; if ($LASTEXITCODE -ne 0) { exit 1 }"
_AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_SH_ESCAPED = '"\\$`'


def hook_script() -> str:
    """The absolute path of this installation's hook script, `ralphstate/hooks/__main__.py`
    (found from the top package, so install imports nothing of the hooks)."""
    import ralphstate

    package = ralphstate.__file__
    if package:
        script = Path(package).absolute().parent.joinpath(*HOOK_SCRIPT[1:])
        if script.is_file():
            return str(script)
    raise RalphstateError(
        "Cannot find ralphstate's hook script beside its code; reinstall ralphstate."
    )


def _parts(sub: str, agent: str | None) -> tuple[str, str, str]:
    """(interpreter, hook script, arguments) of the hook command for `sub`."""
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
    return str(Path(sys.executable).absolute()), hook_script(), args


def shell_command(sub: str, agent: str | None = None) -> str:
    """The hook command for sh: absolute paths in double quotes, so it works from any
    directory and in paths with spaces."""
    python, script, args = _parts(sub, agent)
    return f"{quote(python)} {quote(script)} {args}{SH_TAIL}"


def powershell_command(sub: str, agent: str | None = None) -> str:
    """The same command for PowerShell: `& 'PYTHON' 'SCRIPT' ARGS`."""
    python, script, args = _parts(sub, agent)
    return f"& {_ps_quote(python)} {_ps_quote(script)} {args}{POWERSHELL_TAIL}"


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
    """The hook script a command of this version's form runs (its second word), else None."""
    words = command_words(command)
    if not words or len(words) < 2:
        return None
    parts = words[1].replace("\\", "/").lower().split("/")
    return words[1] if tuple(parts[-3:]) == HOOK_SCRIPT else None
