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

Words are read as the shell joins them (`"ralph""state" trust`, `ralph\\state trust` and
`ralphstate tr''ust` run `ralphstate trust`); a program it does not know that names
ralphstate or a shell among its arguments may run them (`setsid ralphstate trust`,
`find -exec sh -c '...'`, `timeout -s KILL 60 ralphstate trust`), and `env -S TEXT` is
split as env splits it. Where it cannot tell, it answers UNCLEAR, so the person is
asked, whenever the command holds an approving word (`trust`, `--approve`,
`--revert`): a variable or a substitution as a program (`r=ralphstate; $r trust`),
`eval` or `sh -c` of text that is not literal, a shell that reads its commands from
its input (`bash <<< '...'`, `... | sh`), `xargs ralphstate`, a substitution as the
subcommand (`ralphstate $'\\x74rust'`), a command line over MAX_COMMAND_CHARS
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
    return APPROVAL_ENV.lower() in _joined(command)  # `RALPHSTATE_APPR''OVAL=...` too


def approving(command: str) -> str | None:
    """What the shell command `command` approves: "trust", "review --approve" or
    "review --revert"; None when it runs none of them."""
    joined = _joined(command)
    substituted = "$" in command or "`" in command
    worded = any(word in joined for word in _WORDS)
    if not worded and not (substituted and _PROGRAM in joined):
        return None  # an approving word may come of a substitution: `ralphstate $'...'`
    return _approving(command, 0, worded=worded)


def starts_loop(command: str) -> bool:
    """Whether the shell command `command` runs `ralphstate init` (or `python -m
    ralphstate init`), its program read as `approving` reads it."""
    if _PROGRAM not in command.lower():
        return False
    words = _words(command)
    for simple in split_simple(words or []):
        rest, _ = _program_on(simple)
        if not rest:
            continue
        program, args = _base(rest[0]), rest[1:]
        if program.startswith("python") and "-m" in args:
            at = args.index("-m")
            args = args[at + 2 :] if args[at + 1 : at + 2] == [_PROGRAM] else []
        elif program != _PROGRAM:
            continue
        named = [arg for arg in args if not arg.startswith("-")]
        if named[:1] == ["init"]:
            return True
    return False


def _joined(command: str) -> str:
    """`command` in lower case, as the shell joins its words: quotes, backslashes and
    line continuations left out (`ralphstate tr''ust` holds "trust")."""
    return command.lower().replace("\\\n", "").translate(_JOINING)


def _approving(command: str, depth: int, *, worded: bool = True) -> str | None:
    if len(command) > MAX_COMMAND_CHARS:
        return UNCLEAR
    substituted = "$" in command or "`" in command
    if _PROGRAM not in _joined(command) and not substituted:
        return None
    words = _words(command)
    if words is None:
        return UNCLEAR
    unclear = False
    for simple in split_simple(words):
        found = _of_simple(simple, depth)
        if found == UNCLEAR:  # a definite answer, if any, is the question asked
            unclear = True
        elif found:
            return found
    if worded and ("$(" in command or "`" in command):
        return UNCLEAR  # a substitution's output may be the program (`$(echo ...) trust`)
    return UNCLEAR if unclear else None


def _words(command: str) -> list[str] | None:
    """The command line's words and separators as a POSIX shell splits them; None when
    it does not parse, or is too long to read this way."""
    if len(command) > MAX_COMMAND_CHARS:
        return None
    import shlex  # only for a command that names ralphstate

    text = command.replace("\\\n", "").replace("`", "\n")  # a continued line is one
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def split_simple(words: list[str]) -> list[list[str]]:
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
        else:  # `$` alone: a substitution's, kept (`ralphstate $(...)` cannot be told)
            found[-1].append(word)
    return [simple for simple in found if simple]


def _of_simple(words: list[str], depth: int) -> str | None:
    """What one simple command approves, from its program on."""
    rest, wrappers = _program_on(words)
    if not rest:
        return None
    if "$" in rest[0]:
        return UNCLEAR  # a variable as the program: cannot be told
    program = _base(rest[0])
    if program == _PROGRAM:
        found = _subcommand(rest[1:])
        # `xargs ralphstate` takes its words from its input
        return UNCLEAR if found is None and "xargs" in wrappers else found
    if program.startswith("python") or program == "py":
        return _python(rest[1:])
    if program in _RUNNERS:
        named = [i for i, word in enumerate(rest[1:], 1) if _base(word) == _PROGRAM]
        return _subcommand(rest[named[0] + 1 :]) if named else None
    if program in _SHELLS:
        return _shell(rest, depth)
    if program == "eval":
        return _approving(" ".join(rest[1:]), depth + 1) if depth < _MAX_DEPTH else UNCLEAR
    return _run_later(rest, depth)


def _shell(rest: list[str], depth: int) -> str | None:
    """`sh -c TEXT` (`-c` alone or among other one-letter options: `bash -lc`): what
    TEXT approves; a shell that reads its commands from its input (`bash <<< ...`,
    `... | sh`, `sh -s`) cannot be told; a script file is not read."""
    for i, word in enumerate(rest[1:-1], 1):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return _approving(rest[i + 1], depth + 1) if depth < _MAX_DEPTH else UNCLEAR
    operands = [word for word in rest[1:] if not word.startswith(("-", "+"))]
    if not operands or any(w.startswith("-") and "s" in w[1:] for w in rest[1:]):
        return UNCLEAR
    return None


def _run_later(rest: list[str], depth: int) -> str | None:
    """A program ralphstate does not know that may run its arguments (`setsid`, `find
    -exec`, `flock FILE`, a wrapper's option with a value: `timeout -s KILL 60`): what
    the words from ralphstate, or from a shell, on approve."""
    if depth >= _MAX_DEPTH:
        return None
    tried = 0
    for j in range(1, len(rest)):
        word = rest[j]
        named = _base(word)
        if (named not in _SHELLS and named != _PROGRAM) or rest[j - 1] == "-m":
            continue
        if "/" in word and not word.startswith(("/", "~", "./")):
            continue  # a relative path (`tests/ralphstate`) names no program here
        found = _of_simple(rest[j:], depth + 1)
        if found:
            return found
        tried += 1
        if tried == _MAX_DEPTH:  # each try reads the rest once: linear, not quadratic
            return UNCLEAR
    return None


def _program_on(words: list[str]) -> tuple[list[str], set[str]]:
    """The words from the program on: assignments, reserved words and wrappers (with
    their options) passed over, `env -S TEXT` split as env splits it; and the wrappers
    passed over."""
    i, wrappers, splits = 0, set[str](), 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word) or word in _KEYWORDS:
            i += 1
        elif _base(word) in _WRAPPERS:
            i = i + 1
            wrappers.add(_base(word))
        elif "env" in wrappers and word.startswith(("-S", "--split-string")) and splits < 2:
            splits += 1
            if word in ("-S", "--split-string"):
                text, after = (words[i + 1] if i + 1 < len(words) else ""), i + 2
            else:
                text = word.partition("=")[2] if word.startswith("--") else word[2:]
                after = i + 1
            words = words[:i] + (_words(text) or []) + words[after:]
        elif wrappers and (word.startswith("-") or _DURATION.match(word)):
            i += 1
        else:
            return words[i:], wrappers
    return [], wrappers


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
            return _subcommand(args[i + 2 :]) if _ours(args[i + 1]) else None
        if arg.startswith("-m"):
            return _subcommand(args[i + 1 :]) if _ours(arg[2:]) else None
        if not arg.startswith("-"):
            return None  # a script runs, not a module
    return None


def _ours(module: str) -> bool:
    """`module` runs ralphstate's command line: `ralphstate`, `ralphstate.cli`, ..."""
    return module == _PROGRAM or module.startswith(_PROGRAM + ".")


def _subcommand(args: list[str]) -> str | None:
    """What `ralphstate ARGS` approves: the first word that is not an option names
    the command."""
    named = [arg for arg in args if not arg.startswith("-")]
    if not named:
        return None
    if "$" in named[0]:
        return UNCLEAR  # `ralphstate $'\x74rust'`, `ralphstate $(...)`: cannot be told
    if named[0] == "trust":
        return "trust"
    if named[0] == "review":
        for flag in ("--approve", "--revert"):
            if any(arg == flag or arg.startswith(flag + "=") for arg in args):
                return f"review {flag}"
        if any("$" in arg for arg in args):
            return UNCLEAR
    return None


def trust_step() -> str:
    """What to do about checks not trusted on this machine, said to whoever runs this
    command (`actor.current`): the person runs `ralphstate trust`; an agent asks the
    person, who alone may."""
    from ralphstate.core import actor

    if actor.is_person(actor.current()):
        return "run `ralphstate trust`"
    return "ask the person to trust them (only they can)"
