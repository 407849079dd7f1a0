"""What `launch.py` does (its docstring says what and why): find the plugin's ralphstate
and hand a hook or a command over to it.

A hook runs at every stop of every session, so nothing is imported before the decision
needs it, in this order: a project with no `.loop/` whose ralphstate is at hand (the
same test the hook's own hot path makes, `ralphstate.storage.system.paths.find_dir`, from
`$CLAUDE_PROJECT_DIR`) is answered at once, with nothing; the settings files are read
(`plugin_settings.py`, imported for it) only when there may be a loop, parsed only when
they name ralphstate; JSON is read with the scanner `json` itself uses, without
importing `json` and `re`; and after the hook the process ends without tearing the
interpreter down, as the hook's own command does (`ralphstate.hooks.entry.main`).
Standard library only, Python 3.8 syntax.
"""

import os
import sys

import plugin_env
from plugin_env import ENV_DATA, loads, plugin_version, ready

TYPE_CHECKING = False  # `typing` is not imported at run time
if TYPE_CHECKING:
    from typing import NoReturn

# ralphstate's hooks (ralphstate.agents.table.HOOK_ROWS) by their Claude Code events, and
# those that refuse: copies, held to the table by tests/hooks/test_hook_list.py.
EVENTS = {
    "stop": "Stop",
    "session-start": "SessionStart",
    "pre-compact": "PreCompact",
    "stop-failure": "StopFailure",
    "post-tool-use": "PostToolUse",
    "task-completed": "TaskCompleted",
    "pre-tool-use": "PreToolUse",
    "session-end": "SessionEnd",
    "permission-request": "PermissionRequest",
    "config-change": "ConfigChange",
}
# The hooks whose exit 2 (ralphstate's refusal, its reason on stderr) is passed through.
REFUSING = ("task-completed",)
HOOK_CODE = "from ralphstate.hooks.entry import main; main()"
# The hook's own tests for a loop (ralphstate.storage.system.paths: ENV_DIR, LOOP_DIR_NAME) and
# the variable that names Claude Code's project (ralphstate.agents.table).
ENV_LOOP_DIR = "RALPHSTATE_DIR"
LOOP_DIR_NAME = ".loop"
ENV_PROJECT = "CLAUDE_PROJECT_DIR"
# Set for the command bin/ralphstate runs: the plugin's hooks run in that session, so
# the loop is enforced (ralphstate.loop.enforcement.ENV_PLUGIN).
ENV_PLUGIN = "RALPHSTATE_PLUGIN"
# ralphstate's own bound on hook input (ralphstate.core.limits.MAX_HOOK_INPUT_BYTES): one
# byte more is read, so the hook can tell an oversized input and refuse it.
MAX_INPUT_BYTES = 4 * 1024 * 1024
# What a Bash command that approves holds besides "ralphstate"
# (ralphstate.hooks.entry.APPROVING_WORDS): a PreToolUse call without them is let go.
APPROVING_WORDS = (b"trust", b"--approve", b"--revert", b"ralphstate_approval")
# What a tool call that may change what runs ralphstate's hooks holds
# (ralphstate.hooks.entry.GATE_WORDS): asked of the person too.
GATE_WORDS = (b"settings", b"hooks", b"plugin")


def run(argv: "list[str]") -> "NoReturn":
    """The launcher's process: `main`, then its end. A hook's process ends without the
    interpreter's teardown of what the hook loaded, once its output is written."""
    code = main(argv)
    if argv[:1] in (["cli"], ["build"]):
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


def main(argv: "list[str]") -> int:
    command = argv[0] if argv else ""
    if command == "cli":
        return cli(argv[1:])
    if command == "build":  # started by a hook, which took the lock for it
        home = plugin_env.data_dir()
        return 0 if plugin_env.build(home, plugin_version(), locked="--locked" in argv) else 1
    code = 0
    try:
        data = _read_stdin()
        if command not in EVENTS:
            return 0
        if command == "pre-tool-use" and not (_may_approve(data) or _may_touch_gate(data)):
            return 0  # a tool call that approves nothing (ralphstate.hooks.entry)
        starting = command == "permission-request"
        if starting and not _may_start(data):
            return 0  # a prompt for anything but a loop's start (ralphstate.hooks.entry)
        version = plugin_version()
        if len(data) <= MAX_INPUT_BYTES and not starting and _no_loop() and _at_hand(version):
            return 0  # the common case: the hook would find no loop, and say nothing
        if _installed_in_settings(command, data):
            return 0
        out, code = _run(command, data, version)
        if out:
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - a launcher fault must never block a stop
        return 0
    return code if command in REFUSING and code == 2 else 0


# -- whether there is anything to do -------------------------------------------------------


def _may_approve(data: bytes) -> bool:
    """ralphstate.hooks.entry.may_approve: what follows the input's first "tool_input"
    names ralphstate and an approving word."""
    at = data.find(b'"tool_input"')
    said = (data if at < 0 else data[at:]).lower()
    return b"ralphstate" in said and any(word in said for word in APPROVING_WORDS)


def _may_touch_gate(data: bytes) -> bool:
    """ralphstate.hooks.entry.may_touch_gate: what follows the input's first
    "tool_input" holds a word of a file that runs ralphstate's hooks."""
    at = data.find(b'"tool_input"')
    said = (data if at < 0 else data[at:]).lower()
    return any(word in said for word in GATE_WORDS)


def _may_start(data: bytes) -> bool:
    """ralphstate.hooks.entry.may_start: the prompt is for a command that names
    ralphstate and init (the hook tells whether anybody can answer it)."""
    at = data.find(b'"tool_input"')
    said = (data if at < 0 else data[at:]).lower()
    return b"ralphstate" in said and b"init" in said


def _no_loop() -> bool:
    """True when ralphstate's hook would find no loop, told without reading the input:
    `$RALPHSTATE_DIR` unset, `$CLAUDE_PROJECT_DIR` set, and no `.loop/` at or above it.
    False when it cannot be told so (the hook then finds the project from the input)."""
    if os.environ.get(ENV_LOOP_DIR):
        return False
    start = os.environ.get(ENV_PROJECT)
    if not start:
        return False
    here = os.path.abspath(start)
    while True:
        if os.path.isdir(os.path.join(here, LOOP_DIR_NAME)):
            return False
        parent = os.path.dirname(here)
        if parent == here:
            return True
        here = parent


def _at_hand(version: str) -> bool:
    """Whether a ralphstate of `version` would run the hook (the plugin's environment
    built for it, or one this interpreter imports), so there is nothing to tell the
    person about its environment; nothing of ralphstate's but its version is imported."""
    where = os.environ.get(ENV_DATA)
    if where and ready(where, version):
        return True
    try:
        import ralphstate

        if getattr(ralphstate, "__version__", None) != version:
            return False
        init = ralphstate.__file__
    except Exception:  # noqa: BLE001 - absent, or broken: the hook's path says which
        return False
    return bool(init) and os.path.isfile(os.path.join(os.path.dirname(init), "hooks", "entry.py"))


def _installed_in_settings(event: str, data: bytes) -> bool:
    """True when a Claude Code settings file already runs `ralphstate hook EVENT`. The
    module that reads them, beside this one, is imported only now that the hook may have
    a loop; launch.py keeps their directory on sys.path for its own import only."""
    here = os.path.dirname(os.path.abspath(__file__))
    put = here not in sys.path
    if put:
        sys.path.insert(0, here)
    try:
        import plugin_settings
    finally:
        if put:
            sys.path.remove(here)
    return plugin_settings.installed(event, EVENTS, data, os.environ.get(ENV_PROJECT))


# -- running the hook ----------------------------------------------------------------------


def _read_stdin() -> bytes:
    try:
        if sys.stdin is None:
            return b""
        return sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError):
        return b""


def _run(event: str, data: bytes, version: str) -> "tuple[bytes, int]":
    """The real hook's stdout, checked to be one JSON object, or a notice; and its exit
    code (the hook's stderr is this process's)."""
    run_hook = _import_run_hook(version)
    if run_hook is not None:
        return _checked(_in_process(run_hook, event, data))
    where = os.environ.get(ENV_DATA)
    if not where:  # said when a session starts, not after every turn
        return (_notice(no_data()) if event == "session-start" else b""), 0
    from pathlib import Path

    home = Path(where)
    python = ready(home, version)
    if python is not None:
        run_hook = _import_from_env(where, version)
        if run_hook is not None:
            return _checked(_in_process(run_hook, event, data))
        import subprocess

        try:
            done = subprocess.run(
                [python, "-I", "-c", HOOK_CODE, event], input=data, stdout=subprocess.PIPE
            )
        except OSError as exc:
            _say(f"ralphstate: could not run {python} ({exc}); allowing.")
            return b"", 0
        return _only_json(done.stdout), done.returncode
    if plugin_env.building(home, version):
        return _notice(preparing(version) + for_the_shell()), 0
    if plugin_env.failed(home, version) and event != "session-start":
        return _notice(build_failed(home, version)), 0
    try:
        plugin_env.start_build(home, version)
    except OSError as exc:
        return _notice(f"ralphstate: could not start building its environment ({exc})."), 0
    return _notice(preparing(version) + for_the_shell()), 0


def _checked(ran: "tuple[bytes, int]") -> "tuple[bytes, int]":
    return _only_json(ran[0]), ran[1]


def _import_run_hook(version: str) -> "object | None":
    """ralphstate's `run_hook` when this interpreter imports the plugin's version of it."""
    try:
        import ralphstate

        if getattr(ralphstate, "__version__", None) != version:
            return None
        from ralphstate.hooks.entry import run_hook
    except Exception:  # noqa: BLE001 - absent, another version or broken
        return None
    return run_hook


def _import_from_env(data: str, version: str) -> "object | None":
    """The environment's `run_hook`, imported into this process when this interpreter is
    of the Python version the environment was built with (its site-packages are for
    that version): one interpreter start instead of two, at every hook. None otherwise,
    and the environment's own Python runs the hook."""
    venv = plugin_env.venv_dir(data, version)
    if os.name == "nt":
        packages = os.path.join(venv, "Lib", "site-packages")
        built = _pyvenv_version(venv)
        if built != "%d.%d" % sys.version_info[:2]:
            return None
    else:
        packages = os.path.join(venv, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    if not os.path.isdir(packages):
        return None
    sys.path.insert(0, packages)
    return _import_run_hook(version)


def _pyvenv_version(venv: str) -> str:
    """`3.11` from the environment's pyvenv.cfg (`version = 3.11.7`), "" if unknown."""
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as f:
            lines = f.read(plugin_env.MAX_MANIFEST_BYTES).splitlines()
    except (OSError, ValueError):
        return ""
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            return ".".join(value.strip().split(".")[:2])
    return ""


def _in_process(run_hook: object, event: str, data: bytes) -> "tuple[bytes, int]":
    """The hook's stdout and its exit code, run in this process."""
    import io  # already imported by the interpreter for its own streams: free

    stdin, stdout = sys.stdin, sys.stdout
    captured = io.BytesIO()
    # Kept in locals: a wrapper that is garbage-collected closes the buffer under it.
    fake_in = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    fake_out = io.TextIOWrapper(captured, encoding="utf-8", write_through=True)
    sys.stdin, sys.stdout = fake_in, fake_out
    try:
        code = run_hook([event])  # type: ignore[operator]
        fake_out.flush()
        return captured.getvalue(), code if isinstance(code, int) else 0
    finally:
        sys.stdin, sys.stdout = stdin, stdout


def _only_json(out: bytes) -> bytes:
    text = out.strip()
    if not text:
        return b""
    try:
        value = loads(text.decode("utf-8"))
    except ValueError:
        value = None
    if not isinstance(value, dict):
        _say("ralphstate: the hook printed something that is not one JSON object; ignored.")
        return b""
    return text + b"\n"


# -- what the person is told ---------------------------------------------------------------


def preparing(version: str) -> str:
    return (
        f"ralphstate: setting up its Python environment for plugin version {version} (first"
        " use, about a minute at most); loops are not enforced until it is ready."
    )


def for_the_shell() -> str:
    """At first use, for a person whose shell has no `ralphstate` of its own (the
    plugin's `bin/ralphstate` is on the agent's PATH only): the one command that puts
    one there, from the plugin's own files; "" when the shell has one."""
    import shutil

    found = shutil.which("ralphstate")
    if found and not os.path.realpath(found).startswith(os.path.realpath(plugin_env.ROOT)):
        return ""
    return (
        " For `ralphstate run`, `status` and `report` in your own shell, install the"
        f' command too: pipx install "{plugin_env.ROOT}"'
    )


def build_failed(data: "os.PathLike[str]", version: str) -> str:
    return (
        "ralphstate: its Python environment could not be built (see"
        f" {build_log(data, version)}); loops are not enforced. A new session tries again."
    )


def build_log(data: "os.PathLike[str]", version: str) -> str:
    return os.path.join(plugin_env.env_home(data, version), "build.log")


def no_data() -> str:
    return (
        "ralphstate: this Claude Code gives the plugin no data directory"
        " (CLAUDE_PLUGIN_DATA) for its environment, so loops are not enforced; install"
        f' ralphstate from the plugin\'s own files: python3 -m pip install "{plugin_env.ROOT}"'
    )


def _notice(line: str) -> bytes:
    import json

    return json.dumps({"systemMessage": line}).encode("utf-8") + b"\n"


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


# -- bin/ralphstate ------------------------------------------------------------------------


def cli(args: "list[str]") -> int:
    """`ralphstate ARGS` with the plugin's ralphstate, building its environment first
    when it is not built yet (the person or the agent asked for this command: it waits)."""
    os.environ[ENV_PLUGIN] = plugin_env.ROOT
    version = plugin_version()
    if _import_run_hook(version) is not None:
        from ralphstate.__main__ import main as ralphstate_main

        return ralphstate_main(args)
    data = plugin_env.data_dir()
    if data is None:
        _say(no_data())
        return 1
    python = ready(data, version)
    if python is None:
        _say(f"ralphstate: setting up its Python environment for plugin version {version}...")
        python = plugin_env.wait_for_build(data, version)
    if python is None:
        log = build_log(data, version)
        _say(f"ralphstate: its Python environment could not be built; see {log}.")
        return 1
    command = [python, "-I", "-m", "ralphstate", *args]
    if os.name != "nt":
        os.execv(command[0], command)
    import subprocess

    try:
        return subprocess.run(command).returncode
    except KeyboardInterrupt:
        return 130
