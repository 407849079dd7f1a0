"""`install --agent NAME` does what the Claude Code path does with the file it writes,
as real processes in a real git repository: a project's hook file, which names this
machine's Python, is kept out of git through `.git/info/exclude` (one git tracks is
named, with the scope that keeps the hooks yours), and for Codex CLI, which runs a hook
only once the person trusted it, `install` says so in one line when it wrote new hooks."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ralphstate.agents import table
from tests.helpers import run_process

CODEX_TRUST = (
    "note: Codex CLI runs new or changed hooks only once you trust them, and a project's"
    " only in a trusted project: start `codex` here, trust the folder and these hooks when"
    " it asks (or in /hooks); until then it skips them without a word"
)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


@pytest.fixture
def repo(project: Path, home: Path) -> Path:
    git(project, "init", "-q")
    return project


def install(repo: Path, *args: str) -> list[str]:
    done = run_process(["install", *args], cwd=repo)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().splitlines()


def test_codex_s_project_file_is_kept_out_of_git_and_its_trust_is_said(repo: Path) -> None:
    said = install(repo, "--agent", "codex")
    assert said[-3:] == [
        (
            "added /.codex/hooks.json to .git/info/exclude, so git leaves this machine's"
            " hooks out of commits (a local exclude, never committed)"
        ),
        CODEX_TRUST,
        f"updated: {repo / '.codex' / 'hooks.json'}",
    ]
    assert "/.codex/hooks.json" in (repo / ".git" / "info" / "exclude").read_text()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    again = install(repo, "--agent", "codex")
    assert CODEX_TRUST not in again  # nothing new to trust
    assert (repo / ".git" / "info" / "exclude").read_text().count("/.codex/hooks.json") == 1


def test_a_hook_file_git_tracks_is_named_with_the_scope_that_keeps_them_yours(
    repo: Path,
) -> None:
    hooks = repo / ".codex" / "hooks.json"
    hooks.parent.mkdir()
    hooks.write_text('{"hooks": {}}\n')
    git(repo, "add", ".codex/hooks.json")
    said = install(repo, "--agent", "codex")
    assert (
        "note: git tracks .codex/hooks.json, so these hooks, which name this machine's"
        " Python, would be committed; `--scope user` keeps them yours"
    ) in said
    assert "/.codex/hooks.json" not in (repo / ".git" / "info" / "exclude").read_text()


def test_the_user_scope_needs_no_exclude_but_the_same_trust(repo: Path, home: Path) -> None:
    said = install(repo, "--agent", "codex", "--scope", "user")
    assert said[-2:] == [CODEX_TRUST, f"updated: {home / '.codex' / 'hooks.json'}"]
    assert "codex" not in (repo / ".git" / "info" / "exclude").read_text()


@pytest.mark.parametrize("agent", [n for n in table.NAMES if n not in ("claude", "codex")])
def test_every_other_agent_s_project_file_is_kept_out_of_git(repo: Path, agent: str) -> None:
    install(repo, "--agent", agent)
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    uninstalled = run_process(["uninstall", "--agent", agent], cwd=repo)
    assert uninstalled.returncode == 0, uninstalled.stderr


def test_only_codex_has_a_trust_line() -> None:
    trusting = [name for name in table.NAMES if table.get(name).hook_file.trust]
    assert trusting == ["codex"]
