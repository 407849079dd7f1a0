"""The hook process: `ralphstate hook NAME [--agent NAME]`, NAME one of `agents.table.HOOKS`.

Hygiene for every hook: stdin is read once and bounded; stdout is one JSON
object or nothing; the exit code is 0, but for TaskCompleted's refusal of a task whose
criterion's check fails (exit 2, its reason on stderr: `faults.Refused`); a fault is one
line on stderr and an entry in the log, and never blocks (fail open: `hooks.faults`).
Nothing heavy is imported before a loop is known to exist (docs/explanation/design.md, "The hot
path"): each hook is a module of its own, named after it (`hooks.stop`,
`hooks.session_start`, ...), imported only when there may be a loop, and so is
`hooks.faults`, unless something went wrong.
"""

from __future__ import annotations

import os
import sys

from ralphstate.agents import table
from ralphstate.core import limits
from ralphstate.storage.system import paths

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from typing import NoReturn

    from ralphstate.agents.contract import Agent
    from ralphstate.hooks.base import Handler, HookInput, Output

USAGE = (
    f"usage: ralphstate hook {'|'.join(table.HOOKS)} [--agent NAME]\n"
    "Run by the agent's hooks with the hook input as JSON on stdin; prints one JSON"
    " object or nothing, and exits 0 (task-completed exits 2 to refuse a task).\n"
    "\n"
    "Example:\n"
    '  echo \'{"session_id": "s1", "cwd": "."}\' | ralphstate hook stop\n'
    "  ralphstate hook session-start --agent codex < input.json"
)


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
# StopFailure hook is killed with it within tens of milliseconds. Such a hook (a row of
# agents.table.HOOK_ROWS marked `detached`) reads its input, then goes on in a process
# of its own (POSIX), and its caller returns at once.
DETACHED = tuple(hook.name for hook in table.HOOK_ROWS if hook.detached)
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
    """Run one hook; never raises, returns 0 (2 only for a hook of `faults.REFUSING`
    that refuses). With `detach` (a hook process of its own, `main`), a hook in
    DETACHED finishes in the background."""
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
        out = _answer(event, args[1:], detach)
    except BaseException as exc:  # noqa: BLE001 - a hook must never crash its caller
        from ralphstate.hooks import faults

        code = faults.fail_open(event, exc)
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


def _answer(event: str, options: list[str], detach: bool) -> Output | None:
    """The hook `event`'s answer to its input on stdin; None when there is no loop here,
    the common case: then nothing more is read or imported."""
    try:
        agent = table.get(_option(options, "--agent") or "claude")
    except KeyError as exc:
        raise _fault(str(exc.args[0])) from None
    if event not in table.HOOKS:
        named = f"unknown hook {event!r}" if event else "no hook named"
        raise _fault(f"{named}; expected one of {', '.join(table.HOOKS)}")
    data = _read_stdin()
    if event == "pre-tool-use" and not (may_approve(data) or may_touch_gate(data)):
        return None  # a tool call that approves nothing: nothing to ask, nothing read
    if event == "permission-request":  # before any loop: it is the loop's start
        return _starting(agent, data) if may_start(data) else None
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
        if event in ("session-start", "stop"):  # a loop whose `.loop/` went?
            return _gone_here(agent, event, os.path.join(start, paths.LOOP_DIR_NAME))
        return None
    if event in ("session-start", "stop"):  # a loop of `start`'s own, deleted, hidden by it?
        for inner in paths.passed_over(start, loop_dir):
            told = _gone(agent, inner, event, loop_dir)
            if told is not None:
                return told
    hook_input = _parse(data) if hook_input is None else hook_input
    return _handler(event)(agent, hook_input, paths.at(loop_dir))


def _gone_here(agent: Agent, event: str, loop_dir: str) -> Output | None:
    """At a hook that finds no loop: the loop whose directory `loop_dir` was deleted
    while it was not over, said at once. The Stop hook looks only where a loop left its
    trace (`paths.traced`, one `stat`), so a stop without a loop costs what it did; a
    trace with nothing to tell is dropped."""
    if event == "stop" and not paths.traced(loop_dir):
        return None
    told = _gone(agent, loop_dir, event)
    if told is None:
        paths.drop_trace(loop_dir)
    return told


def _starting(agent: Agent, data: bytes) -> Output | None:
    """The permission-request hook's answer: asked before any loop is looked for, as
    the loop it is about may not exist yet (hooks/permission_request.py)."""
    hook_input = _parse(data)
    start = agent.project_dir(os.environ) or agent.cwd(hook_input) or os.getcwd()
    loop = paths.at(os.path.join(start, paths.LOOP_DIR_NAME))
    return _handler("permission-request")(agent, hook_input, loop)


def _gone(
    agent: Agent, loop_dir: str, event: str = "session-start", outer: str | None = None
) -> Output | None:
    """At a session start that finds no loop, or a hook that finds the `outer` loop above
    the project instead: the loop whose directory `loop_dir` was deleted while it was
    not over, said once (hooks/outside.py); looked for only where ralphstate keeps a
    record of a loop there."""
    from pathlib import Path

    from ralphstate.storage.peruser import home

    try:
        if not home.ledger_path(Path(loop_dir)).exists():
            return None
    except Exception:  # noqa: BLE001 - no home to keep records in: nothing to tell
        return None
    from ralphstate.hooks import outside

    hidden_by = None if outer is None else paths.at(outer)
    return outside.told_gone(event, agent, paths.at(loop_dir), hidden_by)


def _handler(event: str) -> Handler:
    """The hook `event`'s `handle`, from the module of this package its row names
    (agents.table.HOOK_ROWS), imported now; as cheap as naming the module in an import."""
    module = f"ralphstate.hooks.{table.hook(event).module}"
    if module not in sys.modules:
        __import__(module)
    handler: Handler = sys.modules[module].handle
    return handler


# What the command of a tool call that approves holds, besides "ralphstate": one of
# these (`core.approving.approving` and `names_approval`; tests/core/test_approving.py
# holds them together).
APPROVING_WORDS = (b"trust", b"--approve", b"--revert", b"ralphstate_approval")


def may_start(data: bytes) -> bool:
    """Whether a permission prompt may be for a loop's start, told without parsing its
    input: the input from its first `"tool_input"` on names ralphstate and init."""
    at = data.find(b'"tool_input"')
    said = (data if at < 0 else data[at:]).lower()
    return b"ralphstate" in said and b"init" in said


def may_approve(data: bytes) -> bool:
    """Whether a tool call may approve what proves a loop done, told without parsing
    its input: the input from its first `"tool_input"` on (which holds the tool's input
    wherever that key comes; the project's and the transcript's paths before it do not
    count) names ralphstate and an approving word."""
    at = data.find(b'"tool_input"')
    said = (data if at < 0 else data[at:]).lower()
    # Quotes, backslashes and continued lines the shell joins a word across (in JSON
    # a backslash and a newline are `\\\n`); `$` or a backquote may make the program
    # or an approving word (core/approving.py asks then).
    joined = said.replace(b"\\\\\\n", b"").translate(None, b"\"'\\")
    substituted = b"$" in said or b"`" in said
    if not any(word in joined for word in APPROVING_WORDS):
        return substituted and b"ralphstate" in joined
    return b"ralphstate" in joined or substituted


# What a tool call that may change what runs ralphstate's hooks holds: a hook file's
# name, Claude Code's switches (`disableAllHooks`, `enabledPlugins`), a plugin's file
# (hooks/gatefiles.py decides).
GATE_WORDS = (b"settings", b"hooks", b"plugin")


def may_touch_gate(data: bytes) -> bool:
    """Whether a tool call may change what runs ralphstate's hooks, told without parsing
    its input: the input from its first `"tool_input"` on holds one of GATE_WORDS."""
    at = data.find(b'"tool_input"')
    said = (data if at < 0 else data[at:]).lower()
    return any(word in said for word in GATE_WORDS)


def _fault(message: str) -> Exception:
    """A `faults.Fault` saying `message` (that module is imported only for a fault)."""
    from ralphstate.hooks.faults import Fault

    return Fault(message)


def _option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _read_stdin() -> bytes:
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None:
        raise _fault("no input on stdin")
    data = stream.read(limits.MAX_HOOK_INPUT_BYTES + 1)
    if len(data) > limits.MAX_HOOK_INPUT_BYTES:
        raise _fault(f"input is larger than {limits.MAX_HOOK_INPUT_BYTES} bytes")
    return data


def _parse(data: bytes) -> HookInput:
    import orjson

    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise _fault("input is not valid JSON") from None
    if not isinstance(raw, dict):
        raise _fault("input is not a JSON object")
    return raw
