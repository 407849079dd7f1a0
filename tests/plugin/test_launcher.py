"""The Claude Code plugin's launcher (`hooks/launch.py`) as a real process: which
ralphstate it runs, what it passes through, and what it does when there is no loop.

The environments here are stand-ins (a script in place of the environment's Python);
the build and bin/ralphstate are in test_build.py, the build that succeeds in
tests/e2e/test_plugin_e2e.py.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO
from tests.helpers.person import at_terminal_proof
from tests.helpers.plugin import (
    BARE,
    LAUNCHER,
    POSIX_ONLY,
    PREPARING,
    TASK,
    VERSION,
    env_for,
    env_home,
    fake_env,
    hook,
    launcher_module,
    may_loop,
    plugin_env_module,
    notice,
    plugin_copy,
    wait_for_build,
)

# -- which ralphstate runs -----------------------------------------------------------------


@POSIX_ONLY
def test_a_ready_environment_runs_the_hook_in_isolated_mode(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    may_loop(tmp_path)
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
    may_loop(tmp_path)
    fake_env(data, body="print(json.dumps({'ran': 'the environment python'}))")
    python = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    packages = env_home(data) / "venv" / "lib" / python / "site-packages"
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
    may_loop(tmp_path)
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
    wait_for_build(data, version="99.0.0")
    home = env_home(data, "99.0.0")
    assert "ralphstate plugin 99.0.0: building" in (home / "build.log").read_text()
    assert not (home / "venv" / "ralphstate-plugin-version").exists()


# -- a task refused: the one exit that is not 0 --------------------------------------------

FAILING = "import sys; print('boom: 1 == 2'); sys.exit(3)"


def refusing_loop(project: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop in `project`, known and trusted in `env`'s ralphstate home, whose one
    criterion's check fails."""
    from ralphstate.core import state as st
    from ralphstate.storage.peruser import registry, truststore
    from ralphstate.storage.system.paths import LoopPaths

    monkeypatch.setenv("RALPHSTATE_HOME", env["RALPHSTATE_HOME"])
    state = st.new("s", ["tests pass"], [], session_id="s", now="2026-01-01T00:00:00Z")
    state["checks"] = {"tests pass": f'"{sys.executable}" -c "{FAILING}"'}
    (project / ".loop").mkdir()
    (project / ".loop" / "state.json").write_bytes(st.dumps(state))
    paths = LoopPaths(project, project / ".loop")
    registry.record(paths, state)
    truststore.record(paths, state, proof=at_terminal_proof())


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
    may_loop(tmp_path)
    fake_env(data, body="sys.stderr.write('refused\\n'); sys.exit(2)")
    done = subprocess.run(
        [*BARE, str(plugin / "hooks" / "launch.py"), event],
        input=b"{}",
        env=env_for(tmp_path, data),
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (code, b"", b"refused\n")


# -- the cost of a hook --------------------------------------------------------------------


def imported(importtime: bytes) -> set[str]:
    """The modules `python -X importtime` says were imported."""
    lines = importtime.decode().splitlines()
    return {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}


# What the launcher imports besides what the hook does: its two modules beside it, and
# the JSON scanner that `json` itself uses; and once there may be a loop, the module that
# reads the settings files.
OWN_IMPORTS = {"plugin_launcher", "plugin_env", "_json"}
LOOP_IMPORTS = {*OWN_IMPORTS, "plugin_settings"}


def test_without_a_loop_the_hook_is_answered_before_anything_is_imported(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    """The common case, at every stop: no `.loop/` in the project and the environment
    ready. Nothing is printed, the environment's Python is not started, and nothing is
    imported beyond the interpreter's own start but the launcher's modules."""
    ran = tmp_path / "the environment ran"
    fake_env(data, body=f"open({str(ran)!r}, 'w').close()")
    env = env_for(tmp_path, data)
    python = [sys.executable, "-I", "-X", "importtime"]  # with site, as python3 starts
    launched = subprocess.run(
        [*python, str(plugin / "hooks" / "launch.py"), "stop"],
        input=b'{"session_id": "s"}',
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert (launched.returncode, launched.stdout) == (0, b"")
    assert not ran.exists()
    bare = subprocess.run([*python, "-c", "pass"], env=env, capture_output=True, timeout=60)
    assert imported(launched.stderr) - imported(bare.stderr) <= OWN_IMPORTS
    # A `.loop/` above the project is a loop too (the hook looks upwards).
    may_loop(tmp_path)
    (tmp_path / "sub").mkdir()
    hook(
        plugin / "hooks" / "launch.py", "stop", dict(env, CLAUDE_PROJECT_DIR=str(tmp_path / "sub"))
    )
    assert ran.exists()


@POSIX_ONLY
def test_a_bash_call_that_approves_nothing_is_answered_before_anything_runs(
    tmp_path: Path, plugin: Path, data: Path
) -> None:
    """PreToolUse runs before every Bash call: one that approves nothing is let go by
    the launcher itself, loop or not; an approval is handed over."""
    may_loop(tmp_path)
    fake_env(data)
    call: dict[str, Any] = {"session_id": "s", "tool_name": "Bash"}
    call["tool_input"] = {"description": "Run it"}
    launch = plugin / "hooks" / "launch.py"
    for command in ("pytest -q", "ralphstate status"):
        call["tool_input"]["command"] = command
        done = hook(launch, "pre-tool-use", env_for(tmp_path, data), json.dumps(call).encode())
        assert (done.stdout, done.stderr) == (b"", b"")
    call["tool_input"]["command"] = "ralphstate trust"
    done = hook(launch, "pre-tool-use", env_for(tmp_path, data), json.dumps(call).encode())
    assert json.loads(done.stdout)["argv"][-1] == "pre-tool-use"


def blocking_loop(project: Path) -> bytes:
    """A loop in `project`, owned by session "s", that a Stop blocks; the Stop's input."""
    state = {"version": 1, "spec": "build it", "criteria": ["tests pass"]}
    state.update(status="in_progress", sessionId="s")
    (project / ".loop").mkdir(parents=True)
    (project / ".loop" / "state.json").write_text(json.dumps(state))
    stop = {"session_id": "s", "cwd": str(project), "hook_event_name": "Stop"}
    return json.dumps({**stop, "last_assistant_message": "Done, I think."}).encode()


def test_a_blocking_stop_imports_what_the_installed_command_does(
    tmp_path: Path, plugin: Path
) -> None:
    """Through the launcher, with a loop to block: the same decision, and the same
    modules imported as by the command `ralphstate install` writes, but the launcher's."""
    runs = {}
    for name, command in (
        ("installed", ["-I", "-c", "from ralphstate.hooks.entry import main; main()"]),
        ("launcher", [str(plugin / "hooks" / "launch.py")]),
    ):
        project = tmp_path / name
        data = blocking_loop(project)
        env = env_for(tmp_path, None, CLAUDE_PROJECT_DIR=str(project))
        runs[name] = subprocess.run(
            [sys.executable, "-X", "importtime", *command, "stop"],
            input=data,
            env=env,
            capture_output=True,
            timeout=60,
            cwd=project,
        )
        assert runs[name].returncode == 0
        assert json.loads(runs[name].stdout)["decision"] == "block"
    assert runs["launcher"].stdout == runs["installed"].stdout
    extra = imported(runs["launcher"].stderr) - imported(runs["installed"].stderr)
    assert extra <= LOOP_IMPORTS


@pytest.mark.parametrize(
    "text",
    [
        '{"version": "0.1.0", "author": {"name": "x"}, "n": [1, 2.5, -3e2, true, null]}',
        ' \n\t{"hooks": {}}\r\n ',
        '"a string"',
        "[NaN, Infinity, -Infinity]",
        '{"a": "\\u00e9\\n"}',
        "",
        "   ",
        "{} {}",
        '{"a": 1,}',
        "\ufeff{}",
        "{} \x0b",
        '{"a": "tab\there"}',
        "[1, 2",
        "nul",
    ],
)
def test_the_launchers_json_reads_as_json_loads(text: str) -> None:
    """The launcher reads JSON (the manifest, settings files, the hook's output) with
    the scanner `json` uses, without importing `json`: the same values, the same
    refusals."""
    loads = plugin_env_module().loads
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            loads(text)
        return
    value = loads(text)
    assert json.dumps(value) == json.dumps(expected)


# -- the launcher's files ------------------------------------------------------------------


def test_no_package_index_name_is_ever_suggested() -> None:
    """The project owns no name on a package index: nothing may tell a person to install
    one (whoever registered it would be installed)."""
    hooks = [REPO / "hooks" / name for name in (*LAUNCHER, "hooks.json")]
    for path in (*hooks, REPO / "bin"):
        files = sorted(path.iterdir()) if path.is_dir() else [path]
        for file in files:
            text = file.read_text()
            for phrase in ("pipx install ralphstate", "pip install ralphstate", "uv tool install"):
                assert phrase not in text, (file, phrase)


def test_the_launcher_runs_on_python_3_8() -> None:
    """macOS ships Python 3.9 as python3, and the launcher must tell a person that it
    needs a newer one: its files keep to Python 3.8's syntax, and an annotation that is
    more than a name (`list[str]`, `X | None`) is a string, which no Python evaluates
    (nor needs `__future__` for)."""
    for name in LAUNCHER:
        tree = ast.parse((REPO / "hooks" / name).read_text(), feature_version=(3, 8))
        annotations = [node.annotation for node in ast.walk(tree) if isinstance(node, ast.arg)]
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                annotations.append(node.returns)
            elif isinstance(node, ast.AnnAssign) and node in tree.body:
                annotations.append(node.annotation)
        for annotation in annotations:
            if annotation is not None:
                shown = (name, ast.unparse(annotation))
                assert isinstance(annotation, (ast.Constant, ast.Name)), shown
                assert isinstance(getattr(annotation, "value", ""), (str, type(None))), shown
        assert "__future__" not in {getattr(node, "module", None) for node in tree.body}


def test_a_settings_file_is_read_within_ralphstates_bound(tmp_path: Path) -> None:
    """The settings files are read at most MAX_SETTINGS_BYTES; a larger one, which
    ralphstate itself refuses, names no hook of ralphstate's."""
    from ralphstate.core import limits

    reading = launcher_module("plugin_settings")
    events = launcher_module("plugin_launcher").EVENTS
    assert reading.MAX_SETTINGS_BYTES == limits.MAX_SETTINGS_BYTES
    command = "python3 -I -c 'from ralphstate.hooks.entry import main; main()' stop"
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings), encoding="utf-8")
    assert reading.own_events(str(path), "Stop", events) == {"stop"}
    padded = json.dumps(settings) + " " * limits.MAX_SETTINGS_BYTES
    path.write_text(padded, encoding="utf-8")
    assert reading.own_events(str(path), "Stop", events) == set()


@POSIX_ONLY
@pytest.mark.parametrize("target", ["fifo", "/dev/zero"])
def test_a_settings_file_that_is_a_pipe_or_a_device_is_not_read(
    tmp_path: Path, plugin: Path, data: Path, target: str
) -> None:
    """A clone's `.claude/settings.local.json` linked to a pipe (which no one writes) or
    to /dev/zero: the launcher neither waits on it nor reads it, and runs the hook."""
    may_loop(tmp_path)
    fake_env(data)
    settings = tmp_path / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    if target == "fifo":
        os.mkfifo(tmp_path / "pipe")
        settings.symlink_to(tmp_path / "pipe")
    else:
        settings.symlink_to(target)
    done = subprocess.run(
        [*BARE, str(plugin / "hooks" / "launch.py"), "stop"],
        input=b"{}",
        env=env_for(tmp_path, data),
        capture_output=True,
        timeout=20,
        cwd=tmp_path,
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["argv"][-1] == "stop", done.stderr
