"""A real project with a really failing test, the person who starts its loop, and a
scripted agent that works on it as a coding agent does: with real `ralphstate`
processes carrying the agent's variables, direct edits of the project's files, and a
real Stop hook process at the end of each turn.

The project is a git repository holding a small package, `calc`, whose `mul` is not
written yet, and a pytest suite whose `test_mul` fails on it. The person starts the
loop (no agent variable in their environment): one criterion, "tests pass", checked
by pytest, trusted on this machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from tests.helpers.gitrepo import git
from tests.helpers.terminal import asks, at_terminal

CRITERION = "tests pass"
SPEC = "Finish calc: write mul"
# The person's check: the project's own test suite (this interpreter's pytest). Without
# hypothesis's plugin, which this interpreter has for ralphstate's own tests and the
# project does not use: it imports all of hypothesis at the end of every run, a second
# or more of each check on a busy machine.
CHECK = f'"{sys.executable}" -m pytest -q -p no:cacheprovider -p no:hypothesispytest'
SESSION = "7f3c9e21-5b4d-4e8a-9c1f-2d6b8a0e4f13"
# How the person reads the session in ralphstate's messages (core/actor.py `describe`).
SHOWN_SESSION = f"claude session {SESSION[:8]}"
DONE = "All the tests pass now. <loop-complete>"

CALC = '''\
"""A small calculator."""


def add(a: int, b: int) -> int:
    return a + b


def mul(a: int, b: int) -> int:
    raise NotImplementedError("mul is not written yet")
'''
FIXED_CALC = CALC.replace('raise NotImplementedError("mul is not written yet")', "return a * b")
TEST_CALC = """\
from calc import add, mul


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(3, 4) == 12
"""
# A conftest.py that skips every test: pytest then exits 0.
SKIP_ALL = """\
import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.skip(reason="flaky"))
"""
FILES = {
    ".gitignore": "__pycache__/\n*.pyc\n.pytest_cache/\n",
    "pyproject.toml": (
        '[project]\nname = "calc"\nversion = "0.1.0"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    ),
    "calc/__init__.py": CALC,
    "tests/__init__.py": "",
    "tests/test_calc.py": TEST_CALC,
}
# Variables of a ralphstate process that must not leak into the person's or the agent's
# environment from the test's own: they would change which loop or whose it is.
_NOT_INHERITED = ("CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR", "RALPHSTATE_RUNNER")


def person_env() -> dict[str, str]:
    """The person's shell: no agent variable at all (tests/conftest.py clears the rest)."""
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def ralphstate(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`python -I -m ralphstate ARGS` in `root`, as a real process with exactly `env`:
    the project's own modules are not on the import path, as for the console script."""
    return subprocess.run(
        [sys.executable, "-I", "-m", "ralphstate", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


class Person:
    """The person at their own shell in the project (`env`: that shell's environment,
    by default the test's own without an agent variable)."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = env

    def rs(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        env = person_env() if self.env is None else self.env
        if asks(args):  # the person types yes at their terminal (loop/person.py)
            argv = [sys.executable, "-I", "-m", "ralphstate", *args]
            typed = at_terminal([], cwd=self.root, env=env, program=argv, inherit=False)
            done = subprocess.CompletedProcess(argv, typed.code, typed.screen, typed.screen)
        else:
            done = ralphstate(self.root, env, *args)
        if ok:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def status(self) -> str:
        return self.rs("status").stdout


# The first project this process made, once its test was seen to fail (make_project).
_SEEN_FAILING: list[str] = []


def make_project(root: Path, person: Person | None = None) -> Path:
    """The project in `root`, committed, its test really failing, and the loop `person`
    started and trusted. Returns `root`. That the test fails is seen on the first project
    a test process makes (a real pytest run): every project holds the same files."""
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc: add works, mul to write")
    if not _SEEN_FAILING:  # the same files each time: run once in this process
        failing = subprocess.run(CHECK, shell=True, cwd=root, capture_output=True, text=True)
        assert failing.returncode != 0 and "test_mul" in failing.stdout, failing.stdout
        _SEEN_FAILING.append(str(root))
    person = person or Person(root)
    person.rs("init", SPEC, "-c", CRITERION)
    person.rs("criteria", "check", CRITERION, CHECK)
    person.rs("trust")
    return root


class Agent:
    """A coding agent in a Claude Code session on the project: its Bash tool runs
    `ralphstate` with the variables Claude Code sets, it edits files directly, and each
    turn ends with the client's Stop hook, a real `ralphstate hook stop` process."""

    def __init__(self, root: Path, session: str = SESSION) -> None:
        self.root = root
        self.session = session

    def env(self, **extra: str) -> dict[str, str]:
        env = person_env()
        env.update(
            CLAUDECODE="1",
            CLAUDE_CODE_ENTRYPOINT="cli",
            CLAUDE_CODE_SESSION_ID=self.session,
            CLAUDE_PROJECT_DIR=str(self.root),
        )
        env.update(extra)
        return env

    def rs(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """`ralphstate ARGS` from the agent's Bash tool; whatever it answers."""
        return ralphstate(self.root, self.env(**extra), *args)

    def shell(self, command: str) -> subprocess.CompletedProcess[str]:
        """A shell command from the agent's Bash tool."""
        return subprocess.run(
            command, shell=True, cwd=self.root, env=self.env(), capture_output=True, text=True
        )

    def write(self, name: str, text: str) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def edit_state(self, **changes: Any) -> None:
        """A hand edit of `.loop/state.json`, as the agent's editor tool makes one."""
        path = self.root / ".loop" / "state.json"
        raw = orjson.loads(path.read_bytes())
        raw.update(changes)
        path.write_bytes(orjson.dumps(raw, option=orjson.OPT_INDENT_2))

    def stop(self, message: str = DONE) -> dict[str, Any]:
        """The turn ends: Claude Code runs the Stop hook with the Stop input on stdin and
        the hook environment. What the hook printed ({} for nothing)."""
        data = {
            "session_id": self.session,
            "transcript_path": str(self.root / "no-transcript.jsonl"),
            "cwd": str(self.root),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": message,
        }
        done = subprocess.run(  # the command `install` writes runs with -I as well
            [sys.executable, "-I", "-m", "ralphstate", "hook", "stop"],
            cwd=self.root,
            env=self.env(),
            input=orjson.dumps(data),
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done
        out: dict[str, Any] = orjson.loads(done.stdout) if done.stdout.strip() else {}
        return out

    def insist(self, tries: int = 3) -> list[dict[str, Any]]:
        """A goal-seeking agent's end of the work: it says the marker, and while the Stop
        hook blocks it on an unmet criterion it claims that criterion (`criteria set NAME
        true`, with no check it could pass) and says the marker again. Every output of
        the Stop hook, in order."""
        outs = [self.stop()]
        for _ in range(tries - 1):
            if outs[-1].get("decision") != "block":
                break
            for name in state(self.root)["criteria"]:
                self.rs("criteria", "set", name, "true")
            outs.append(self.stop())
        return outs

    def commit(self, message: str = "work") -> None:
        """The agent commits its work, as agents are told to."""
        done = self.shell(f"git add -A && git commit -q -m '{message}'")
        assert done.returncode == 0, done.stderr


def state(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((root / ".loop" / "state.json").read_bytes())
    return data


def history(root: Path, *events: str) -> list[dict[str, Any]]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    entries = [orjson.loads(line) for line in lines if line.strip()]
    return [e for e in entries if not events or e.get("event") in events]


def by_agent(entry: dict[str, Any], session: str = SESSION) -> bool:
    """The history line names the agent's session as its actor."""
    who = entry.get("actor") or {}
    return who.get("kind") == "agent" and who.get("session") == session
