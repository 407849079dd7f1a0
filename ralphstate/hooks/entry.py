"""The hook process: `ralphstate hook NAME [--agent NAME]`, NAME one of `agents.table.HOOKS`.

Hygiene for every hook: stdin is read once and bounded; stdout is one JSON
object or nothing; the exit code is 0, but for TaskCompleted's refusal of a task whose
criterion's check fails (exit 2, its reason on stderr: `Refused`); a fault is one line
on stderr and an entry in the log, and never blocks (fail open). Nothing heavy is imported before a
loop is known to exist (docs/design.md, "The hot path"): the handlers, which read and
change the loop, are in `hooks.handlers`, imported only when there may be a loop.
"""

from __future__ import annotations

import os
import sys

from ralphstate.agents import table as adapters
from ralphstate.core import limits
from ralphstate.storage import paths

TYPE_CHECKING = False  # `typing` is not imported at run time: docs/design.md, "The hot path"
if TYPE_CHECKING:
    from typing import NoReturn

    Output = dict[str, object]
    HookInput = dict[str, object]

USAGE = (
    f"usage: ralphstate hook {'|'.join(adapters.HOOKS)} [--agent NAME]\n"
    "Run by the agent's hooks with the hook input as JSON on stdin; prints one JSON"
    " object or nothing, and exits 0 (task-completed exits 2 to refuse a task).\n"
    "\n"
    "Example:\n"
    '  echo \'{"session_id": "s1", "cwd": "."}\' | ralphstate hook stop\n'
    "  ralphstate hook session-start --agent codex < input.json"
)
# The hooks that may refuse what the agent does by exiting 2 with the reason on stderr
# (Claude Code's TaskCompleted feeds it to the model); every other exit is 0.
REFUSING = ("task-completed",)


class Fault(Exception):
    """Something is wrong with the input or the state: allow, and say why."""


class Refused(Exception):
    """A hook of REFUSING refuses: its message goes to stderr and the process exits 2."""


def main(args: list[str] | None = None) -> NoReturn:
    """A hook process: run the hook named in `args` (default: the command line's), then
    end the process. The command `ralphstate install` writes is

        "PYTHON" -I -c "from ralphstate.hooks.entry import main; main()" stop

    Everything is written and every file closed when the hook returns, so the process
    skips the interpreter's teardown of the modules it loaded (`os._exit`): it runs at
    every stop of every session."""
    code = run_hook(sys.argv[1:] if args is None else args, detach=True)
    for stream in (sys.stdout, sys.stderr):
        try:  # contextlib is not imported on the hook's path
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


# Hooks whose output the client ignores and whose process it does not wait for: Claude
# Code in print mode exits right after a turn that ended on an API error, and its
# StopFailure hook is killed with it within tens of milliseconds. Such a hook reads its
# input, then goes on in a process of its own (POSIX), and its caller returns at once.
DETACHED = ("stop-failure",)
# Set (to anything), a detached hook runs in the foreground: its faults reach stderr and
# its caller waits for it (tests, and a person debugging the hook).
FOREGROUND = "RALPHSTATE_HOOK_FOREGROUND"


def _detach() -> None:
    """Leave the client's process group: the parent returns 0 now, the child goes on with
    stdin, stdout and stderr on the null device. Nothing happens without `os.fork`."""
    fork = getattr(os, "fork", None)
    if fork is None:  # Windows: run inline, as fast as it can
        return
    if fork():
        os._exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)


def run_hook(args: list[str], detach: bool = False) -> int:
    """Run one hook; never raises, returns 0 (2 only for a hook of REFUSING that
    refuses). With `detach` (a hook process of its own, `main`), a hook in DETACHED
    finishes in the background."""
    real_stdout = sys.stdout
    out: Output | None = None
    code = 0
    event = args[0] if args else ""
    if real_stdout is None and event not in DETACHED:
        return 0  # stdout closed: no answer could reach the agent, so nothing is done
    try:
        sys.stdout = sys.stderr  # nothing but our one JSON object reaches stdout
        if event in ("-h", "--help"):
            real_stdout.write(USAGE + "\n")
            return 0
        try:
            agent = adapters.get(_option(args[1:], "--agent") or "claude")
        except KeyError as exc:
            raise Fault(str(exc.args[0])) from None
        if not event:
            raise Fault(f"no hook named; expected one of {', '.join(adapters.HOOKS)}")
        if event not in adapters.HOOKS:
            raise Fault(f"unknown hook {event!r}; expected one of {', '.join(adapters.HOOKS)}")
        data = _read_stdin()
        if detach and event in DETACHED and not os.environ.get(FOREGROUND):
            _detach()
        hook_input = None
        # Where the project is: the agent's variable for it, else its input's cwd.
        start = agent.project_dir(os.environ)
        if not start:  # an agent that names no project in the environment: its input does
            hook_input = _parse(data)
            start = agent.cwd(hook_input) or os.getcwd()
        loop_dir = paths.find_dir(start)
        if loop_dir is None:
            return 0  # the common case: no loop here, nothing more to read or import
        from ralphstate.hooks.handlers import HANDLERS

        hook_input = _parse(data) if hook_input is None else hook_input
        out = HANDLERS[event](agent, hook_input, paths.at(loop_dir))
    except Refused as exc:
        if event in REFUSING:
            code = _refuse(str(exc))
        else:
            complain(event, f"unexpected refusal ({exc})")
    except Fault as exc:
        complain(event, str(exc))
    except BaseException as exc:  # noqa: BLE001 - a hook must never crash its caller
        complain(event, f"unexpected error ({type(exc).__name__}: {exc})", exc)
    finally:
        sys.stdout = real_stdout
    if out:
        import orjson

        try:
            real_stdout.buffer.write(orjson.dumps(out) + b"\n")
            real_stdout.flush()
        except (OSError, ValueError, AttributeError):
            pass
    return code


def _refuse(reason: str) -> int:
    """Write the refusal's reason to stderr: 2, or 0 when it could not be written (a
    refusal the model would not be told of)."""
    try:
        sys.stderr.write(reason.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        return 0
    return 2


def _option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def complain(event: str, message: str, exc: BaseException | None = None) -> None:
    """Tell the person on stderr, and the log, what went wrong; the hook allows."""
    note(event, f"{message}; allowing", exc)


def note(event: str, message: str, exc: BaseException | None = None) -> None:
    """One line on stderr and in the log: `ralphstate hook EVENT: MESSAGE.`"""
    line = f"ralphstate hook{' ' + event if event else ''}: {message}."
    where = None
    try:
        from ralphstate.storage import logs

        where = logs.write(line, exc)
    except Exception:  # noqa: BLE001
        pass
    if exc is not None and where is not None:
        line += f" Details in {where}."
    try:
        sys.stderr.write(line + "\n")
    except (OSError, ValueError, AttributeError):  # stderr closed: the log has it
        pass


def _read_stdin() -> bytes:
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None:
        raise Fault("no input on stdin")
    data = stream.read(limits.MAX_HOOK_INPUT_BYTES + 1)
    if len(data) > limits.MAX_HOOK_INPUT_BYTES:
        raise Fault(f"input is larger than {limits.MAX_HOOK_INPUT_BYTES} bytes")
    return data


def _parse(data: bytes) -> HookInput:
    import orjson

    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise Fault("input is not valid JSON") from None
    if not isinstance(raw, dict):
        raise Fault("input is not a JSON object")
    return raw
