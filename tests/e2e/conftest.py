"""Fixtures that run the real Claude Code client against the scripted API in fake_api.

The client is the one pinned in package.json here (`npm ci` in this directory
installs it); `RALPHSTATE_CLAUDE_BIN` names another binary instead. Without one, the
tests that need it are skipped, and the reason says how to install it.

Every test gets a fresh HOME, project directory, temporary directory and API server on
a loopback port. The client's environment is built from nothing rather than copied, so
neither this machine's Claude Code configuration nor a surrounding session leaks in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import (
    Cli,
    HookProbe,
    RunClaude,
    claude_client_env,
    find_claude,
    json_result,
    misfit,
    path_with_this_python,
    ralphstate,
    run_client,
    serving,
)
from fake_api import FakeAnthropicAPI
from filelock import FileLock

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
    yield from serving(FakeAnthropicAPI())


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
    return claude_client_env(path_with_this_python(), home, scratch, api.base_url)


@pytest.fixture
def run_claude(claude_bin: Path, claude_env: dict[str, str]) -> RunClaude:
    """`run_claude(project, prompt, *args, timeout=90, env=None)` -> (process, result).

    Runs `claude -p PROMPT --output-format json --allowedTools Bash *ARGS` in
    `project` and parses the JSON result it prints. `env` adds variables to the
    fixture environment; a None value removes one. `timeout` only bounds a client
    that hangs (a session ends on its own long before): it is never waited out, and
    leaves room for a busy machine, the suite running two workers a core.
    """

    def run(
        project: Path,
        prompt: str,
        *args: str,
        timeout: float = 90,
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
        done = run_client(command, project, full_env, timeout)
        return done, json_result(done, "claude")

    return run


@pytest.fixture
def cli(project: Path, claude_env: dict[str, str]) -> Cli:
    """`cli(*args, ok=True)`: a person running `ralphstate ARGS` in the project, with
    the client's HOME (so the loop registry is this machine's for both); with `ok` it
    must succeed."""

    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = ralphstate(project, claude_env, *args)
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    return run


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Wheels of ralphstate's dependencies, its build backend and pytest (a newcomer's
    project runs its tests with it), for an offline pip."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    wanted = [*project["project"]["dependencies"], *project["build-system"]["requires"], "pytest"]
    # Gathered once for the whole run: a worker of pytest-xdist (`-n auto`) finds them in
    # the run's own temporary directory, the one its workers' directories are in.
    run_dir = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_dir = run_dir.parent
    where = run_dir / "wheels"
    with FileLock(run_dir / "wheels.lock"):
        if (where / ".gathered").exists():
            return where
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(where), *wanted],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.fail(f"could not gather the wheels the plugin's build needs:\n{done.stderr}")
        (where / ".gathered").write_text("")
    return where


@pytest.fixture
def plugin_env(tmp_path: Path, claude_env: dict[str, str], wheelhouse: Path) -> dict[str, str]:
    """The client's environment with a `python3` that cannot import ralphstate (the
    interpreter this one was made from, without site-packages) and an offline pip."""
    interpreters = tmp_path / "interpreters"
    interpreters.mkdir()
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    python3 = interpreters / "python3"
    python3.write_text(f'#!/bin/sh\nexec "{base}" -S "$@"\n')
    python3.chmod(0o755)
    env = dict(claude_env)
    env.update(
        PATH=os.pathsep.join([str(interpreters), "/usr/local/bin", "/usr/bin", "/bin"]),
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheelhouse),
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    # Run from elsewhere: the checkout's own directory holds the package.
    probe = subprocess.run(
        [str(python3), "-c", "import ralphstate"],
        env=env,
        capture_output=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert probe.returncode != 0, "the plain python3 must not import ralphstate"
    return env
