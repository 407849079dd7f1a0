"""Fixtures that run the real Claude Code client against the scripted API in fake_api.

The client is the one pinned in package.json here (`npm ci` in this directory
installs it); `RALPHSTATE_CLAUDE_BIN` names another binary instead. Without one, the
tests that need it are skipped, and the reason says how to install it.

Every test gets a fresh HOME, project directory, temporary directory and API server on
a loopback port. The client's environment is built from nothing rather than copied, so
neither this machine's Claude Code configuration nor a surrounding session leaks in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import QUIET_ENV, HookProbe, RunClaude, find_claude, misfit
from fake_api import FakeAnthropicAPI

Result = tuple[subprocess.CompletedProcess[str], dict[str, Any]]


def pytest_report_header() -> str:
    binary, detail = find_claude()
    return f"claude: {binary} ({detail})" if binary else f"claude: none ({detail})"


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The client. Absent: skip, saying how to install it. Broken or stale: fail."""
    binary, detail = find_claude()
    if binary is None:
        if os.environ.get("RALPHSTATE_CLAUDE_BIN"):
            pytest.fail(detail)
        pytest.skip(detail)
    problem = misfit(binary, detail)
    if problem:
        pytest.fail(problem)
    return binary


@pytest.fixture
def api() -> Iterator[FakeAnthropicAPI]:
    """The scripted API; give it turns with `api.add_turns(...)`.

    A callable turn that raises fails the test at teardown with that exception.
    """
    server = FakeAnthropicAPI().start()
    try:
        yield server
    finally:
        server.stop()
    if server.errors:
        raise server.errors[0]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def probe(tmp_path: Path) -> HookProbe:
    return HookProbe(tmp_path / "probe")


@pytest.fixture
def claude_env(tmp_path: Path, home: Path, api: FakeAnthropicAPI) -> dict[str, str]:
    """The whole environment of the client, and so of its hooks and Bash commands."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # This interpreter's directory first, so hook commands find this `ralphstate`.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {
        "PATH": path,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TMPDIR": str(scratch),
        "CLAUDE_CODE_TMPDIR": str(scratch),
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-key",
        **QUIET_ENV,
    }


@pytest.fixture
def run_claude(claude_bin: Path, claude_env: dict[str, str]) -> RunClaude:
    """`run_claude(project, prompt, *args, timeout=30, env=None)` -> (process, result).

    Runs `claude -p PROMPT --output-format json --allowedTools Bash *ARGS` in
    `project` and parses the JSON result it prints. `env` adds variables to the
    fixture environment; a None value removes one.
    """

    def run(
        project: Path,
        prompt: str,
        *args: str,
        timeout: float = 30,
        env: dict[str, str | None] | None = None,
    ) -> Result:
        full_env = dict(claude_env)
        for key, value in (env or {}).items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = value
        command = [str(claude_bin), "-p", prompt, "--output-format", "json"]
        command += ["--allowedTools", "Bash", *args]
        done = subprocess.run(
            command,
            cwd=project,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        try:
            result = json.loads(done.stdout)
        except ValueError:
            result = None
        if not isinstance(result, dict):
            pytest.fail(
                f"claude exited {done.returncode} without a JSON result\n"
                f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
            )
        return done, result

    return run
