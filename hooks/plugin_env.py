"""The Claude Code plugin's own Python environments, one per plugin version
(`${CLAUDE_PLUGIN_DATA}/env-VERSION/venv`): where they are, whether the plugin's version
has one ready, building it (`launch.py build`), and removing those no session can use.

Each version has its own, because a session keeps the plugin version it started with
after an update (Claude Code keeps the old version's files on disk, marked orphaned, for
about 14 days): one shared environment would be rebuilt by the new version under the
old session, and back. An environment records the plugin root it was built from; once
that root is gone or holds another version, no session can run it, and a build of any
version removes it (`sweep`).

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
# A build that holds the lock longer than this is taken to have died, whatever its
# process: the lock names the building process, and one that has ended lets go at once.
BUILD_STALE_SECONDS = 900
BUILD_STEP_TIMEOUT = 600
# The files of the plugin root that pip needs to build the package.
SOURCES = ("pyproject.toml", "README.md", "ralphstate")
MAX_MANIFEST_BYTES = 64 * 1024
VERSION_MARKER = "ralphstate-plugin-version"
# Beside an environment: the plugin root that built it (see `sweep`).
ROOT_MARKER = "plugin-root"
ENV_PREFIX = "env-"
# What an environment of a version before per-version environments left in the data
# directory itself.
LEGACY = ("venv", "build.log", "build-failed", "build.lock")


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
    return version_at(ROOT)


def version_at(root: str) -> str:
    """The version in the manifest of the plugin at `root`; "" when it cannot be read."""
    try:
        with open(os.path.join(root, ".claude-plugin", "plugin.json"), "rb") as f:
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


def env_home(data: "str | os.PathLike[str]", version: str) -> str:
    """The directory of `version`'s environment: its venv, build lock, log and marks."""
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in version)
    return os.path.join(data, ENV_PREFIX + safe)


def venv_dir(data: "str | os.PathLike[str]", version: str) -> str:
    return os.path.join(env_home(data, version), "venv")


def ready(data: "str | os.PathLike[str]", version: str) -> "str | None":
    """The environment's Python when it is built for `version`, else None."""
    venv = venv_dir(data, version)
    try:
        with open(os.path.join(venv, VERSION_MARKER), encoding="utf-8") as f:
            built = f.read(MAX_MANIFEST_BYTES)
    except (OSError, ValueError):
        return None
    python = venv_python(venv)
    return python if built == version and version and os.path.exists(python) else None


def failed(data: "str | os.PathLike[str]", version: str) -> bool:
    try:
        with open(os.path.join(env_home(data, version), "build-failed"), encoding="utf-8") as f:
            return f.read(MAX_MANIFEST_BYTES) == version
    except (OSError, ValueError):
        return False


def building(data: "str | os.PathLike[str]", version: str) -> bool:
    return _held(env_home(data, version))


def _held(home: str) -> bool:
    """Whether a live build holds `home`'s lock: the lock is younger than
    BUILD_STALE_SECONDS and the process it names (the build's own) is running."""
    lock = os.path.join(home, "build.lock")
    try:
        if time.time() - os.stat(lock).st_mtime >= BUILD_STALE_SECONDS:
            return False
        with open(lock, "rb") as f:
            named = f.read(32).strip()
    except OSError:
        return False
    return not named.isdigit() or alive(int(named))


def alive(pid: int) -> bool:
    """Whether process `pid` runs; True when that cannot be told (the lock's age then
    decides)."""
    if pid <= 0:
        return False
    if os.name == "nt":
        return _alive_windows(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process, alive
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process that has ended but is not yet waited for (Linux's /proc tells)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read(512).rpartition(b")")[2].split()[:1] == [b"Z"]
    except OSError:
        return False


def _alive_windows(pid: int) -> bool:
    try:
        import ctypes

        kernel = ctypes.windll.kernel32  # type: ignore[attr-defined,unused-ignore]
        handle = kernel.OpenProcess(0x00100000, False, pid)  # SYNCHRONIZE
        if not handle:
            return bool(kernel.GetLastError() == 5)  # ERROR_ACCESS_DENIED: it exists
        try:
            return bool(kernel.WaitForSingleObject(handle, 0) == 0x102)  # WAIT_TIMEOUT
        finally:
            kernel.CloseHandle(handle)
    except Exception:  # noqa: BLE001 - cannot be told: the lock's age decides
        return True


def _take_lock(home: "Path") -> bool:
    lock = home / "build.lock"
    for _ in range(2):
        try:
            fd = os.open(str(lock), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            if _held(str(home)):
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


def _name_holder(home: "Path", pid: int) -> None:
    """Write `pid`, the process that now does the build, into the lock it holds."""
    try:
        with open(home / "build.lock", "r+b") as f:
            f.truncate(0)
            f.write(str(pid).encode())
    except OSError:
        pass


def _release_lock(home: "Path") -> None:
    try:
        (home / "build.lock").unlink()
    except OSError:
        pass


def build(data: "Path | None", version: str, locked: bool = False) -> bool:
    """Build the environment for `version` under `data`; False when it could not be
    built or another process is building it. Its output goes to its `build.log`.
    `locked`: the process that started this one took the build lock for it."""
    if data is None or not version:
        return False
    from pathlib import Path

    home = Path(env_home(data, version))
    home.mkdir(parents=True, exist_ok=True)
    if locked:
        _name_holder(home, os.getpid())
    elif not _take_lock(home):
        return False
    try:
        sweep(data, version)
        if ready(data, version):
            return True
        ok = _build(home, version)
        marker = home / "build-failed"
        if ok:
            if marker.exists():
                marker.unlink()
        else:
            marker.write_text(version, encoding="utf-8")
        return ok
    finally:
        _release_lock(home)


def sweep(data: "str | os.PathLike[str]", version: str) -> "list[str]":
    """Remove the environments of other versions that no session can run any more (and
    what a failed build of another version left), and the single environment of versions
    before per-version ones once its version's files are gone; the names removed. One
    whose build runs is left alone."""
    import shutil
    from pathlib import Path

    removed: "list[str]" = []
    ours = os.path.basename(env_home(data, version))
    try:
        names = sorted(os.listdir(data))
    except OSError:
        return removed
    for name in names:
        home = Path(data) / name
        if not name.startswith(ENV_PREFIX) or name == ours or not home.is_dir():
            continue
        if not _take_lock(home):  # its build runs
            continue
        if in_use(home):
            _release_lock(home)
            continue
        shutil.rmtree(home, ignore_errors=True)
        removed.append(name)
    legacy = Path(data) / "venv"
    if legacy.is_dir() and not in_use(legacy, legacy=True) and not _held(str(data)):
        shutil.rmtree(legacy, ignore_errors=True)
        for name in LEGACY[1:]:
            try:
                (Path(data) / name).unlink()
            except OSError:
                pass
        removed.append("venv")
    return removed


def in_use(home: "Path", legacy: bool = False) -> bool:
    """Whether a session may still run the environment at `home`: the plugin root that
    built it is there and holds its version. A legacy environment (no record of its
    root) is in use while the plugin's cache holds its version beside this one."""
    venv = home if legacy else home / "venv"
    try:
        built = (venv / VERSION_MARKER).read_text(encoding="utf-8")[:MAX_MANIFEST_BYTES]
        if legacy:
            root = os.path.join(os.path.dirname(ROOT), built)
        else:
            root = (home / ROOT_MARKER).read_text(encoding="utf-8")[:MAX_MANIFEST_BYTES]
    except (OSError, ValueError):
        return False  # never built: a failed build's leftovers
    return bool(built) and version_at(root) == built


def _build(home: "Path", version: str) -> bool:
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(ROOT)
    venv, source = home / "venv", home / "source"
    with open(home / "build.log", "w", encoding="utf-8") as log:
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
                    cwd=str(home),
                )
                out = done.stdout.decode("utf-8", "replace")
                log.write(out)
                if done.returncode != 0:
                    log.write(f"exit status {done.returncode}\n")
                    return False
            if out.strip() != version:
                log.write(f"the environment has ralphstate {out.strip()}, not {version}\n")
                return False
            (home / ROOT_MARKER).write_text(ROOT, encoding="utf-8")
            (venv / VERSION_MARKER).write_text(version, encoding="utf-8")
            log.write("ready\n")
            return True
        except (OSError, subprocess.SubprocessError) as exc:
            log.write(f"{type(exc).__name__}: {exc}\n")
            return False
        finally:
            shutil.rmtree(source, ignore_errors=True)


def start_build(data: "Path", version: str) -> None:
    """Take the build lock and start `launch.py build` in a detached process, which
    names itself in the lock and releases it: the hook that starts it returns at once,
    and the build goes on after the session ends. Nothing is started when another
    process holds the lock."""
    from pathlib import Path

    home = Path(env_home(data, version))
    home.mkdir(parents=True, exist_ok=True)
    if not _take_lock(home):
        return
    try:
        _name_holder(home, _spawn_build(data))
    except BaseException:
        _release_lock(home)
        raise


def _spawn_build(data: "Path") -> int:
    import subprocess

    env = dict(os.environ)
    env[ENV_DATA] = str(data)
    options: dict[str, object] = {}
    if os.name == "nt":
        flags = getattr(subprocess, "DETACHED_PROCESS", 0)
        options["creationflags"] = flags | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    else:
        options["start_new_session"] = True
    process = subprocess.Popen(
        [sys.executable, os.path.join(HOOKS, "launch.py"), "build", "--locked"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(data),
        close_fds=True,
        **options,  # type: ignore[call-overload]
    )
    return int(process.pid)


def wait_for_build(data: "Path", version: str) -> "str | None":
    """Build the environment here, or wait for the build under way to end: its Python,
    or None when it could not be built."""
    deadline = time.monotonic() + BUILD_STALE_SECONDS
    while time.monotonic() < deadline:
        if build(data, version):
            return ready(data, version)
        if not building(data, version):  # the build ran here, or the other one ended
            return ready(data, version)
        time.sleep(0.5)
    return None
