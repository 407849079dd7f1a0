"""Which shell commands approve what proves a loop done, read from their words.

Claude Code's PreToolUse hook (`hooks.pre_tool_use`) asks the person before the agent's
Bash tool runs a command that approves: `ralphstate trust`, or `ralphstate review` with
`--approve` or `--revert`. `approving(command)` finds one in a command line as a shell
would read it: each simple command of a list (`&&`, `||`, `;`, `|`, `&`, newlines,
`( )`, `$( )` and backquotes), past variable assignments and the wrappers that run the
rest (`env`, `sudo`, `timeout 60`, ...), whatever spells the program (`ralphstate`,
a path to it, `python -m ralphstate`, `uv run ralphstate`, `uvx ralphstate`), and into
`sh -c '...'` and `eval`. Words inside quotes are data (`git commit -m "ralphstate
trust"` approves nothing).

Words are read as the shell joins them (`"ralph""state" trust` and `ralph\\state trust`
run `ralphstate trust`). Where it cannot tell, it answers UNCLEAR, so the person is
asked, whenever the command holds an approving word (`trust`, `--approve`,
`--revert`): a variable or a substitution as a program (`r=ralphstate; $r trust`),
`eval` or `sh -c` of text that is not literal, a command line over MAX_COMMAND_CHARS
(not read at all: linear in its length) or one that does not parse.

What it misses is refused all the same: the command runs without the approval the
hook would have given it, and `loop.person.require_person` refuses it. What it finds
needlessly costs the person one question."""

from __future__ import annotations

import re

# The variable that carries a one-time approval (`storage.approvals`) into the command
# the person approved; a command the agent writes may not name it.
APPROVAL_ENV = "RALPHSTATE_APPROVAL"
# What separates the simple commands of a command line.
_SEPARATORS = frozenset({";", "&", "&&", "|", "||", "|&", ";;", "(", ")", "\n", "{", "}"})
# Words before the program that run what follows: reserved words, and commands that run
# their arguments (their own options and, for `timeout`, a duration are passed over).
_KEYWORDS = frozenset({"!", "if", "then", "else", "elif", "do", "while", "until", "time"})
_WRAPPERS = frozenset(
    {"env", "command", "exec", "nohup", "sudo", "doas", "nice", "stdbuf", "timeout", "xargs"}
)
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
# Runners that take a program name and its arguments: `uv run X`, `uvx X`, `pipx run X`.
_RUNNERS = frozenset({"uv", "uvx", "pipx"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DURATION = re.compile(r"^\d+(\.\d+)?[smhd]?$")
_PROGRAM = "ralphstate"
# What `approving` answers for a command it cannot tell about.
UNCLEAR = "unclear"
_WORDS = ("trust", "--approve", "--revert")
# Quotes and backslashes the shell joins words across (`"ralph""state"`).
_JOINING = str.maketrans("", "", "\"'\\")
# The longest command line read word by word; a longer one that holds an approving word
# is UNCLEAR.
MAX_COMMAND_CHARS = 100_000
# How deep `sh -c` and `eval` are followed.
_MAX_DEPTH = 4


def with_approval(command: str, token: str) -> str:
    """The command the person is asked about: `command` as written, run in a subshell
    that has the approval `token` (hexadecimal: no quoting needed in any shell) in its
    environment, so that every command of a list (`cd sub && ralphstate trust`) sees it
    and no later command of the session does. Claude Code's Bash tool runs POSIX shell
    syntax on every platform (Git Bash on Windows); the newline before `)` ends a
    trailing comment."""
    return f"(export {APPROVAL_ENV}={token}\n{command}\n)"


def names_approval(command: str) -> bool:
    """Whether the command line names the approval variable: only ralphstate sets it."""
    return APPROVAL_ENV in command.upper()


def approving(command: str) -> str | None:
    """What the shell command `command` approves: "trust", "review --approve" or
    "review --revert"; None when it runs none of them."""
    lowered = command.lower()
    if not any(word in lowered for word in _WORDS):
        return None
    return _approving(command, 0)


def _approving(command: str, depth: int) -> str | None:
    if len(command) > MAX_COMMAND_CHARS:
        return UNCLEAR
    substituted = "$" in command or "`" in command
    if _PROGRAM not in command.lower().translate(_JOINING) and not substituted:
        return None
    words = _words(command)
    if words is None:
        return UNCLEAR
    for simple in _simple_commands(words):
        found = _of_simple(simple, depth)
        if found:
            return found
    if "$(" in command or "`" in command:
        return UNCLEAR  # a substitution's output may be the program (`$(echo ...) trust`)
    return None


def _words(command: str) -> list[str] | None:
    """The command line's words and separators as a POSIX shell splits them; None when
    it does not parse, or is too long to read this way."""
    if len(command) > MAX_COMMAND_CHARS:
        return None
    import shlex  # only for a command that names ralphstate

    lexer = shlex.shlex(command.replace("`", "\n"), posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def _simple_commands(words: list[str]) -> list[list[str]]:
    """The words of each simple command, the redirections (`> file`) left out."""
    found: list[list[str]] = [[]]
    redirect = False
    for word in words:
        if word in _SEPARATORS:
            found.append([])
        elif redirect:
            redirect = False
        elif set(word) <= set("<>&|"):
            redirect = True
        elif word != "$":
            found[-1].append(word)
    return [simple for simple in found if simple]


def _of_simple(words: list[str], depth: int) -> str | None:
    """What one simple command approves, from its program on."""
    rest = _program_on(words)
    if not rest:
        return None
    if "$" in rest[0]:
        return UNCLEAR  # a variable as the program: cannot be told
    program = _base(rest[0])
    if program == _PROGRAM:
        return _subcommand(rest[1:])
    if program.startswith("python") or program == "py":
        return _python(rest[1:])
    if program in _RUNNERS:
        named = [i for i, word in enumerate(rest[1:], 1) if _base(word) == _PROGRAM]
        return _subcommand(rest[named[0] + 1 :]) if named else None
    if program in _SHELLS and "-c" in rest[1:-1]:
        return (
            _approving(rest[rest.index("-c", 1) + 1], depth + 1) if depth < _MAX_DEPTH else UNCLEAR
        )
    if program == "eval":
        return _approving(" ".join(rest[1:]), depth + 1) if depth < _MAX_DEPTH else UNCLEAR
    return None


def _program_on(words: list[str]) -> list[str]:
    """The words from the program on: assignments, reserved words and wrappers (with
    their options) passed over."""
    i, wrapped = 0, False
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word) or word in _KEYWORDS:
            i += 1
        elif _base(word) in _WRAPPERS:
            i, wrapped = i + 1, True
        elif wrapped and (word.startswith("-") or _DURATION.match(word)):
            i += 1
        else:
            return words[i:]
    return []


def _base(word: str) -> str:
    """A program as named: its file name, lower case, without a Windows suffix."""
    name = re.split(r"[\\/]", word)[-1].lower()
    for suffix in (".exe", ".cmd", ".bat", ".ps1"):
        name = name.removesuffix(suffix)
    return name


def _python(args: list[str]) -> str | None:
    """`python [options] -m ralphstate ARGS`: what ARGS approve."""
    for i, arg in enumerate(args):
        if arg == "-m" and i + 1 < len(args):
            return _subcommand(args[i + 2 :]) if args[i + 1] == _PROGRAM else None
        if arg.startswith("-m"):
            return _subcommand(args[i + 1 :]) if arg[2:] == _PROGRAM else None
        if not arg.startswith("-"):
            return None  # a script runs, not a module
    return None


def _subcommand(args: list[str]) -> str | None:
    """What `ralphstate ARGS` approves: the first word that is not an option names
    the command."""
    named = [arg for arg in args if not arg.startswith("-")]
    if not named:
        return None
    if named[0] == "trust":
        return "trust"
    if named[0] == "review":
        for flag in ("--approve", "--revert"):
            if any(arg == flag or arg.startswith(flag + "=") for arg in args):
                return f"review {flag}"
    return None


def trust_step() -> str:
    """What to do about checks not trusted on this machine, said to whoever runs this
    command (`actor.current`): the person runs `ralphstate trust`; an agent asks the
    person, who alone may."""
    from ralphstate.core import actor

    if actor.is_person(actor.current()):
        return "run `ralphstate trust`"
    return "ask the person to trust them (only they can)"
