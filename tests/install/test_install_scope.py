"""`ralphstate install`'s default scope: the person's own `.claude/settings.local.json`,
kept out of git, since the hooks name this machine's Python; `--scope project` warns that
the shared file would name it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralphstate.install.agents import hook_command
from ralphstate.install.command import command_target

PYTHON = command_target(hook_command("Stop"))
EXCLUDE_LINE = (
    "added /.claude/settings.local.json to .git/info/exclude, so git leaves this machine's"
    " hooks out of commits (a local exclude, never committed)"
)
PROJECT_WARNING = (
    "note: .claude/settings.json is shared with everyone who clones the project, and these"
    f" hooks name this machine's Python ({PYTHON}), which is not there on another machine;"
    " the default scope (local, .claude/settings.local.json) keeps them yours"
)


def git(project: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=project, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def stop_commands(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    return [h["command"] for group in data["hooks"]["Stop"] for h in group["hooks"]]


def test_install_writes_the_local_file_and_keeps_it_out_of_git(
    rs: Any, project: Path, home: Path
) -> None:
    git(project, "init", "-q")
    done = rs("install")
    assert done.code == 0, done.err
    local = project / ".claude" / "settings.local.json"
    assert stop_commands(local) == [hook_command("Stop")]
    assert not (project / ".claude" / "settings.json").exists()
    lines = done.out.splitlines()
    assert EXCLUDE_LINE in lines
    assert lines[-1] == f"updated: {local}"
    exclude = (project / ".git" / "info" / "exclude").read_text()
    assert exclude.endswith("\n/.claude/settings.local.json\n")
    assert git(project, "status", "--porcelain", "--untracked-files=all") == ""
    again = rs("install")  # the exclude is there: not added twice, not said again
    assert EXCLUDE_LINE not in again.out
    assert (project / ".git" / "info" / "exclude").read_text() == exclude


def test_a_file_git_already_ignores_is_left_to_it(rs: Any, project: Path, home: Path) -> None:
    git(project, "init", "-q")
    (project / ".gitignore").write_text(".claude/settings.local.json\n")
    exclude = project / ".git" / "info" / "exclude"
    before = exclude.read_bytes() if exclude.exists() else None
    done = rs("install")
    assert done.code == 0
    assert "exclude" not in done.out
    assert (exclude.read_bytes() if exclude.exists() else None) == before


def test_an_agents_project_in_a_subdirectory_of_the_repository_is_excluded_by_its_path(
    rs: Any, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(project, "init", "-q")
    service = project / "services" / "api [v2]"
    (service / ".loop").mkdir(parents=True)
    monkeypatch.chdir(service)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(service))  # the agent runs there
    done = rs("install")
    assert done.code == 0, done.err
    assert (service / ".claude" / "settings.local.json").is_file()
    exclude = (project / ".git" / "info" / "exclude").read_text()
    assert exclude.endswith("\n/services/api \\[v2]/.claude/settings.local.json\n")
    assert git(project, "status", "--porcelain", "--untracked-files=all") == ""


def test_outside_git_install_only_writes_the_local_file(rs: Any, project: Path, home: Path) -> None:
    done = rs("install")
    assert done.code == 0
    assert "exclude" not in done.out
    assert (project / ".claude" / "settings.local.json").is_file()


def test_a_tracked_local_file_is_said_to_be_tracked(rs: Any, project: Path, home: Path) -> None:
    git(project, "init", "-q")
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text("{}\n")
    git(project, "add", ".claude/settings.local.json")
    done = rs("install")
    assert done.code == 0
    assert (
        "note: git tracks .claude/settings.local.json, so these hooks, which name this"
        " machine's Python, would be committed; `git rm --cached .claude/settings.local.json`"
        " keeps the file on this machine only"
    ) in done.out.splitlines()


def test_scope_project_warns_that_the_shared_file_names_this_machines_python(
    rs: Any, project: Path, home: Path
) -> None:
    git(project, "init", "-q")
    done = rs("install", "--scope", "project")
    assert done.code == 0
    assert PROJECT_WARNING in done.out.splitlines()
    assert stop_commands(project / ".claude" / "settings.json") == [hook_command("Stop")]
    assert not (project / ".git" / "info" / "exclude").read_text().count("settings")
    assert "note:" not in rs("install", "--scope", "project", "--uninstall").out


def test_install_after_a_project_scope_install_leaves_it_and_says_so(
    rs: Any, project: Path, home: Path
) -> None:
    assert rs("install", "--scope", "project").code == 0
    shared = project / ".claude" / "settings.json"
    before = shared.read_bytes()
    done = rs("install")
    assert done.code == 0
    assert shared.read_bytes() == before  # a shared file is not changed unasked
    assert (
        "note: .claude/settings.json still has ralphstate's hooks, which run besides these"
        " (each stop judged twice) and fail on a machine without this Python;"
        " `ralphstate install --scope project --uninstall` removes them"
    ) in done.out.splitlines()


def test_uninstall_at_the_default_scope_names_hooks_left_in_the_shared_file(
    rs: Any, project: Path, home: Path
) -> None:
    """An install from when the default was the project file, uninstalled with the
    default scope: the local file has nothing to remove, and the shared one's hooks,
    which still run at every stop, are named with the command that removes them."""
    assert rs("install", "--scope", "project").code == 0
    shared = project / ".claude" / "settings.json"
    before = shared.read_bytes()
    done = rs("install", "--uninstall")
    assert done.code == 0
    assert shared.read_bytes() == before  # a shared file is not changed unasked
    assert (
        "note: .claude/settings.json still has ralphstate's hooks, which keep running;"
        " `ralphstate install --scope project --uninstall` removes them"
    ) in done.out.splitlines()
    assert rs("install", "--scope", "project", "--uninstall").code == 0
    assert "note:" not in rs("install", "--uninstall").out


def test_other_agents_keep_the_project_scope_by_default(rs: Any, project: Path, home: Path) -> None:
    done = rs("install", "--agent", "codex")
    assert done.code == 0
    assert (project / ".codex" / "hooks.json").is_file()
    assert not (project / ".claude").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="git worktree paths as POSIX has them")
def test_in_a_git_worktree_the_repositorys_exclude_file_is_used(
    rs: Any, project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(project, "init", "-q")
    git(
        project,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "0",
    )
    tree = tmp_path / "wt"
    git(project, "worktree", "add", "-q", str(tree))
    monkeypatch.chdir(tree)
    done = rs("install")
    assert done.code == 0, done.err
    assert "/.claude/settings.local.json" in (project / ".git" / "info" / "exclude").read_text()
    assert git(tree, "status", "--porcelain", "--untracked-files=all") == ""
