"""The Claude Code plugin's launcher: `launch.py stop|session-start|pre-compact|stop-failure|
post-tool-use|task-completed`, `cli ARGS`.

Claude Code runs it from `hooks/hooks.json` with the hook input on stdin, and the
plugin's `bin/ralphstate` runs it as `launch.py cli ARGS`. It finds a ralphstate of
the plugin's own version (`.claude-plugin/plugin.json`) and hands the work over:

1. ralphstate of that version importable by this interpreter: run it in this process;
2. else the plugin's own environment, `${CLAUDE_PLUGIN_DATA}/venv`, once built for that
   version: imported into this process when this interpreter is of the Python version
   it was built with, else run by its own Python in isolated mode;
3. else build that environment (`launch.py build`: `python -m venv`, then pip installs
   the plugin's own files with their dependencies). A hook starts the build in a
   detached process and allows at once, with a one-line `systemMessage` saying loops are
   not enforced until it is ready; `cli` builds in the foreground and then runs.

One build at a time (a lock file beside the environment); the environment is rebuilt
when the plugin's version changes; a build that failed is tried again at the next
SessionStart (or `cli`), and until then each hook says so in one line, naming the log.

When `ralphstate install` has already put the same hook into one of Claude Code's
settings files, the hook stays silent, so one stop is never judged twice.

Whatever happens a hook exits 0 and writes to stdout nothing but one JSON object: a
launcher fault must never block a stop. The one exception is ralphstate's own refusal of
a task (`task-completed`, Claude Code's TaskCompleted): ralphstate exits 2 with the reason
on stderr, and the launcher passes both through (REFUSING).

Which Python runs this file: hooks.json tries `python3`, then `python`, then `py -3`,
joined with `||` (bin/ralphstate does the same). Claude Code runs hook commands with sh
on macOS and Linux and with Git Bash on Windows, where a python.org install has `py` and
often no `python3`, and where `python3` may be the Microsoft Store stub that exits
non-zero without reading stdin; `||` moves on to the next interpreter only when the
previous one could not run this file, because this file itself exits 0 (TaskCompleted's
command passes an exit 2 through instead of trying the next interpreter). The file
uses the standard library only and keeps to syntax that Python 3.8 accepts (macOS ships
3.9 as python3); the environment it builds needs 3.10 or newer.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

EVENTS = {
    "stop": "Stop",
    "session-start": "SessionStart",
    "pre-compact": "PreCompact",
    "stop-failure": "StopFailure",
    "post-tool-use": "PostToolUse",
    "task-completed": "TaskCompleted",
}
# The hooks whose exit 2 (ralphstate's refusal, its reason on stderr) is passed through.
REFUSING = ("task-completed",)
ROOT = Path(__file__).resolve().parent.parent
ENV_DATA = "CLAUDE_PLUGIN_DATA"
HOOK_CODE = "from ralphstate.hooks.entry import main; main()"
# A build that holds the lock longer than this is taken to have died.
BUILD_STALE_SECONDS = 900
BUILD_STEP_TIMEOUT = 600
# The files of the plugin root that pip needs to build the package.
SOURCES = ("pyproject.toml", "README.md", "ralphstate")
# The same recognition `ralphstate install` uses for its own settings entries
# (ralphstate.install.command): the interpreter importing the hook (`-I -c ...`), the
# hook script by its path (development builds), and the forms older versions wrote (the
# console script, `python -m ralphstate hook`).
_OWN = re.compile(
    "|".join(
        prefix + r"(stop-failure|stop|session-start|pre-compact|post-tool-use|task-completed)"
        r"(?=[\s\"';]|$)"
        for prefix in (
            (
                r"""(?:^|\s)-c\s+["']?from\s+ralphstate\.hooks\.entry\s+"""
                r"""import\s+main\s*;\s*main\(\)["']?\s+"""
            ),
            r"""(?:^|[\s"'/\\])ralphstate[/\\]hooks[/\\]__main__\.py["']?\s+""",
            r"""(?:^|[\s"'/\\])ralphstate(?:\.exe)?["']?\s+hook\s+""",
            r"(?:^|\s)-m\s+ralphstate\s+hook\s+",
        )
    ),
    re.IGNORECASE,
)
# ralphstate's own bound on hook input (ralphstate.core.limits.MAX_HOOK_INPUT_BYTES): one
# byte more is read, so the hook can tell an oversized input and refuse it.
MAX_INPUT_BYTES = 4 * 1024 * 1024
MAX_MANIFEST_BYTES = 64 * 1024


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "cli":
        return cli(argv[1:])
    if command == "build":  # started by a hook, which took the lock for it
        return 0 if build(data_dir(), plugin_version(), locked="--locked" in argv) else 1
    code = 0
    try:
        data = _read_stdin()
        if command not in EVENTS or _installed_in_settings(command, data):
            return 0
        out, code = _run(command, data)
        if out:
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - a launcher fault must never block a stop
        return 0
    return code if command in REFUSING and code == 2 else 0


# -- the plugin and its environment ------------------------------------------------------


def plugin_version() -> str:
    """The plugin's version, from its manifest; "" when it cannot be read."""
    try:
        with open(ROOT / ".claude-plugin" / "plugin.json", "rb") as f:
            version = json.loads(f.read(MAX_MANIFEST_BYTES).decode("utf-8")).get("version")
    except (OSError, ValueError, AttributeError):
        return ""
    return version if isinstance(version, str) else ""


def data_dir() -> Path | None:
    """Where the plugin keeps its environment: `$CLAUDE_PLUGIN_DATA`, which Claude Code
    gives hooks. The Bash tool's commands (bin/ralphstate) do not get it, so there it is
    worked out the way Claude Code names it: `<config>/plugins/data/<id>`, the id being
    `NAME@MARKETPLACE` for a plugin copied into `<config>/plugins/cache/MARKETPLACE/NAME/
    VERSION`, else `NAME@inline` (`--plugin-dir`), with every character other than
    letters, digits, `_` and `-` replaced by `-`."""
    given = os.environ.get(ENV_DATA)
    if given:
        return Path(given)
    config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    try:
        cache = (config / "plugins" / "cache").resolve()
        copied = ROOT.parent.parent.parent == cache
    except OSError:
        copied = False
    ident = f"{ROOT.parent.name}@{ROOT.parent.parent.name}" if copied else "ralphstate@inline"
    return config / "plugins" / "data" / re.sub(r"[^A-Za-z0-9_-]", "-", ident)


def venv_python(venv: Path) -> Path:
    if os.name == "nt":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def ready(data: Path, version: str) -> Path | None:
    """The environment's Python when it is built for `version`, else None."""
    venv = data / "venv"
    try:
        built = (venv / "ralphstate-plugin-version").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    python = venv_python(venv)
    return python if built == version and version and python.exists() else None


def failed(data: Path, version: str) -> bool:
    try:
        return (data / "build-failed").read_text(encoding="utf-8") == version
    except (OSError, ValueError):
        return False


def building(data: Path) -> bool:
    try:
        return time.time() - (data / "build.lock").stat().st_mtime < BUILD_STALE_SECONDS
    except OSError:
        return False


def _take_lock(data: Path) -> bool:
    lock = data / "build.lock"
    for _ in range(2):
        try:
            fd = os.open(str(lock), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            if building(data):
                return False
            try:  # a build that died holding it
                lock.unlink()
            except OSError:
                return False
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return True
    return False


def _release_lock(data: Path) -> None:
    with contextlib.suppress(OSError):
        (data / "build.lock").unlink()


def build(data: Path | None, version: str, locked: bool = False) -> bool:
    """Build the environment for `version` under `data`; False when it could not be
    built or another process is building it. Its output goes to `data/build.log`.
    `locked`: the caller holds the build lock for this process."""
    if data is None or not version:
        return False
    data.mkdir(parents=True, exist_ok=True)
    if not locked and not _take_lock(data):
        return False
    try:
        if ready(data, version):
            return True
        ok = _build(data, version)
        marker = data / "build-failed"
        if ok:
            if marker.exists():
                marker.unlink()
        else:
            marker.write_text(version, encoding="utf-8")
        return ok
    finally:
        _release_lock(data)


def _build(data: Path, version: str) -> bool:
    venv, source = data / "venv", data / "source"
    with open(data / "build.log", "w", encoding="utf-8") as log:
        log.write(f"ralphstate plugin {version}: building {venv} from {ROOT}\n")
        log.write(f"with {sys.executable} (Python {sys.version.split()[0]})\n")
        log.flush()
        if sys.version_info < (3, 10):
            log.write("ralphstate needs Python 3.10 or newer to run.\n")
            return False
        try:
            shutil.rmtree(venv, ignore_errors=True)
            shutil.rmtree(source, ignore_errors=True)
            # pip builds in the directory it is given: a copy, so the plugin's files
            # (a checkout, or Claude Code's cache) are never written to.
            source.mkdir(parents=True)
            for name in SOURCES:
                if (ROOT / name).is_dir():
                    shutil.copytree(
                        ROOT / name,
                        source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
                    )
                else:
                    shutil.copy2(ROOT / name, source / name)
            python = venv_python(venv)
            steps = [
                [sys.executable, "-m", "venv", str(venv)],
                [str(python), "-m", "pip", "install", "--no-input", "--quiet", str(source)],
                [str(python), "-I", "-c", "import ralphstate; print(ralphstate.__version__)"],
            ]
            for step in steps:
                log.write("$ " + " ".join(step) + "\n")
                log.flush()
                done = subprocess.run(
                    step,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    timeout=BUILD_STEP_TIMEOUT,
                    cwd=str(data),
                )
                out = done.stdout.decode("utf-8", "replace")
                log.write(out)
                if done.returncode != 0:
                    log.write(f"exit status {done.returncode}\n")
                    return False
            if out.strip() != version:
                log.write(f"the environment has ralphstate {out.strip()}, not {version}\n")
                return False
            (venv / "ralphstate-plugin-version").write_text(version, encoding="utf-8")
            log.write("ready\n")
            return True
        except (OSError, subprocess.SubprocessError) as exc:
            log.write(f"{type(exc).__name__}: {exc}\n")
            return False
        finally:
            shutil.rmtree(source, ignore_errors=True)


def start_build(data: Path) -> None:
    """Take the build lock and start `launch.py build` in a detached process, which
    releases it: the hook that starts it returns at once, and the build goes on after
    the session ends. Nothing is started when another process holds the lock."""
    if not _take_lock(data):
        return
    try:
        _spawn_build(data)
    except BaseException:
        _release_lock(data)
        raise


def _spawn_build(data: Path) -> None:
    env = dict(os.environ)
    env[ENV_DATA] = str(data)
    options: dict[str, object] = {}
    if os.name == "nt":
        flags = getattr(subprocess, "DETACHED_PROCESS", 0)
        options["creationflags"] = flags | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    else:
        options["start_new_session"] = True
    subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "build", "--locked"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(data),
        close_fds=True,
        **options,  # type: ignore[call-overload]
    )


# -- the hooks -----------------------------------------------------------------------------


def preparing(version: str) -> str:
    return (
        f"ralphstate: setting up its Python environment for plugin version {version} (first"
        " use, about a minute at most); loops are not enforced until it is ready."
    )


def build_failed(data: Path) -> str:
    return (
        "ralphstate: its Python environment could not be built (see"
        f" {data / 'build.log'}); loops are not enforced. A new session tries again."
    )


def no_data() -> str:
    return (
        "ralphstate: this Claude Code gives the plugin no data directory"
        " (CLAUDE_PLUGIN_DATA) for its environment, so loops are not enforced; install"
        f' ralphstate from the plugin\'s own files: python3 -m pip install "{ROOT}"'
    )


def _read_stdin() -> bytes:
    try:
        if sys.stdin is None:
            return b""
        return sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError):
        return b""


def _run(event: str, data: bytes) -> tuple[bytes, int]:
    """The real hook's stdout, checked to be one JSON object, or a notice; and its exit
    code (the hook's stderr is this process's)."""
    version = plugin_version()
    run_hook = _import_run_hook(version)
    if run_hook is not None:
        return _checked(_in_process(run_hook, event, data))
    where = os.environ.get(ENV_DATA)
    if not where:  # said when a session starts, not after every turn
        return (_notice(no_data()) if event == "session-start" else b""), 0
    home = Path(where)
    python = ready(home, version)
    if python is not None:
        run_hook = _import_from_env(home, version)
        if run_hook is not None:
            return _checked(_in_process(run_hook, event, data))
        try:
            done = subprocess.run(
                [str(python), "-I", "-c", HOOK_CODE, event], input=data, stdout=subprocess.PIPE
            )
        except OSError as exc:
            _say(f"ralphstate: could not run {python} ({exc}); allowing.")
            return b"", 0
        return _only_json(done.stdout), done.returncode
    if building(home):
        return _notice(preparing(version)), 0
    if failed(home, version) and event != "session-start":
        return _notice(build_failed(home)), 0
    try:
        home.mkdir(parents=True, exist_ok=True)
        start_build(home)
    except OSError as exc:
        return _notice(f"ralphstate: could not start building its environment ({exc})."), 0
    return _notice(preparing(version)), 0


def _checked(ran: tuple[bytes, int]) -> tuple[bytes, int]:
    return _only_json(ran[0]), ran[1]


def _notice(line: str) -> bytes:
    return json.dumps({"systemMessage": line}).encode("utf-8") + b"\n"


def _import_run_hook(version: str) -> object | None:
    """ralphstate's `run_hook` when this interpreter imports the plugin's version of it."""
    try:
        import ralphstate

        if getattr(ralphstate, "__version__", None) != version:
            return None
        from ralphstate.hooks.entry import run_hook
    except Exception:  # noqa: BLE001 - absent, another version or broken
        return None
    return run_hook


def _import_from_env(data: Path, version: str) -> object | None:
    """The environment's `run_hook`, imported into this process when this interpreter is
    of the Python version the environment was built with (its site-packages are for
    that version): one interpreter start instead of two, at every hook. None otherwise,
    and the environment's own Python runs the hook."""
    venv = data / "venv"
    if os.name == "nt":
        packages = venv / "Lib" / "site-packages"
        built = _pyvenv_version(venv)
        if built != "%d.%d" % sys.version_info[:2]:
            return None
    else:
        packages = venv / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages"
    if not packages.is_dir():
        return None
    sys.path.insert(0, str(packages))
    return _import_run_hook(version)


def _pyvenv_version(venv: Path) -> str:
    """`3.11` from the environment's pyvenv.cfg (`version = 3.11.7`), "" if unknown."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError):
        return ""
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            return ".".join(value.strip().split(".")[:2])
    return ""


def _in_process(run_hook: object, event: str, data: bytes) -> tuple[bytes, int]:
    """The hook's stdout and its exit code, run in this process."""
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
        value = json.loads(text.decode("utf-8"))
    except ValueError:
        value = None
    if not isinstance(value, dict):
        _say("ralphstate: the hook printed something that is not one JSON object; ignored.")
        return b""
    return text + b"\n"


def _installed_in_settings(event: str, data: bytes) -> bool:
    """True when a Claude Code settings file already runs `ralphstate hook EVENT`."""
    project = os.environ.get("CLAUDE_PROJECT_DIR") or _input_cwd(data)
    files = [Path.home() / ".claude" / "settings.json"]
    if project:
        files[:0] = [
            Path(project) / ".claude" / "settings.json",
            Path(project) / ".claude" / "settings.local.json",
        ]
    return any(event in _own_events(path, EVENTS[event]) for path in files)


def _own_events(path: Path, name: str) -> set[str]:
    """The ralphstate subcommands that `path` runs for Claude Code event `name`."""
    found: set[str] = set()
    try:
        groups = json.loads(path.read_text(encoding="utf-8-sig"))["hooks"][name]
    except Exception:  # noqa: BLE001 - missing or odd settings: nothing installed there
        return found
    for group in groups if isinstance(groups, list) else []:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler in handlers if isinstance(handlers, list) else []:
            command = handler.get("command") if isinstance(handler, dict) else None
            match = _OWN.search(command) if isinstance(command, str) else None
            if match:
                found.add(next(group for group in match.groups() if group).lower())
    return found


def _input_cwd(data: bytes) -> str | None:
    try:
        cwd = json.loads(data.decode("utf-8")).get("cwd")
    except Exception:  # noqa: BLE001
        return None
    return cwd if isinstance(cwd, str) and cwd else None


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


# -- bin/ralphstate ------------------------------------------------------------------------


def cli(args: list[str]) -> int:
    """`ralphstate ARGS` with the plugin's ralphstate, building its environment first
    when it is not built yet (the person or the agent asked for this command: it waits)."""
    version = plugin_version()
    if _import_run_hook(version) is not None:
        from ralphstate.__main__ import main as ralphstate_main

        return ralphstate_main(args)
    data = data_dir()
    if data is None:
        _say(no_data())
        return 1
    python = ready(data, version)
    if python is None:
        python = _wait_for_build(data, version)
    if python is None:
        _say(f"ralphstate: its Python environment could not be built; see {data / 'build.log'}.")
        return 1
    command = [str(python), "-I", "-m", "ralphstate", *args]
    if os.name != "nt":
        os.execv(command[0], command)
    try:
        return subprocess.run(command).returncode
    except KeyboardInterrupt:
        return 130


def _wait_for_build(data: Path, version: str) -> Path | None:
    _say(f"ralphstate: setting up its Python environment for plugin version {version}...")
    deadline = time.monotonic() + BUILD_STALE_SECONDS
    while time.monotonic() < deadline:
        if build(data, version):
            return ready(data, version)
        if not building(data):  # the build ran here, or the other one ended, and failed
            return ready(data, version)
        time.sleep(0.5)
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
