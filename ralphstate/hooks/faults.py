"""What a hook does when something goes wrong: it fails open.

A fault is one line on stderr and an entry in the log, and the hook allows: it never
blocks and never crashes its caller (docs/explanation/design.md, "Failure rules"). The one exit
that is not 0 is a refusal by a hook of REFUSING (TaskCompleted's refusal of a task
whose criterion's check fails): exit 2, its reason on stderr. `hooks.entry` imports
this module only when a hook raised, or a loop is there.
"""

from __future__ import annotations

import sys

from ralphstate.agents import table

# The hooks that may refuse what the agent does by exiting 2 with the reason on stderr
# (Claude Code's TaskCompleted feeds it to the model); every other exit is 0. Both sets
# are the rows of agents.table.HOOK_ROWS so marked.
REFUSING = tuple(hook.name for hook in table.HOOK_ROWS if hook.refusing)
# The hooks whose fault is no decision rather than an allow: the client goes on as if
# the hook had not run (PreToolUse: the command then runs without the person's approval,
# and what needs that approval refuses it).
UNDECIDED = tuple(hook.name for hook in table.HOOK_ROWS if hook.undecided)


class Fault(Exception):
    """Something is wrong with the input or the state: allow, and say why."""


class Unusable(Fault):
    """The loop is here but cannot be used (its state file cannot be read, parsed or
    validated, or its lock could not be had): allow, and tell the person once."""


class Refused(Exception):
    """A hook of REFUSING refuses: its message goes to stderr and the process exits 2."""


def fail_open(event: str, exc: BaseException) -> int:
    """The exit code of the hook `event` that raised `exc`, said on stderr and in the
    log: 0, but 2 for a refusal of a hook of REFUSING."""
    if isinstance(exc, Refused):
        if event in REFUSING:
            return refuse(str(exc))
        complain(event, f"unexpected refusal ({exc})")
    elif isinstance(exc, Fault):
        complain(event, str(exc))
    else:
        complain(event, f"unexpected error ({type(exc).__name__}: {exc})", exc)
    return 0


def refuse(reason: str) -> int:
    """Write the refusal's reason to stderr: 2, or 0 when it could not be written (a
    refusal the model would not be told of)."""
    try:
        sys.stderr.write(reason.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        return 0
    return 2


def complain(event: str, message: str, exc: BaseException | None = None) -> None:
    """Tell the person on stderr, and the log, what went wrong; the hook allows (or,
    for a hook of UNDECIDED, decides nothing)."""
    note(event, f"{message}; {'no decision' if event in UNDECIDED else 'allowing'}", exc)


def note(event: str, message: str, exc: BaseException | None = None) -> None:
    """One line on stderr and in the log: `ralphstate hook EVENT: MESSAGE.`"""
    line = f"ralphstate hook{' ' + event if event else ''}: {message}."
    where = None
    try:
        from ralphstate.storage.peruser import logs

        where = logs.write(line, exc)
    except Exception:  # noqa: BLE001 - the log is a convenience; stderr still says it
        pass
    if exc is not None and where is not None:
        line += f" Details in {where}."
    try:
        sys.stderr.write(line + "\n")
    except (OSError, ValueError, AttributeError):  # stderr closed: the log has it
        pass
