"""Shell syntax in the agent command (docs/reference/run.md, "Shell syntax").

`ralphstate run` starts the agent without a shell: the command is split as a shell
would quote it, and nothing else a shell does happens. A command that needs one
(`VAR=x cmd`, `a && b`, a pipe, a redirection, `$(...)`) would fail in a way that says
nothing of why, so it is refused with one sentence saying how to run it: `--shell` (or
`shell = true` in the config), which runs the whole command through `/bin/sh -c`
(`cmd /c` on Windows), the prompt in arg mode reaching it as `"$@"`, the prompt file's
path in file mode as `"$1"`.
"""

from __future__ import annotations

import os
import re
import shlex

from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.run import spawn
from ralphstate.run.runconfig import PROMPT_FILE

# What a shell makes of a command that splitting alone does not: control operators,
# pipes and redirections (as shlex's punctuation reads them), and expansions.
OPERATORS = frozenset({"&&", "||", "|", ";", "&", ";;", ">", ">>", "<", "<<", "(", ")", "|&"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_EXPANSION = re.compile(r"\$\(|`|\$\{|\$[A-Za-z_]")
# The name the shell gives its script ($0), so the prompt is "$1".
SCRIPT_NAME = "ralphstate-agent"


def shell_syntax(command: str) -> str | None:
    """What in `command` only a shell understands, in a few words; None when splitting
    it is all it needs."""
    try:
        plain = shlex.split(command, posix=not spawn.WINDOWS)
    except ValueError:
        return None  # split_command says why it cannot be read
    if plain and _ASSIGNMENT.match(plain[0]) and _ASSIGNMENT.match(command.lstrip()):
        return f"the variable assignment {plain[0].split('=', 1)[0]}=..."
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    for token in tokens:
        if token in OPERATORS:
            return f"the operator {token!r}"
    outside_quotes = re.sub(r"'[^']*'", "", command)
    if _EXPANSION.search(outside_quotes):
        return "an expansion ($VAR, ${...}, $(...) or backquotes)"
    return None


def argv(command: str, shell: bool) -> list[str]:
    """The agent command as the argument list to start: split as a shell quotes it, or,
    with `shell`, the whole command for the shell to run. A command that needs a shell
    without `shell` is refused, saying how."""
    if shell:
        if spawn.WINDOWS:
            return [os.environ.get("COMSPEC") or "cmd.exe", "/d", "/s", "/c", command]
        if PROMPT_FILE in command:  # the path as the script's "$1": quoted, whatever it holds
            return ["/bin/sh", "-c", command.replace(PROMPT_FILE, '"$1"'), SCRIPT_NAME, PROMPT_FILE]
        return ["/bin/sh", "-c", f'{command} "$@"', SCRIPT_NAME]
    needs = shell_syntax(command)
    if needs is not None:
        raise RalphstateError(
            f"the agent command {visible(command)!r} uses {needs}, which needs a shell and"
            " `ralphstate run` starts the agent without one; give --shell (or `shell ="
            " true` in the [run] config) to run it through /bin/sh, or put it in a script."
        )
    return spawn.split_command(command)
