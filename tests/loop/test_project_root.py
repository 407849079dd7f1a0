"""A loop started from a subdirectory is where the hooks look: `init` puts it at the
project root (the agent's project directory, else the git work tree's top), `--here`
in the current directory; `status` and `doctor` in a subdirectory say which loop the
hooks see; `install` and `doctor` take the same project. Real processes, real git work
trees."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_process

SID = "session-a"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "a" / "b").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def ralphstate(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    done = run_process(list(args), cwd=cwd, env=env)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def stop_at(root: Path, env: dict[str, str] | None = None) -> dict[str, Any] | None:
    """A stop of the session that owns the loop, its project at `root`."""
    data = {"session_id": SID, "cwd": str(root), "last_assistant_message": "done <loop-complete>"}
    done = run_process(
        ["hook", "stop"],
        cwd=root,
        input=orjson.dumps(data),
        env={"CLAUDE_PROJECT_DIR": str(root), **(env or {})},
    )
    assert done.returncode == 0
    return orjson.loads(done.stdout) if done.stdout.strip() else None


def test_init_in_a_subdirectory_puts_the_loop_at_the_git_top(repo: Path) -> None:
    sub = repo / "a" / "b"
    code, out, err = ralphstate(sub, "init", "x", "-c", "a", env={"CLAUDE_CODE_SESSION_ID": SID})
    assert (code, err) == (0, "")
    assert (repo / ".loop" / "state.json").is_file()
    assert not (sub / ".loop").exists()
    assert out.startswith(f"started a loop in {repo / '.loop' / 'state.json'}: 1 criteri")
    out_ = stop_at(repo)  # the hooks, started at the project root, hold the agent
    assert out_ is not None and out_["decision"] == "block"


def test_init_here_puts_the_loop_in_the_current_directory(repo: Path) -> None:
    sub = repo / "a" / "b"
    code, out, _ = ralphstate(sub, "init", "x", "-c", "a", "--here")
    assert code == 0
    assert (sub / ".loop" / "state.json").is_file() and not (repo / ".loop").exists()
    assert out.startswith("started a loop in .loop/state.json: 1 criteri")


def test_init_uses_the_agents_project_directory_when_it_holds_the_current_one(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    env = {"CLAUDE_PROJECT_DIR": str(project)}
    assert ralphstate(sub, "init", "x", "-c", "a", env=env)[0] == 0
    assert (project / ".loop" / "state.json").is_file() and not (sub / ".loop").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert ralphstate(elsewhere, "init", "y", "-c", "a", env=env)[0] == 0
    assert (elsewhere / ".loop" / "state.json").is_file()


def test_init_outside_git_and_any_agent_stays_in_the_current_directory(tmp_path: Path) -> None:
    here = tmp_path / "plain"
    here.mkdir()
    assert ralphstate(here, "init", "x", "-c", "a")[0] == 0
    assert (here / ".loop" / "state.json").is_file()


def test_status_in_a_subdirectory_says_the_hooks_see_the_loop(repo: Path) -> None:
    ralphstate(repo, "init", "x", "-c", "a")
    code, out, _ = ralphstate(repo / "a" / "b", "status")
    assert code == 0
    assert f"hooks: they start at the project root {repo} and see this loop" in out
    assert "hooks:" not in ralphstate(repo, "status")[1]  # at the root there is no doubt


def test_status_and_doctor_say_a_loop_in_a_subdirectory_is_not_seen(repo: Path) -> None:
    sub = repo / "a" / "b"
    ralphstate(sub, "init", "x", "-c", "a", "--here")
    expected = (
        f"hooks: they start at the project root {repo} and see no loop there or above,"
        " so this one is not enforced"
    )
    code, out, _ = ralphstate(sub, "status")
    assert code == 0 and expected in out
    _, out, _ = ralphstate(sub, "doctor")
    line = next(line for line in out.splitlines() if "hooks: they start" in line)
    assert line.startswith("warn") or "!" in line.split("hooks:")[0], line
    assert expected in line


def test_status_names_the_loop_the_hooks_see_instead(repo: Path) -> None:
    sub = repo / "a" / "b"
    ralphstate(repo, "init", "root loop", "-c", "a")
    ralphstate(sub, "init", "inner loop", "-c", "a", "--here")
    _, out, _ = ralphstate(sub, "status")
    assert (
        f"hooks: they start at the project root {repo} and see the loop at"
        f" {repo / '.loop'}, not this one" in out
    )


def test_the_agents_project_directory_is_where_the_hooks_start(repo: Path) -> None:
    sub = repo / "a" / "b"
    ralphstate(sub, "init", "x", "-c", "a", "--here")
    env = {"CLAUDE_PROJECT_DIR": str(sub)}
    _, out, _ = ralphstate(sub, "status", env=env)
    assert "hooks:" not in out  # the agent's project is this directory: no doubt
    assert os.environ.get("CLAUDE_PROJECT_DIR") is None


def isolated_home(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A home directory with a `.claude/` of its own, as every Claude Code user's has."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    env = {
        "HOME": str(home),
        "USERPROFILE": str(home),
        "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return home, env


def without_development(err: str) -> str:
    """stderr without the line `install` rightly says from this checkout's editable
    install (tests/test_readme_session.py, DEVELOPMENT)."""
    from tests.test_readme_session import DEVELOPMENT

    return "".join(line for line in err.splitlines(True) if DEVELOPMENT not in line)


def test_init_install_and_doctor_agree_on_the_project(repo: Path, tmp_path: Path) -> None:
    """One project for the three: the git top, though a subdirectory holds a `.loop/`
    (`init --here`) and a `.claude/`."""
    _, env = isolated_home(tmp_path)
    sub = repo / "a" / "b"
    (sub / ".claude").mkdir()
    assert ralphstate(sub, "init", "inner", "-c", "a", "--here", env=env)[0] == 0
    code, _, err = ralphstate(sub, "install", env=env)
    assert (code, without_development(err)) == (0, "")
    local = repo / ".claude" / "settings.local.json"
    assert local.is_file() and not (sub / ".claude" / "settings.local.json").exists()
    _, out, _ = ralphstate(sub, "doctor", env=env)
    assert f"Stop hook in {local} runs" in out
    assert ralphstate(sub, "init", "outer", "-c", "a", env=env)[0] == 0
    assert (repo / ".loop" / "state.json").is_file()


def test_outside_git_the_home_directorys_claude_makes_no_project(tmp_path: Path) -> None:
    home, env = isolated_home(tmp_path)
    here = home / "notes" / "draft"
    here.mkdir(parents=True)
    code, _, err = ralphstate(here, "install", env=env)
    assert (code, without_development(err)) == (0, "")
    assert (here / ".claude" / "settings.local.json").is_file()
    assert not (home / ".claude" / "settings.local.json").exists()
    _, out, _ = ralphstate(here, "doctor", env=env)
    assert f"Stop hook in {here / '.claude' / 'settings.local.json'} runs" in out
