"""The Claude Code plugin's own environment, as real processes: the build a hook starts
under CLAUDE_PLUGIN_DATA and what the person is told meanwhile, `bin/ralphstate`, and
the plugin's files.

The builds here run `python -m venv` and pip for real, offline (pip is pointed at an
empty directory: the build fails, as it does without a network); the environments the
commands run are stand-ins (a script in place of the environment's Python). The build
that succeeds is in tests/e2e/test_plugin_e2e.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import ralphstate
from tests.helpers import REPO
from tests.helpers.plugin import (
    BARE,
    POSIX_ONLY,
    PREPARING,
    TASK,
    VERSION,
    env_for,
    fake_env,
    hook,
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
    assert entry["source"] == "./plugin"
    assert "version" not in entry  # plugin.json's version is the one that counts


def test_the_plugin_directory_links_what_the_plugin_needs_and_nothing_else() -> None:
    """`plugin/` is what Claude Code copies into its cache: links to the plugin's own
    files and to what its environment is built from, never the checkout's `.venv` or
    tests. Each link is a relative one into the repository, which the client copies as
    the file it names."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("plugin_env", REPO / "hooks" / "plugin_env.py")
    assert spec is not None and spec.loader is not None
    plugin_env = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin_env)
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
