"""ralphstate's own git never runs the project's programs: every git it starts goes
through `storage/repo/git.py` `run_git`, with each setting that starts a program turned
off (an fsmonitor, hooks, filters, a pager, credential helpers, transports) and the
caller's variables that would start one left out. Tested on real repositories whose
`.git/config` holds each such program, a script that leaves a marker file."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest

from ralphstate.storage.repo import cleanroom, git, gitenv, guarded
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.gitrepo import git as run_git
from tests.helpers.gitrepo import init_repo, use_identity
from tests.test_layout import modules, shown, tree

POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="the programs are shell scripts")
# The module that starts git and the one that builds its environment (which asks git's
# configuration for the filters to turn off, in that environment), and the CI job, which
# pushes the runner's own fresh checkout with the runner's credentials (its helper must
# run there).
GIT_STARTERS = {"storage/repo/git.py", "storage/repo/gitenv.py", "ci/pushing.py"}


def starts_git(module: ast.Module) -> bool:
    """The module builds an argument list that begins with "git"."""
    for node in ast.walk(module):
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                return True
    return False


def test_only_the_git_module_starts_git() -> None:
    found = {shown(path) for path in modules() if starts_git(tree(path))}
    assert found <= GIT_STARTERS, sorted(found - GIT_STARTERS)
    assert "storage/repo/git.py" in found  # the scan sees what it looks for


def arm(root: Path, marker: Path) -> None:
    """The project's `.git/config` and attributes, as an agent would set them: every
    program leaves `marker`'s name with its own suffix (the script beside it: git's
    settings split a command at blanks)."""
    script = marker.parent / "leave.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}-$1"\ncat\n')
    script.chmod(0o755)
    run_git(root, "config", "core.fsmonitor", f"{script} fsmonitor")
    run_git(root, "config", "filter.x.clean", f"{script} clean")
    run_git(root, "config", "filter.x.smudge", f"{script} smudge")
    run_git(root, "config", "filter.y.process", f"{script} process")
    run_git(root, "config", "core.pager", f"{script} pager")
    run_git(root, "config", "credential.helper", f"!{script} credential")
    hooks = root / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("post-checkout", "pre-commit", "post-commit", "reference-transaction"):
        hook = hooks / name
        hook.write_text(f'#!/bin/sh\necho hook >> "{marker}-hook-{name}"\n')
        hook.chmod(0o755)
    attributes = root / ".git" / "info" / "attributes"
    attributes.parent.mkdir(exist_ok=True)
    attributes.write_text("*.py filter=x\n*.txt filter=y\n")


def left(marker: Path) -> list[str]:
    return sorted(p.name for p in marker.parent.glob(f"{marker.name}-*"))


@POSIX_ONLY
def test_no_program_in_the_projects_git_config_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "repo"
    root.mkdir()
    init_repo(root, {"src/app.py": "VALUE = 1\n", "notes.txt": "n\n", ".gitignore": ".loop/\n"})
    (root / ".loop").mkdir()
    marker = tmp_path / "ran"
    arm(root, marker)
    # The agent's shell can set these for one `ralphstate verify`.
    script = marker.parent / "leave.sh"
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='{script} env'")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", f"{script} external")
    monkeypatch.setenv("GIT_PAGER", f"{script} pager")
    (root / "src" / "app.py").write_text("VALUE = 2\n")  # an edit: add -u reads it
    (root / "notes.txt").write_text("changed\n")
    (root / "new.py").write_text("x = 1\n")  # untracked: the snapshot reads it
    paths = LoopPaths(root, root / ".loop")

    assert git.snapshot(paths) is not None
    approved = guarded.snapshot(paths, ["src"])
    assert approved is not None
    assert guarded.compare(paths, approved, ["src"]) is not None
    assert guarded.diff(paths, approved, ["src/app.py"]) is not None
    room = cleanroom.open_room(paths)
    assert room is not None
    try:
        assert (room.cwd / "src" / "app.py").read_text() == "VALUE = 2\n"
    finally:
        cleanroom.close(room)
    assert left(marker) == []
    # The same repository, asked by a git of the test's own, runs them: they are armed.
    run_git(root, "status")
    assert left(marker), "the programs never ran for plain git either"


def test_the_callers_git_variables_are_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF", "GIT_SSH_COMMAND", "GIT_EXEC_PATH"):
        monkeypatch.setenv(name, "x")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "leave")
    env = gitenv.safe_env(gitenv.git_env(), Path(sys.prefix), 10)
    for name in ("GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF", "GIT_SSH_COMMAND", "GIT_EXEC_PATH"):
        assert name not in env
    pairs = {
        env[f"GIT_CONFIG_KEY_{n}"]: env[f"GIT_CONFIG_VALUE_{n}"]
        for n in range(int(env["GIT_CONFIG_COUNT"]))
    }
    assert pairs["core.fsmonitor"] == "false" and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert "leave" not in pairs.values()
