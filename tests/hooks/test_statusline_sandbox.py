"""The status line says `unconfined` while the session runs outside Claude Code's own
sandbox (loop/clientbox.py): the command `ralphstate install --statusline` writes, as a
real process, with the settings files written where Claude Code reads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ralphstate.install.agents import install_agent
from ralphstate.install.statusline_setup import CODE
from ralphstate.loop import enforcement
from tests.helpers.homes import bare_home
from tests.helpers.loops import make_loop

TAIL = " · unconfined"
ON = {"sandbox": {"enabled": True}}
OFF = {"sandbox": {"enabled": False}}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose loop ralphstate's hooks enforce, in a home of its own."""
    bare_home(tmp_path, monkeypatch)
    path = tmp_path / "a project"
    path.mkdir()
    install_agent("claude", "local", path)
    make_loop(path, steps=[])
    return path


def status_line(project: Path, env: dict[str, str] | None = None) -> str:
    """The line the installed command prints for a session in `project`."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", CODE],
        input=json.dumps({"workspace": {"project_dir": str(project)}}).encode(),
        capture_output=True,
        cwd=project,
        env={**os.environ, **(env or {})},
        timeout=30,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout.decode()


def write(path: Path, data: object) -> None:
    """Write `data` as JSON into `path`, keeping what else the file holds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**old, **data} if isinstance(data, dict) else data))


def files(project: Path) -> dict[str, Path]:
    home = Path(os.environ["HOME"])
    return {
        "local": project / ".claude" / "settings.local.json",
        "project": project / ".claude" / "settings.json",
        "user": home / ".claude" / "settings.json",
    }


def test_a_running_loop_outside_the_sandbox_says_unconfined(project: Path) -> None:
    assert status_line(project) == "loop 0/20 · 0/2 verified" + TAIL + "\n"


@pytest.mark.parametrize("scope", ["local", "project", "user"])
def test_the_sandbox_on_in_any_settings_file_says_nothing_more(project: Path, scope: str) -> None:
    write(files(project)[scope], ON)
    assert status_line(project) == "loop 0/20 · 0/2 verified\n"
    write(files(project)[scope], OFF)
    assert status_line(project).endswith(TAIL + "\n")


def test_the_user_s_file_is_read_where_claude_config_dir_points(
    project: Path, tmp_path: Path
) -> None:
    config = tmp_path / "elsewhere"
    write(config / "settings.json", ON)
    assert status_line(project).endswith(TAIL + "\n")  # not in ~/.claude
    assert status_line(project, {"CLAUDE_CONFIG_DIR": str(config)}) == (
        "loop 0/20 · 0/2 verified\n"
    )


@pytest.mark.parametrize(
    ("nearer", "farther"), [("local", "project"), ("project", "user"), ("local", "user")]
)
def test_the_file_nearer_the_project_decides(project: Path, nearer: str, farther: str) -> None:
    """Claude Code's precedence: the local file over the shared one over the user's."""
    write(files(project)[farther], ON)
    write(files(project)[nearer], OFF)
    assert status_line(project).endswith(TAIL + "\n")
    write(files(project)[nearer], ON)
    write(files(project)[farther], OFF)
    assert status_line(project) == "loop 0/20 · 0/2 verified\n"


@pytest.mark.parametrize(
    "content",
    [
        b'{"sandbox": {"enabled": "yes"}}',
        b'{"sandbox": true}',
        b'["sandbox"]',
        b'{"sandbox": {"enabled": true}',  # cut short: not JSON
        b'{"sandbox": {"enabled": true}}' + b" " * enforcement.MAX_READ,  # too large
    ],
    ids=["a string", "not an object", "a list", "not JSON", "too large"],
)
def test_a_file_that_does_not_say_true_is_off_and_no_fault(project: Path, content: bytes) -> None:
    files(project)["project"].write_bytes(content)
    assert status_line(project).endswith(TAIL + "\n")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_a_settings_file_is_not_waited_on(project: Path) -> None:
    os.mkfifo(files(project)["project"])
    assert status_line(project).endswith(TAIL + "\n")  # at once: the 30 s timeout is not hit


def test_a_loop_ralphstate_run_drives_or_a_paused_one_says_nothing_of_it(project: Path) -> None:
    (project / ".loop" / "runs").mkdir()
    assert status_line(project) == "loop 0/20 · 0/2 verified\n"
    (project / ".loop" / "runs").rmdir()
    make_loop(project, steps=[], status="paused", pauseReason="user")
    assert status_line(project) == "loop paused (user) · 0/2 verified\n"


def test_a_loop_nothing_enforces_says_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bare_home(tmp_path, monkeypatch)
    bare = tmp_path / "bare"
    bare.mkdir()
    make_loop(bare, steps=[])
    assert status_line(bare) == (
        "loop 0/20 · 0/2 verified" + TAIL + " · not enforced: run `ralphstate install`\n"
    )
