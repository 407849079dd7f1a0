"""The Claude Code plugin's own Python environment, `${CLAUDE_PLUGIN_DATA}/venv`: where it
is, whether it is ready for the plugin's version, and building it (`launch.py build`).

Imported by the launcher (`launch.py`, `plugin_launcher.py`) at every hook, so its top
imports only what the interpreter has already loaded (os, sys, time) and reads files
with `os.path`: `json`, `re`, `pathlib`, `shutil` and `subprocess` are imported where a
build, a notice or a path for a person needs them. Standard library only, Python 3.8
syntax: annotations are strings, so not even `__future__` is imported.
"""

import os
import sys
import time

TYPE_CHECKING = False  # `typing` is not imported at run time
if TYPE_CHECKING:
    from pathlib import Path

HOOKS = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(HOOKS)
ENV_DATA = "CLAUDE_PLUGIN_DATA"
# A build that holds the lock longer than this is taken to have died.
BUILD_STALE_SECONDS = 900
BUILD_STEP_TIMEOUT = 600
# The files of the plugin root that pip needs to build the package.
SOURCES = ("pyproject.toml", "README.md", "ralphstate")
MAX_MANIFEST_BYTES = 64 * 1024
VERSION_MARKER = "ralphstate-plugin-version"


class _Decoding:
    """What `json.loads` gives its scanner (json.decoder.JSONDecoder's defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # "NaN", "Infinity", "-Infinity", as json's own table reads them


def loads(text: str) -> object:
    """`json.loads(text)`, by the same C scanner, without importing `json`: its decoder
    imports `re`, which costs more than the rest of a hook that finds no loop. ValueError
    (json.JSONDecodeError) for what is not one JSON document."""
    try:
        from _json import make_scanner
    except ImportError:  # an interpreter without the accelerator
        import json

        return json.loads(text)
    if text.startswith("\ufeff"):
        raise ValueError("Unexpected UTF-8 BOM (decode using utf-8-sig)")
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = make_scanner(_Decoding())(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError("Expecting value") from None
    if end != len(text.rstrip(" \t\n\r")):
        raise ValueError("Extra data")
    return value


def plugin_version() -> str:
    """The plugin's version, from its manifest; "" when it cannot be read."""
    try:
        with open(os.path.join(ROOT, ".claude-plugin", "plugin.json"), "rb") as f:
            version = loads(f.read(MAX_MANIFEST_BYTES).decode("utf-8")).get("version")  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        return ""
    return version if isinstance(version, str) else ""


def data_dir() -> "Path | None":
    """Where the plugin keeps its environment: `$CLAUDE_PLUGIN_DATA`, which Claude Code
    gives hooks. The Bash tool's commands (bin/ralphstate) do not get it, so there it is
    worked out the way Claude Code names it: `<config>/plugins/data/<id>`, the id being
    `NAME@MARKETPLACE` for a plugin copied into `<config>/plugins/cache/MARKETPLACE/NAME/
    VERSION`, else `NAME@inline` (`--plugin-dir`), with every character other than
    letters, digits, `_` and `-` replaced by `-`."""
    import re
    from pathlib import Path

    given = os.environ.get(ENV_DATA)
    if given:
        return Path(given)
    root = Path(ROOT)
    config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    try:
        cache = (config / "plugins" / "cache").resolve()
        copied = root.parent.parent.parent == cache
    except OSError:
        copied = False
    ident = f"{root.parent.name}@{root.parent.parent.name}" if copied else "ralphstate@inline"
    return config / "plugins" / "data" / re.sub(r"[^A-Za-z0-9_-]", "-", ident)


def venv_python(venv: "str | os.PathLike[str]") -> str:
    if os.name == "nt":
        return os.path.join(venv, "Scripts", "python.exe")
    return os.path.join(venv, "bin", "python")


def ready(data: "str | os.PathLike[str]", version: str) -> "str | None":
    """The environment's Python when it is built for `version`, else None."""
    venv = os.path.join(data, "venv")
    try:
        with open(os.path.join(venv, VERSION_MARKER), encoding="utf-8") as f:
            built = f.read(MAX_MANIFEST_BYTES)
    except (OSError, ValueError):
        return None
    python = venv_python(venv)
    return python if built == version and version and os.path.exists(python) else None


def failed(data: "str | os.PathLike[str]", version: str) -> bool:
    try:
        with open(os.path.join(data, "build-failed"), encoding="utf-8") as f:
            return f.read(MAX_MANIFEST_BYTES) == version
    except (OSError, ValueError):
        return False


def building(data: "str | os.PathLike[str]") -> bool:
    try:
        return (
            time.time() - os.stat(os.path.join(data, "build.lock")).st_mtime < BUILD_STALE_SECONDS
        )
    except OSError:
        return False


def _take_lock(data: "Path") -> bool:
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


def _release_lock(data: "Path") -> None:
    try:
        (data / "build.lock").unlink()
    except OSError:
        pass


def build(data: "Path | None", version: str, locked: bool = False) -> bool:
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


def _build(data: "Path", version: str) -> bool:
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(ROOT)
    venv, source = data / "venv", data / "source"
    with open(data / "build.log", "w", encoding="utf-8") as log:
        log.write(f"ralphstate plugin {version}: building {venv} from {root}\n")
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
                if (root / name).is_dir():
                    shutil.copytree(
                        root / name,
                        source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
                    )
                else:
                    shutil.copy2(root / name, source / name)
            python = venv_python(venv)
            steps = [
                [sys.executable, "-m", "venv", str(venv)],
                [python, "-m", "pip", "install", "--no-input", "--quiet", str(source)],
                [python, "-I", "-c", "import ralphstate; print(ralphstate.__version__)"],
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
            (venv / VERSION_MARKER).write_text(version, encoding="utf-8")
            log.write("ready\n")
            return True
        except (OSError, subprocess.SubprocessError) as exc:
            log.write(f"{type(exc).__name__}: {exc}\n")
            return False
        finally:
            shutil.rmtree(source, ignore_errors=True)


def start_build(data: "Path") -> None:
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


def _spawn_build(data: "Path") -> None:
    import subprocess

    env = dict(os.environ)
    env[ENV_DATA] = str(data)
    options: dict[str, object] = {}
    if os.name == "nt":
        flags = getattr(subprocess, "DETACHED_PROCESS", 0)
        options["creationflags"] = flags | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    else:
        options["start_new_session"] = True
    subprocess.Popen(
        [sys.executable, os.path.join(HOOKS, "launch.py"), "build", "--locked"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(data),
        close_fds=True,
        **options,  # type: ignore[call-overload]
    )


def wait_for_build(data: "Path", version: str) -> "str | None":
    """Build the environment here, or wait for the build under way to end: its Python,
    or None when it could not be built."""
    deadline = time.monotonic() + BUILD_STALE_SECONDS
    while time.monotonic() < deadline:
        if build(data, version):
            return ready(data, version)
        if not building(data):  # the build ran here, or the other one ended, and failed
            return ready(data, version)
        time.sleep(0.5)
    return None
