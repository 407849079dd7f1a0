"""A PATH entry the user may not enter does not crash `run`: a regular user, made for
the test with `useradd`, runs the real `ralphstate run` (bubblewrap, a confined check)
with a directory under root's private home first on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.helpers.terminal import at_terminal
from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.test_privileges import (  # noqa: F401  (a fixture)
    regular_user,
    system_python,
)

pytestmark = needs_bwrap


def test_a_path_entry_the_user_cannot_enter_does_not_crash_run(
    regular_user: tuple[str, Path],  # noqa: F811
) -> None:
    name, home = regular_user
    python = system_python()
    closed = Path(tempfile.mkdtemp(prefix="ralphstate-closed-"))
    (closed / "bin").mkdir()
    closed.chmod(0o700)  # root's: the test user may not enter it
    project = home / "project"
    project.mkdir()
    root = Path(__file__).resolve().parents[2]
    site = next(p for p in sys.path if p.endswith("site-packages"))
    env = {
        "PATH": os.pathsep.join([str(closed / "bin"), "/usr/bin", "/bin"]),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "RALPHSTATE_HOME": str(home / "rs"),
        "PYTHONPATH": os.pathsep.join([str(root), site]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    setpriv = ["setpriv", "--reuid", name, "--regid", name, "--init-groups"]

    def as_user(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*setpriv, *argv], cwd=project, env=env, capture_output=True, text=True, timeout=120
        )

    try:
        shutil.chown(project, user=name, group=name)
        assert as_user("git", "init", "-q", ".").returncode == 0
        (project / "a.txt").write_text("a\n")
        shutil.chown(project / "a.txt", user=name, group=name)
        assert as_user("git", "add", "a.txt").returncode == 0
        assert as_user("git", "commit", "-qm", "a").returncode == 0
        rs = [python, "-m", "ralphstate"]
        init = as_user(*rs, "init", "build a", "-c", "done", "--check", "done", "true")
        assert init.returncode == 0, init.stderr
        # Given with no terminal, the check waits: the user trusts it at their terminal.
        argv = [*setpriv, *rs, "trust"]
        typed = at_terminal([], cwd=project, env=env, inherit=False, program=argv)
        assert (typed.code, typed.asked) == (0, True), typed.screen
        done = as_user(*rs, "run", "--agent", "true", "--max", "1")
        said = done.stdout + done.stderr
        assert "Traceback" not in said and "unexpected error" not in said, said
        assert done.returncode == 0, said
        assert "sandbox: bubblewrap" in said, said
    finally:
        shutil.rmtree(closed, ignore_errors=True)
