"""The Claude Code plugin's own environment, as real processes: the build a hook starts
under CLAUDE_PLUGIN_DATA and what the person is told meanwhile, `bin/ralphstate`, and
the plugin's files.

The builds here run `python -m venv` and pip for real, offline (pip is pointed at an
empty directory: the build fails, as it does without a network); the environments the
commands run are stand-ins (a script in place of the environment's Python). The build
that succeeds is in tests/e2e/test_plugin_e2e.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import ralphstate
from tests.helpers import REPO
from tests.helpers.plugin import (
    BARE,
    POSIX_ONLY,
    PREPARING,
    TASK,
    VERSION,
    env_for,
    env_home,
    fake_env,
    hook,
    may_loop,
    plugin_env_module,
    notice,
    plugin_copy,
    wait_for_build,
)

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
    assert (env_home(data) / "build.lock").exists()
    assert notice(hook(launch, "stop", env)) == PREPARING
    wait_for_build(data)
    log = (env_home(data) / "build.log").read_text()
    assert f"ralphstate plugin {VERSION}: building {env_home(data) / 'venv'} from {plugin}" in log
    assert "-m pip install" in log
    # pip found nothing to install: the build failed, and each hook says so ...
    assert (env_home(data) / "build-failed").read_text() == VERSION
    failed = (
        "ralphstate: its Python environment could not be built"
        f" (see {env_home(data) / 'build.log'});"
        " loops are not enforced. A new session tries again."
    )
    for event in ("stop", "pre-compact"):
        assert notice(hook(launch, event, env)) == failed
    assert not (env_home(data) / "build.lock").exists()  # ... without starting another build
    assert notice(hook(launch, "session-start", env)) == PREPARING
    assert (env_home(data) / "build.lock").exists()
    wait_for_build(data)


def test_a_build_under_way_is_not_started_twice(tmp_path: Path, plugin: Path, data: Path) -> None:
    env_home(data).mkdir(parents=True)
    (env_home(data) / "build.lock").write_text(str(os.getpid()))
    done = hook(plugin / "hooks" / "launch.py", "stop", env_for(tmp_path, data))
    assert notice(done) == PREPARING
    time.sleep(0.5)
    assert not (env_home(data) / "build.log").exists()
    assert (env_home(data) / "build.lock").read_text() == str(os.getpid())


def test_a_lock_left_by_a_build_that_died_is_taken_over(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    env_home(data).mkdir(parents=True)
    lock = env_home(data) / "build.lock"
    lock.write_text("12345")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    done = hook(plugin / "hooks" / "launch.py", "stop", env_for(tmp_path, data))
    assert notice(done) == PREPARING
    wait_for_build(data)
    assert "building" in (env_home(data) / "build.log").read_text()


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
    log = env_home(data) / "build.log"
    assert done.stderr.decode().splitlines() == [
        f"ralphstate: setting up its Python environment for plugin version {VERSION}...",
        f"ralphstate: its Python environment could not be built; see {log}.",
    ]
    assert "exit status" in (env_home(data) / "build.log").read_text()


# -- the plugin's files --------------------------------------------------------------------


def test_the_marketplace_offers_this_plugin_from_the_repository() -> None:
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert market["name"] == "ralphstate" and market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == manifest["name"] == "ralphstate"
    assert entry["source"] == "./plugin"
    assert "version" not in entry  # plugin.json's version is the one that counts


def test_the_plugin_directory_links_what_the_plugin_needs_and_nothing_else() -> None:
    """`plugin/` is what Claude Code copies into its cache: links to the plugin's own
    files and to what its environment is built from, never the checkout's `.venv` or
    tests. Each link is a relative one into the repository, which the client copies as
    the file it names."""
    plugin_env = plugin_env_module()
    published = REPO / "plugin"
    needed = {".claude-plugin", "bin", "commands", "hooks", "skills", "LICENSE"}
    assert {p.name for p in published.iterdir()} == needed | set(plugin_env.SOURCES)
    for link in published.iterdir():
        assert link.is_symlink() and str(link.readlink()) == f"../{link.name}", link
        assert link.resolve() == (REPO / link.name).resolve()


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


# -- the build lock names the build ---------------------------------------------------------


def _dead_pid() -> int:
    """The pid of a process that has ended (and been waited for)."""
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


@POSIX_ONLY
def test_the_lock_names_the_build_and_a_killed_build_is_taken_over_at_once(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    """The lock holds the detached build's own pid, not the hook's that started it: a
    build killed mid-way is taken over by the next hook at once, not in 15 minutes."""
    env = env_for(tmp_path, data)
    launch = plugin / "hooks" / "launch.py"
    assert notice(hook(launch, "session-start", env)) == PREPARING
    lock = env_home(data) / "build.lock"
    pid = int(lock.read_text())
    command = Path(f"/proc/{pid}/cmdline")
    if command.exists():  # Linux: the process is the build itself
        assert b"build\0--locked" in command.read_bytes()
    os.kill(pid, 9)
    deadline = time.monotonic() + 10
    while plugin_env_module().alive(pid):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert lock.exists()  # a killed build leaves its lock
    (env_home(data) / "build.log").unlink(missing_ok=True)
    assert notice(hook(launch, "stop", env)) == PREPARING
    assert int(lock.read_text()) != pid  # a new build took it
    wait_for_build(data)
    assert "building" in (env_home(data) / "build.log").read_text()


def test_bin_does_not_wait_for_a_build_that_died(tmp_path: Path, plugin: Path, data: Path) -> None:
    """A fresh lock naming a process that has ended: `bin/ralphstate` builds at once
    (here the offline build fails in seconds) instead of waiting out the lock's age."""
    env_home(data).mkdir(parents=True)
    (env_home(data) / "build.lock").write_text(str(_dead_pid()))
    started = time.monotonic()
    done = subprocess.run(
        [*BARE, str(plugin / "hooks" / "launch.py"), "cli", "--version"],
        env=env_for(tmp_path, data),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert time.monotonic() - started < 100
    assert "exit status" in (env_home(data) / "build.log").read_text()


# -- one environment per version ------------------------------------------------------------


@POSIX_ONLY
def test_each_version_has_its_own_environment_and_an_old_one_goes_with_its_files(
    tmp_path: Path, data: Path
) -> None:
    """A session still running the old version keeps its environment while Claude Code
    keeps that version's files (it does, for about 14 days after an update); a build
    of the new version never touches it, and removes it once those files are gone."""
    cache = tmp_path / "cache" / "market" / "ralphstate"
    old, new = plugin_copy(cache / "0.0.9", "0.0.9"), plugin_copy(cache / "9.0.0", "9.0.0")
    fake_env(data, "0.0.9", body="print(json.dumps({'ran': 'old'}))", root=old)
    env = env_for(tmp_path, data)
    may_loop(tmp_path)
    assert notice(hook(new / "hooks" / "launch.py", "stop", env)) == PREPARING.replace(
        VERSION, "9.0.0"
    )
    wait_for_build(data, version="9.0.0")
    # The old session's hook still runs its own environment, not rebuilt.
    assert json.loads(hook(old / "hooks" / "launch.py", "stop", env).stdout) == {"ran": "old"}
    assert not (env_home(data, "0.0.9") / "build.log").exists()
    # Claude Code's sweep removes the old version's files; the next build removes its env.
    shutil.rmtree(old)
    hook(new / "hooks" / "launch.py", "session-start", env)
    wait_for_build(data, version="9.0.0")
    assert sorted(p.name for p in data.iterdir()) == ["env-9.0.0"]


@POSIX_ONLY
def test_the_single_environment_of_older_plugins_goes_once_its_version_is_gone(
    tmp_path: Path, data: Path
) -> None:
    """Versions before per-version environments kept one at `data/venv`: a new
    version's build leaves it while the cache holds that version, then removes it."""
    cache = tmp_path / "cache" / "market" / "ralphstate"
    old, new = plugin_copy(cache / "0.0.9", "0.0.9"), plugin_copy(cache / "9.0.0", "9.0.0")
    (data / "venv").mkdir(parents=True)
    (data / "venv" / "ralphstate-plugin-version").write_text("0.0.9")
    (data / "build.log").write_text("ready\n")
    env = env_for(tmp_path, data)
    hook(new / "hooks" / "launch.py", "session-start", env)
    wait_for_build(data, version="9.0.0")
    assert (data / "venv").is_dir()
    shutil.rmtree(old)
    hook(new / "hooks" / "launch.py", "session-start", env)
    wait_for_build(data, version="9.0.0")
    assert sorted(p.name for p in data.iterdir()) == ["env-9.0.0"]




def test_at_first_use_a_shell_without_ralphstate_is_told_the_one_command_that_adds_it(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    """The plugin's `bin/ralphstate` is the agent's alone: where the person's PATH has
    no `ralphstate`, the first use says in one line how to put one there, from the
    plugin's own files; where it has one, nothing more is said."""
    launch = plugin / "hooks" / "launch.py"
    bare = env_for(tmp_path, data, PATH=os.pathsep.join(["/usr/bin", "/bin"]))
    said = notice(hook(launch, "session-start", bare))
    assert said == (
        f"{PREPARING} For `ralphstate run`, `status` and `report` in your own shell, install"
        f' the command too: pipx install "{plugin}"'
    )
    assert "\n" not in said
    assert notice(hook(launch, "stop", env_for(tmp_path, data))) == PREPARING
    wait_for_build(data)
