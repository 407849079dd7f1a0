"""The Claude Code plugin's launcher under test (tests/plugin): a copy of the plugin,
stand-in environments, and the launcher run as Claude Code runs it."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import ralphstate
from tests.helpers import REPO

# The launcher: the file hooks.json runs and the modules it imports.
LAUNCHER = ("launch.py", "plugin_launcher.py", "plugin_env.py", "plugin_settings.py")
POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell and scripts")
# An interpreter that cannot import ralphstate (no site-packages).
BARE = [sys.executable, "-I", "-S"]
VERSION = ralphstate.__version__
PREPARING = (
    f"ralphstate: setting up its Python environment for plugin version {VERSION} (first"
    " use, about a minute at most); loops are not enforced until it is ready."
)


def plugin_copy(where: Path, version: str = VERSION) -> Path:
    """The plugin's launcher, bin and manifest, copied to `where` with `version`."""
    (where / "hooks").mkdir(parents=True)
    for name in LAUNCHER:
        shutil.copy2(REPO / "hooks" / name, where / "hooks" / name)
    shutil.copytree(REPO / "bin", where / "bin")
    (where / ".claude-plugin").mkdir()
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    manifest["version"] = version
    (where / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, where / name)
    shutil.copytree(
        REPO / "ralphstate", where / "ralphstate", ignore=shutil.ignore_patterns("__pycache__")
    )
    return where


def plugin_env_module() -> Any:
    """hooks/plugin_env.py, imported from its file."""
    spec = importlib.util.spec_from_file_location("plugin_env", REPO / "hooks" / "plugin_env.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launcher_module(name: str) -> Any:
    """hooks/NAME.py, imported from its file now (its module of `sys.modules`, which
    hooks/launch.py imports, may have been loaded before a change), with hooks/ on
    sys.path for the launcher's modules it imports."""
    hooks = str(REPO / "hooks")
    spec = importlib.util.spec_from_file_location(f"{name}_copy", REPO / "hooks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, hooks)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(hooks)
    return module


def launcher_own() -> re.Pattern[str]:
    """How the launcher recognises ralphstate's own hooks in a settings file: the forms
    of hooks/plugin_settings.py, followed by the launcher's EVENTS."""
    own: re.Pattern[str] = launcher_module("plugin_settings").own(
        launcher_module("plugin_launcher").EVENTS
    )
    return own


def env_home(data: Path, version: str = VERSION) -> Path:
    """Where the plugin keeps `version`'s environment under `data`."""
    return data / f"env-{version}"


def fake_env(data: Path, version: str = VERSION, body: str = "", root: Path | None = None) -> Path:
    """An environment under `data` that is ready for `version`; its Python prints its
    arguments and input as JSON, or runs `body`. `root`: the plugin root it records as
    having built it."""
    venv = env_home(data, version) / "venv"
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    python.parent.mkdir(parents=True)
    body = body or "print(json.dumps({'argv': sys.argv[1:], 'stdin': sys.stdin.read()}))"
    python.write_text(f"#!{sys.executable}\nimport json, sys\n{body}\n")
    python.chmod(0o755)
    (venv / "ralphstate-plugin-version").write_text(version)
    if root is not None:
        (venv.parent / "plugin-root").write_text(str(root))
    return python


def may_loop(project: Path) -> None:
    """A `.loop/` in `project`: ralphstate's hook may have work there, so the launcher
    hands the hook over (with none, it answers at once: tests below)."""
    (project / ".loop").mkdir(exist_ok=True)


def env_for(tmp_path: Path, data: Path | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("SYSTEMROOT", "WINDIR", "LANG")}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(
        PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
        HOME=str(home),
        USERPROFILE=str(home),
        RALPHSTATE_HOME=str(tmp_path / "ralphstate-home"),
        CLAUDE_PROJECT_DIR=str(tmp_path),
        # pip finds nothing: a build fails quickly and offline.
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(tmp_path / "no-wheels"),
        PIP_CONFIG_FILE=os.devnull,
    )
    if data is not None:
        env["CLAUDE_PLUGIN_DATA"] = str(data)
    env.update(extra)
    return env


def hook(
    launch: Path, event: str, env: dict[str, str], data: bytes = b"{}", python: Any = None
) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [*(python or BARE), str(launch), event],
        input=data,
        env=env,
        capture_output=True,
        timeout=60,
        cwd=env["CLAUDE_PROJECT_DIR"],
    )
    assert done.returncode == 0
    return done


def notice(done: subprocess.CompletedProcess[bytes]) -> str:
    out = json.loads(done.stdout)
    assert set(out) == {"systemMessage"} and done.stdout.count(b"\n") == 1
    return str(out["systemMessage"])


def wait_for_build(data: Path, timeout: float = 120, version: str = VERSION) -> None:
    """Until the detached build has let go of its lock."""
    home = env_home(data, version)
    deadline = time.monotonic() + timeout
    while (home / "build.lock").exists() or not (home / "build.log").exists():
        assert time.monotonic() < deadline, "the build did not finish"
        time.sleep(0.1)


TASK = json.dumps({"session_id": "s", "task_id": "1", "task_subject": "tests pass"}).encode()
