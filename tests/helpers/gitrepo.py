"""Real git repositories for the tests: made in a temporary directory, with an
identity given through the environment (never the person's own git configuration)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

IDENTITY = {
    "GIT_AUTHOR_NAME": "Loop Tester",
    "GIT_AUTHOR_EMAIL": "tester@example.invalid",
    "GIT_COMMITTER_NAME": "Loop Tester",
    "GIT_COMMITTER_EMAIL": "tester@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def use_identity(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Every git the test and its processes start sees only this test's configuration."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    config = home / "gitconfig"
    config.write_text("[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, env=os.environ
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def init_repo(root: Path, files: dict[str, str] | None = None) -> str:
    """A repository in `root` with one commit holding `files`; returns its id."""
    git(root, "init", "-q", "-b", "main")
    for name, text in (files or {"README": "hello\n"}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return git(root, "rev-parse", "HEAD")


def commits(root: Path, ref: str = "HEAD") -> list[str]:
    """The subjects of `ref`'s commits, newest first."""
    return git(root, "log", "--format=%s", ref).splitlines()
