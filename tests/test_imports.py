"""What a process imports. The Stop hook runs at every stop of every session and
`criteria set` dozens of times a loop, so each imports only what it needs: the hook
without a loop nothing but a few small modules of its own, the hooks never click,
a command the module of its own command group and not those of `run`, `verify` or
`install`.

Each case is a real interpreter running the real entry point, its hook input on
stdin from a file; it reports the modules that were not loaded when the interpreter
had started (what `python -c pass` loads is never held against it).
"""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.install.command import shell_command

SESSION = "imports-session"
# Runs the code in $PROBE_RUN and writes to $PROBE_OUT, one a line, every module it
# imported; also when the code ends the process with os._exit, as a hook process does.
PROBE = """
import os, sys
_start = set(sys.modules)
_exit = os._exit
def _report():
    with open(os.environ["PROBE_OUT"], "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(set(sys.modules) - _start)))
def _report_and_exit(code):
    _report()
    _exit(code)
os._exit = _report_and_exit
try:
    exec(os.environ["PROBE_RUN"])
finally:
    _report()
"""
# The console script's way: `ralphstate hook stop` through ralphstate.__main__.main.
CONSOLE = "from ralphstate.__main__ import main\nsys.argv = ['ralphstate', *{args!r}]\nmain()"
# What ralphstate.__main__ hands the hooks to.
ENTRY = "from ralphstate.hooks.entry import run_hook\nsys.exit(run_hook({args!r}))"
# A way to run a hook: (the interpreter's options, the code, the arguments after it).
Way = tuple[list[str], str, list[str]]


def installed(sub: str) -> Way:
    """The command `ralphstate install` writes, word by word: `"PYTHON" -I -c "CODE"
    stop`; the probe runs that code with those options and arguments."""
    words = shlex.split(shell_command(sub))
    if "-c" not in words:
        pytest.skip(f"this installation's hook command runs no code: {shlex.join(words)}")
    assert Path(words[0]) == Path(sys.executable).absolute()
    at = words.index("-c")
    flags, code, args = words[1:at], words[at + 1], words[at + 2 :]
    assert flags == ["-I"]  # isolated: nothing from the project or PYTHON* variables
    return flags, code, args


HOOK_WAYS: dict[str, Callable[[str], Way]] = {
    "console": lambda sub: ([], CONSOLE.format(args=["hook", sub]), []),
    "entry": lambda sub: ([], ENTRY.format(args=[sub]), []),
    "installed": installed,
}

# Never on the path of the hook without a loop (those that start-up loaded aside).
NOT_WITHOUT_A_LOOP = (
    "click",
    "filelock",
    "platformdirs",
    "orjson",
    "dataclasses",
    "typing",
    "re",
    "pathlib",
    "json",
    "subprocess",
)
# Never imported by a command that records or shows the loop (subprocess: unless the
# dependencies import it themselves on this interpreter, as click does on Python 3.10).
NOT_FOR_A_RECORD = ("ralphstate.run", "ralphstate.verify", "ralphstate.install", "subprocess")


@functools.cache
def loaded_by_the_dependencies() -> frozenset[str]:
    """What importing a command's dependencies alone loads on this interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, click, filelock, orjson; print(*sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return frozenset(done.stdout.split())


def not_for_a_record() -> tuple[str, ...]:
    return tuple(n for n in NOT_FOR_A_RECORD if n not in loaded_by_the_dependencies())


NOT_FOR_A_RECORD_CLI = (
    "ralphstate.cli.run",
    "ralphstate.cli.verify",
    "ralphstate.cli.trust",
    "ralphstate.cli.config",
    "ralphstate.cli.install",
    "ralphstate.cli.doctor",
    "ralphstate.cli.demo",
)


class Probe:
    def __init__(self, code: int, out: bytes, err: bytes, modules: set[str]) -> None:
        self.code, self.out, self.err, self.modules = code, out, err, modules

    def loaded(self, names: tuple[str, ...]) -> list[str]:
        """The modules of `names` (a package counts with its submodules) it imported."""
        return sorted(
            m for m in self.modules if any(m == n or m.startswith(n + ".") for n in names)
        )


def probe(
    run: str,
    *,
    cwd: Path,
    stdin: Path | None,
    env: dict[str, str],
    flags: list[str] | None = None,
    args: list[str] | None = None,
) -> Probe:
    """`run` in a real interpreter started with `flags`, `args` after the code."""
    out = cwd.parent / f"{cwd.name}-modules.txt"
    full_env = dict(os.environ, PROBE_RUN=run, PROBE_OUT=str(out), **env)
    full_env.pop("PYTHONSTARTUP", None)
    with Path(stdin or os.devnull).open("rb") as source:
        done = subprocess.run(
            [sys.executable, *(flags or []), "-c", PROBE, *(args or [])],
            stdin=source,
            capture_output=True,
            cwd=cwd,
            env=full_env,
            timeout=60,
        )
    modules = set(out.read_text(encoding="utf-8").split()) if out.exists() else set()
    assert modules, f"the probe reported nothing: {done.stderr.decode(errors='replace')}"
    return Probe(done.returncode, done.stdout, done.stderr, modules)


def hook_input(tmp_path: Path, project: Path, event: str) -> Path:
    path = tmp_path / "hook-input.json"
    data: dict[str, Any] = {"session_id": SESSION, "cwd": str(project), "hook_event_name": event}
    if event == "Stop":
        data["last_assistant_message"] = "Still working on it."
    else:
        data["source"] = "startup"
    path.write_bytes(orjson.dumps(data))
    return path


@pytest.mark.parametrize("way", sorted(HOOK_WAYS))
def test_the_stop_hook_without_a_loop_imports_nothing_heavy(
    project: Path, tmp_path: Path, way: str
) -> None:
    flags, run, args = HOOK_WAYS[way]("stop")
    result = probe(
        run,
        flags=flags,
        args=args,
        cwd=project,
        stdin=hook_input(tmp_path, project, "Stop"),
        env={"CLAUDE_PROJECT_DIR": str(project)},
    )
    assert (result.code, result.out, result.err) == (0, b"", b"")
    assert "ralphstate.hooks.entry" in result.modules  # the hook did run
    assert result.loaded(NOT_WITHOUT_A_LOOP) == []


@pytest.mark.parametrize("event", ["Stop", "SessionStart"])
@pytest.mark.parametrize("way", sorted(HOOK_WAYS))
def test_the_hooks_with_a_loop_never_import_click(
    project: Path, tmp_path: Path, rs: Any, monkeypatch: pytest.MonkeyPatch, way: str, event: str
) -> None:
    sub = {"Stop": "stop", "SessionStart": "session-start"}[event]
    flags, run, args = HOOK_WAYS[way](sub)
    with monkeypatch.context() as session:
        session.setenv("CLAUDE_CODE_SESSION_ID", SESSION)
        assert rs("init", "Build it", "-c", "tests pass", "-s", "write it").code == 0
    result = probe(
        run,
        flags=flags,
        args=args,
        cwd=project,
        stdin=hook_input(tmp_path, project, event),
        env={"CLAUDE_PROJECT_DIR": str(project)},
    )
    assert (result.code, result.err) == (0, b"")
    answer = orjson.loads(result.out)
    if event == "Stop":
        assert answer["decision"] == "block"
    else:
        assert "Build it" in answer["hookSpecificOutput"]["additionalContext"]
    assert result.loaded(("click", "ralphstate.cli.app", "ralphstate.cli.lazy")) == []


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["criteria", "set", "tests pass", "true"], "tests pass: met"),
        (["step", "done", "1"], "done: write it"),
        (["status"], "spec: Build it"),
    ],
)
def test_a_command_imports_its_own_group_only(
    project: Path, rs: Any, args: list[str], shown: str
) -> None:
    assert rs("init", "Build it", "-c", "tests pass", "-s", "write it").code == 0
    result = probe(
        CONSOLE.format(args=args).replace("main()", "sys.exit(main())"),
        cwd=project,
        stdin=None,
        env={},
    )
    assert (result.code, result.err) == (0, b""), result.err
    assert shown in result.out.decode()
    assert "ralphstate.loop.project" in result.modules
    assert result.loaded(not_for_a_record()) == []
    assert result.loaded(NOT_FOR_A_RECORD_CLI) == []


def test_the_status_line_without_a_loop_imports_nothing_heavy(
    project: Path, tmp_path: Path
) -> None:
    """It runs after every message: held to the no-loop hook's imports."""
    from ralphstate.install.statusline_setup import CODE

    data = tmp_path / "status.json"
    data.write_bytes(orjson.dumps({"workspace": {"project_dir": str(project)}, "cwd": "/"}))
    result = probe(CODE, flags=["-I"], cwd=project, stdin=data, env={})
    assert (result.code, result.out, result.err) == (0, b"", b"")
    assert "ralphstate.hooks.statusline" in result.modules
    assert result.loaded(NOT_WITHOUT_A_LOOP) == []


def test_the_post_tool_use_hook_imports_what_the_stop_hook_does(
    project: Path, tmp_path: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It runs after every task tool call: without a loop it takes the Stop hook's
    no-loop path; mirroring a task into a loop it imports what a blocking stop imports,
    and its own two modules."""

    def post(where: Path) -> Probe:
        data = tmp_path / f"post-{where.name}.json"
        task = {"id": "1", "subject": "write the exporter"}
        fields = {"tool_name": "TaskCreate", "tool_response": {"task": task}}
        data.write_bytes(orjson.dumps({"session_id": SESSION, "cwd": str(where), **fields}))
        flags, run, args = installed("post-tool-use")
        env = {"CLAUDE_PROJECT_DIR": str(where)}
        result = probe(run, flags=flags, args=args, cwd=where, stdin=data, env=env)
        assert (result.code, result.out, result.err) == (0, b"", b"")
        return result

    bare = tmp_path / "bare"
    bare.mkdir()
    assert post(bare).loaded(NOT_WITHOUT_A_LOOP) == []
    with monkeypatch.context() as session:
        session.setenv("CLAUDE_CODE_SESSION_ID", SESSION)
        assert rs("init", "Build it", "-c", "tests pass", "-s", "write it").code == 0
    mirrored = post(project)
    assert b"write the exporter" in (project / ".loop" / "state.json").read_bytes()
    flags, run, args = installed("stop")
    stop = probe(
        run,
        flags=flags,
        args=args,
        cwd=project,
        stdin=hook_input(tmp_path, project, "Stop"),
        env={"CLAUDE_PROJECT_DIR": str(project)},
    )
    assert orjson.loads(stop.out)["decision"] == "block"
    assert sorted(mirrored.modules - stop.modules) == [
        "ralphstate.core.tasklist",
        "ralphstate.hooks.post_tool_use",
    ]


def test_the_pre_tool_use_hook_lets_a_bash_call_go_before_importing_anything(
    project: Path, tmp_path: Path, rs: Any
) -> None:
    """It runs before every Bash call: one that names no ralphstate costs what the hook
    without a loop costs, even in a project with a loop; an approval goes further."""
    assert rs("init", "Build it", "-c", "tests pass").code == 0

    def pre(command: str) -> Probe:
        data = tmp_path / "pre.json"
        call = {"tool_name": "Bash", "tool_input": {"command": command}}
        data.write_bytes(orjson.dumps({"session_id": SESSION, "cwd": str(project), **call}))
        flags, run, args = installed("pre-tool-use")
        env = {"CLAUDE_PROJECT_DIR": str(project), "CLAUDE_CODE_SESSION_ATTENDED": "1"}
        return probe(run, flags=flags, args=args, cwd=project, stdin=data, env=env)

    tests = pre("pytest -q")
    assert (tests.code, tests.out, tests.err) == (0, b"", b"")
    assert tests.loaded(NOT_WITHOUT_A_LOOP) == []
    assert "ralphstate.hooks.pre_tool_use" not in tests.modules
    trust = pre("ralphstate trust")
    assert orjson.loads(trust.out)["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert trust.loaded(("click", "ralphstate.cli")) == []
