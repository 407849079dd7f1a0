"""The Claude Code plugin's launcher (`hooks/launch.py`) and `bin/ralphstate`, as real
processes: which ralphstate they run, the environment they build under
CLAUDE_PLUGIN_DATA, and what the person is told meanwhile.

The environments here are stand-ins (a script in place of the environment's Python),
except in the tests of a build, which run `python -m venv` and pip for real, offline
(pip is pointed at an empty directory: the build fails, as it does without a network).
The build that succeeds is in tests/e2e/test_plugin_e2e.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import ralphstate
from tests.helpers import REPO

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
    shutil.copy2(REPO / "hooks" / "launch.py", where / "hooks" / "launch.py")
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


def fake_env(data: Path, version: str = VERSION, body: str = "") -> Path:
    """An environment under `data` that is ready for `version`; its Python prints its
    arguments and input as JSON, or runs `body`."""
    python = data / "venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    python.parent.mkdir(parents=True)
    body = body or "print(json.dumps({'argv': sys.argv[1:], 'stdin': sys.stdin.read()}))"
    python.write_text(f"#!{sys.executable}\nimport json, sys\n{body}\n")
    python.chmod(0o755)
    (data / "venv" / "ralphstate-plugin-version").write_text(version)
    return python


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


def wait_for_build(data: Path, timeout: float = 120) -> None:
    """Until the detached build has let go of its lock."""
    deadline = time.monotonic() + timeout
    while (data / "build.lock").exists() or not (data / "build.log").exists():
        assert time.monotonic() < deadline, "the build did not finish"
        time.sleep(0.1)


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    return plugin_copy(tmp_path / "plugin")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


# -- which ralphstate runs -----------------------------------------------------------------


@POSIX_ONLY
def test_a_ready_environment_runs_the_hook_in_isolated_mode(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    fake_env(data)
    payload = b'{"session_id": "s", "weird": "\\u00e9 \\n"}'
    done = hook(plugin / "hooks" / "launch.py", "pre-compact", env_for(tmp_path, data), payload)
    assert json.loads(done.stdout) == {
        "argv": ["-I", "-c", "from ralphstate.hooks.entry import main; main()", "pre-compact"],
        "stdin": payload.decode(),
    }
    assert done.stdout.endswith(b"}\n") and done.stdout.count(b"\n") == 1


@POSIX_ONLY
def test_an_environment_of_this_python_version_runs_in_this_process(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    """One interpreter start instead of two: the environment's site-packages are for
    this Python's version, so the launcher imports the hook from there."""
    fake_env(data, body="print(json.dumps({'ran': 'the environment python'}))")
    packages = data / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    packages = packages / "site-packages"
    hooks = packages / "ralphstate" / "hooks"
    hooks.mkdir(parents=True)
    (packages / "ralphstate" / "__init__.py").write_text(f"__version__ = {VERSION!r}\n")
    (hooks / "__init__.py").write_text("")
    (hooks / "entry.py").write_text(
        "import json, os, sys\n"
        "def run_hook(args):\n"
        "    data = json.loads(sys.stdin.read())\n"
        "    print(json.dumps({'ran': 'in process', 'args': args, 'input': data,"
        " 'pid': os.getpid()}))\n"
        "    return 0\n"
    )
    done = subprocess.run(
        [*BARE, str(plugin / "hooks" / "launch.py"), "stop"],
        input=b'{"session_id": "s"}',
        env=env_for(tmp_path, data),
        capture_output=True,
        timeout=60,
    )
    out = json.loads(done.stdout)
    assert out["ran"] == "in process" and out["args"] == ["stop"]
    assert out["input"] == {"session_id": "s"}
    # Built for another Python: its own interpreter runs the hook instead.
    other = packages.parent.with_name("python2.7")
    packages.parent.rename(other)
    done = hook(plugin / "hooks" / "launch.py", "stop", env_for(tmp_path, data))
    assert json.loads(done.stdout) == {"ran": "the environment python"}


@POSIX_ONLY
@pytest.mark.parametrize(
    "body",
    [
        "print('not json'); sys.exit(3)",
        "print('[1, 2]')",
        "print('{\"a\": 1}'); print('{\"b\": 2}')",
        "sys.exit(2)",
        "raise SystemExit('boom')",
    ],
)
def test_whatever_the_environment_prints_the_hook_prints_one_object_or_nothing(
    tmp_path: Path, plugin: Path, data: Path, body: str
) -> None:
    fake_env(data, body=body)
    done = hook(plugin / "hooks" / "launch.py", "stop", env_for(tmp_path, data))
    assert done.stdout == b""


def test_an_importable_ralphstate_of_the_same_version_runs_in_process(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    """This test's interpreter imports ralphstate VERSION: no environment is needed."""
    env = env_for(tmp_path, data)
    done = hook(plugin / "hooks" / "launch.py", "stop", env, python=[sys.executable])
    assert (done.stdout, done.stderr) == (b"", b"")  # no loop here: allowed, silently
    assert not data.exists()


@POSIX_ONLY
def test_a_ralphstate_or_an_environment_of_another_version_is_not_used(tmp_path: Path) -> None:
    """This test's interpreter imports ralphstate VERSION, and the environment was built
    for 0.0.1: a plugin at 99.0.0 uses neither, and builds its environment again."""
    plugin = plugin_copy(tmp_path / "plugin", version="99.0.0")
    data = tmp_path / "data"
    fake_env(data, version="0.0.1")
    launch = plugin / "hooks" / "launch.py"
    done = hook(launch, "stop", env_for(tmp_path, data), python=[sys.executable])
    assert notice(done) == PREPARING.replace(VERSION, "99.0.0")
    wait_for_build(data)
    assert "ralphstate plugin 99.0.0: building" in (data / "build.log").read_text()
    assert not (data / "venv" / "ralphstate-plugin-version").exists()


# -- a task refused: the one exit that is not 0 --------------------------------------------

FAILING = "import sys; print('boom: 1 == 2'); sys.exit(3)"


def refusing_loop(project: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop in `project`, known and trusted in `env`'s ralphstate home, whose one
    criterion's check fails."""
    from ralphstate.core import state as st
    from ralphstate.storage import registry, trust
    from ralphstate.storage.paths import LoopPaths

    monkeypatch.setenv("RALPHSTATE_HOME", env["RALPHSTATE_HOME"])
    state = st.new("s", ["tests pass"], [], session_id="s", now="2026-01-01T00:00:00Z")
    state["checks"] = {"tests pass": f'"{sys.executable}" -c "{FAILING}"'}
    (project / ".loop").mkdir()
    (project / ".loop" / "state.json").write_bytes(st.dumps(state))
    paths = LoopPaths(project, project / ".loop")
    registry.record(paths, state)
    trust.record(paths, state)


TASK = json.dumps({"session_id": "s", "task_id": "1", "task_subject": "tests pass"}).encode()


def test_ralphstate_refusing_a_task_exits_2_through_the_launcher(
    tmp_path: Path, plugin: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = env_for(tmp_path, data)
    refusing_loop(tmp_path, env, monkeypatch)
    done = subprocess.run(
        [sys.executable, str(plugin / "hooks" / "launch.py"), "task-completed"],
        input=TASK,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, b"")
    err = done.stderr.decode()
    assert err.startswith('ralphstate: this task stays open: the check of criterion "tests pass"')
    assert err.endswith("The end of its output:\n    boom: 1 == 2\n")


@POSIX_ONLY
@pytest.mark.parametrize("interpreters", [("python3",), ("python",), ("broken-python3", "python")])
def test_the_plugin_command_passes_the_refusal_through_once(
    tmp_path: Path,
    plugin: Path,
    data: Path,
    monkeypatch: pytest.MonkeyPatch,
    interpreters: tuple[str, ...],
) -> None:
    """hooks.json's TaskCompleted command, run by sh as Claude Code runs it: the first
    interpreter that runs the launcher decides, an exit 2 is not retried with the next
    one (which would read no input and allow), a missing or broken one is skipped."""
    shutil.copy2(REPO / "hooks" / "hooks.json", plugin / "hooks" / "hooks.json")
    [group] = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]["TaskCompleted"]
    [handler] = group["hooks"]
    bin_dir = tmp_path / "interpreters"
    bin_dir.mkdir()
    for name in interpreters:
        real = name.removeprefix("broken-")
        body = "exit 1" if name.startswith("broken-") else f'exec "{sys.executable}" "$@"'
        (bin_dir / real).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / real).chmod(0o755)
    env = env_for(tmp_path, data, CLAUDE_PLUGIN_ROOT=str(plugin), PATH=str(bin_dir))
    refusing_loop(tmp_path, env, monkeypatch)
    done = subprocess.run(
        ["/bin/sh", "-c", handler["command"]],
        input=TASK,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, b"")
    err = done.stderr.decode()
    assert err.count("ralphstate: this task stays open") == 1
    assert "ralphstate hook task-completed:" not in err  # no second run, without input
    assert handler["timeout"] >= 120  # the checks' budget (limits.STOP_VERIFY_BUDGET)


@POSIX_ONLY
@pytest.mark.parametrize(("event", "code"), [("task-completed", 2), ("stop", 0)])
def test_only_the_task_hook_passes_the_environments_exit_2(
    tmp_path: Path, plugin: Path, data: Path, event: str, code: int
) -> None:
    fake_env(data, body="sys.stderr.write('refused\\n'); sys.exit(2)")
    done = subprocess.run(
        [*BARE, str(plugin / "hooks" / "launch.py"), event],
        input=b"{}",
        env=env_for(tmp_path, data),
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (code, b"", b"refused\n")


# -- building ------------------------------------------------------------------------------


def test_the_first_hook_starts_a_build_a_failure_is_said_until_a_new_session(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    env = env_for(tmp_path, data)
    launch = plugin / "hooks" / "launch.py"
    done = hook(launch, "session-start", env)
    assert notice(done) == PREPARING
    assert done.stderr == b""
    # The build runs on in its own process, holding the lock: the hook did not wait.
    assert (data / "build.lock").exists()
    assert notice(hook(launch, "stop", env)) == PREPARING
    wait_for_build(data)
    log = (data / "build.log").read_text()
    assert f"ralphstate plugin {VERSION}: building {data / 'venv'} from {plugin}" in log
    assert "-m pip install" in log
    # pip found nothing to install: the build failed, and each hook says so ...
    assert (data / "build-failed").read_text() == VERSION
    failed = (
        f"ralphstate: its Python environment could not be built (see {data / 'build.log'});"
        " loops are not enforced. A new session tries again."
    )
    for event in ("stop", "pre-compact"):
        assert notice(hook(launch, event, env)) == failed
    assert not (data / "build.lock").exists()  # ... without starting another build
    assert notice(hook(launch, "session-start", env)) == PREPARING
    assert (data / "build.lock").exists()
    wait_for_build(data)


def test_a_build_under_way_is_not_started_twice(tmp_path: Path, plugin: Path, data: Path) -> None:
    data.mkdir()
    (data / "build.lock").write_text("12345")
    done = hook(plugin / "hooks" / "launch.py", "stop", env_for(tmp_path, data))
    assert notice(done) == PREPARING
    time.sleep(0.5)
    assert not (data / "build.log").exists()
    assert (data / "build.lock").read_text() == "12345"


def test_a_lock_left_by_a_build_that_died_is_taken_over(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    data.mkdir()
    lock = data / "build.lock"
    lock.write_text("12345")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    done = hook(plugin / "hooks" / "launch.py", "stop", env_for(tmp_path, data))
    assert notice(done) == PREPARING
    wait_for_build(data)
    assert "building" in (data / "build.log").read_text()


def test_without_a_data_directory_the_session_start_says_how_to_install(
    tmp_path: Path, plugin: Path
) -> None:
    env = env_for(tmp_path, None)
    launch = plugin / "hooks" / "launch.py"
    said = notice(hook(launch, "session-start", env))
    assert said == (
        "ralphstate: this Claude Code gives the plugin no data directory"
        " (CLAUDE_PLUGIN_DATA) for its environment, so loops are not enforced; install"
        f' ralphstate from the plugin\'s own files: python3 -m pip install "{plugin}"'
    )
    assert hook(launch, "stop", env).stdout == b""  # once a session, not after every turn


def test_no_package_index_name_is_ever_suggested() -> None:
    """The project owns no name on a package index: nothing may tell a person to install
    one (whoever registered it would be installed)."""
    for path in (REPO / "hooks" / "launch.py", REPO / "hooks" / "hooks.json", REPO / "bin"):
        files = sorted(path.iterdir()) if path.is_dir() else [path]
        for file in files:
            text = file.read_text()
            for phrase in ("pipx install ralphstate", "pip install ralphstate", "uv tool install"):
                assert phrase not in text, (file, phrase)


# -- bin/ralphstate ------------------------------------------------------------------------


@POSIX_ONLY
def test_bin_runs_the_environment_with_the_arguments(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    fake_env(data, body="print(json.dumps(sys.argv[1:])); sys.exit(7)")
    interpreters = tmp_path / "interpreters"
    interpreters.mkdir()
    # Only a python3 that cannot import ralphstate, as on a machine without it.
    (interpreters / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "$@"\n')
    (interpreters / "python3").chmod(0o755)
    env = env_for(tmp_path, data, PATH=f"{interpreters}:/usr/bin:/bin")
    done = subprocess.run(
        ["/bin/sh", "-c", 'ralphstate criteria set "tests pass" true'],
        env={**env, "PATH": f"{plugin / 'bin'}:{env['PATH']}"},
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 7
    assert json.loads(done.stdout) == ["-I", "-m", "ralphstate", "criteria", "set", "tests pass",
                                       "true"]  # fmt: skip


@POSIX_ONLY
def test_bin_finds_the_data_directory_claude_code_gives_the_plugin(tmp_path: Path) -> None:
    """The Bash tool's commands get no CLAUDE_PLUGIN_DATA: bin/ralphstate works out the
    directory Claude Code gives the hooks, `<config>/plugins/data/<id>`."""
    home = tmp_path / "home"
    cases = {
        tmp_path / "checkout": home / ".claude" / "plugins" / "data" / "ralphstate-inline",
        home / ".claude" / "plugins" / "cache" / "my.market" / "ralphstate" / VERSION: (
            home / ".claude" / "plugins" / "data" / "ralphstate-my-market"
        ),
    }
    for root, expected in cases.items():
        plugin_copy(root)
        fake_env(expected, body="print('from the environment')")
        env = env_for(tmp_path, None)
        done = subprocess.run(
            [*BARE, str(root / "hooks" / "launch.py"), "cli", "status"],
            env=env,
            capture_output=True,
            timeout=30,
        )
        assert (done.returncode, done.stdout) == (0, b"from the environment\n"), done.stderr
    config = tmp_path / "config"
    fake_env(config / "plugins" / "data" / "ralphstate-inline", body="print('configured')")
    done = subprocess.run(
        [*BARE, str(tmp_path / "checkout" / "hooks" / "launch.py"), "cli", "status"],
        env=env_for(tmp_path, None, CLAUDE_CONFIG_DIR=str(config)),
        capture_output=True,
        timeout=30,
    )
    assert done.stdout == b"configured\n"


def test_bin_builds_first_and_says_why_it_failed(tmp_path: Path, plugin: Path, data: Path) -> None:
    done = subprocess.run(
        [*BARE, str(plugin / "hooks" / "launch.py"), "cli", "status"],
        env=env_for(tmp_path, data),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == b""
    assert done.stderr.decode().splitlines() == [
        f"ralphstate: setting up its Python environment for plugin version {VERSION}...",
        f"ralphstate: its Python environment could not be built; see {data / 'build.log'}.",
    ]
    assert "exit status" in (data / "build.log").read_text()


# -- the plugin's files --------------------------------------------------------------------


def test_the_marketplace_offers_this_plugin_from_the_repository() -> None:
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert market["name"] == "ralphstate" and market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == manifest["name"] == "ralphstate"
    assert entry["source"] == "./"
    assert "version" not in entry  # plugin.json's version is the one that counts


def test_the_versions_agree() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert manifest["version"] == project["version"] == ralphstate.__version__


@POSIX_ONLY
def test_without_its_launcher_the_plugin_command_lets_the_task_complete(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    """A plugin whose launcher is missing (an update under way): Python would exit 2 on
    the file it cannot open, which Claude Code reads as a refusal of every task; the
    command lets the task complete and says why on stderr."""
    shutil.copy2(REPO / "hooks" / "hooks.json", plugin / "hooks" / "hooks.json")
    (plugin / "hooks" / "launch.py").unlink()
    [group] = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]["TaskCompleted"]
    [handler] = group["hooks"]
    bin_dir = tmp_path / "interpreters"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    env = env_for(tmp_path, data, CLAUDE_PLUGIN_ROOT=str(plugin), PATH=str(bin_dir))
    done = subprocess.run(
        ["/bin/sh", "-c", handler["command"]], input=TASK, env=env, capture_output=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"no hooks/launch.py" in done.stderr
