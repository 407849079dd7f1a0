"""Shared fixtures: every test runs with its own ralphstate home and no Claude Code
environment, and any use of the real per-user directories fails the test."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from ralphstate.__main__ import main
from ralphstate.agents import table
from ralphstate.core import actor
from tests.helpers import Result

# Property tests: by default a fixed seed and a small budget, so every run of the suite
# tries the same examples quickly; `pytest --hypothesis-profile=long` tries many more,
# at random, for a local hunt (docs/explanation/hardening.md).
settings.register_profile("ci", derandomize=True, database=None, max_examples=60, deadline=None)
settings.register_profile("long", max_examples=3000, deadline=None)
settings.load_profile("ci")


_WORKER_TMP = pytest.StashKey[str]()
# Workers of pytest-xdist per core under `-n auto` (addopts in pyproject.toml).
WORKERS_PER_CORE = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: two workers per core the process may use. Many tests wait more than
    they compute (a job's time budget under act, a client's answer from the scripted
    API, a child's timeout, git and pip between two processes): while one worker waits,
    the other runs. PYTEST_XDIST_AUTO_NUM_WORKERS, when set, is pytest-xdist's own
    count, as it documents."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:  # pragma: no cover - macOS and Windows
        cores = os.cpu_count() or 1
    return WORKERS_PER_CORE * max(1, cores)


def pytest_configure(config: pytest.Config) -> None:
    """A worker of pytest-xdist (`-n auto`) gets a system temporary directory of its own
    (TMPDIR, for it and every process it starts): a test that watches that directory for
    clean rooms and snapshots (an agent's process rewriting the room's files, the
    leftovers a killed check left behind) sees its own worker's, never those of a test
    running at the same time on another."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    own = tempfile.mkdtemp(prefix=f"rs-{worker}-")
    Path(own).chmod(0o1777)  # as the system's: open to every user, sticky
    config.stash[_WORKER_TMP] = own
    os.environ["TMPDIR"] = own
    tempfile.tempdir = None  # asked again: the new TMPDIR


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_WORKER_TMP, None)
    if own:
        shutil.rmtree(own, ignore_errors=True)


LEAKY_ENV = (
    # Every agent's session, process and project variables (`Agent.variables`).
    *table.variables(),
    # What Claude Code sets in every process it starts (core/actor.py).
    "CLAUDECODE",
    "CLAUDE_CODE_CHILD_SESSION",
    "RALPHSTATE_DIR",
    "RALPHSTATE_RUNNER",
    "RALPHSTATE_HOME",
    # The notification setting, and the terminals it looks at (hooks.notify).
    "RALPHSTATE_NOTIFY",
    "VTE_VERSION",
    "TERM",
    # The Claude Code plugin's data directory (hooks/launch.py), and the variable its
    # bin/ralphstate sets (loop/enforcement.py).
    "CLAUDE_PLUGIN_DATA",
    "RALPHSTATE_PLUGIN",
)


@pytest.fixture(autouse=True)
def isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private RALPHSTATE_HOME; platformdirs must never be asked for real paths. And a
    Claude Code configuration directory of its own (CLAUDE_CONFIG_DIR, never the
    person's ~/.claude) in which ralphstate's plugin is enabled: a loop counts as
    enforced (loop/enforcement.py) unless a test takes that away."""
    for name in LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    actor.reset()  # a hook run in this process earlier set its own
    home = tmp_path_factory.mktemp("ralphstate-home")
    monkeypatch.setenv("RALPHSTATE_HOME", str(home))
    # `run` confines its agent by default; the tests whose agents write outside their
    # project run it unconfined, as the person may (tests/sandbox take this away).
    monkeypatch.setenv("RALPHSTATE_RUN_SANDBOX", "off")
    config = tmp_path_factory.mktemp("claude-config")
    (config / "settings.json").write_text('{"enabledPlugins": {"ralphstate@ralphstate": true}}')
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))

    # The person at the terminal, in this process only (loop/person.py): a command run
    # in-process that asks them is answered yes, and the test runner's own parents are
    # not read. Real processes get no such seam: they are asked at a real pty
    # (tests/helpers/terminal.py) or refused.
    from ralphstate.loop import person
    from ralphstate.storage.system import terminal

    monkeypatch.setattr(person, "_confirmed", [])
    monkeypatch.setattr(person, "agent_above", lambda: None)
    monkeypatch.setattr(terminal, "ask", lambda lines, prompt: person.CONFIRM_WORD)
    monkeypatch.setattr(terminal, "available", lambda: True)

    import platformdirs

    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("a test reached the real per-user directories")

    for name in ("user_state_dir", "user_log_dir", "user_data_dir"):
        monkeypatch.setattr(platformdirs, name, refuse)
    return home


@pytest.fixture
def unconfined_checks(isolated: Path) -> None:
    """Checks run unconfined (the person's switch, verify/confine.py): for the tests
    whose check talks to the test through files outside its room, or by its pid."""
    from ralphstate.storage.peruser import home
    from ralphstate.verify import confine

    home.data_dir().mkdir(parents=True, exist_ok=True)
    (home.data_dir() / confine.OFF_FILE).write_text("")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory that is also the current directory."""
    root = tmp_path / "project dir"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty project directory, with a space in its path; not the current directory."""
    path = tmp_path / "a project"
    path.mkdir()
    return path


@pytest.fixture
def rs(capsys: pytest.CaptureFixture[str]) -> Iterator[object]:
    """Run `ralphstate ARGS...` in-process through the real entry point."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    yield run
