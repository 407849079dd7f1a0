"""`ralphstate run --sandbox claude` with the real Claude Code client, offline against
the scripted API: the run's settings file turns the client's own sandbox on, its Bash
tool cannot write a guarded test or the trust store, `ralphstate criteria set` works,
and the person's own hooks in `~/.claude/settings.json` do not run
(`--setting-sources project,local`). Without socat (which the client's sandbox needs
on Linux) the run refuses before the first iteration."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from e2e_support import Cli, RunClaude, ralphstate
from e2e_support import read_state as state
from fake_api import FakeAnthropicAPI, bash, text, tool_results

from ralphstate.run.spawn import join_command

pytestmark = pytest.mark.e2e
IDENTITY = {
    "GIT_AUTHOR_NAME": "Person",
    "GIT_AUTHOR_EMAIL": "person@example.com",
    "GIT_COMMITTER_NAME": "Person",
    "GIT_COMMITTER_EMAIL": "person@example.com",
}


def guarded_project(project: Path, env: dict[str, str]) -> None:
    (project / "tests").mkdir()
    (project / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "tests"]):
        subprocess.run(["git", *args], cwd=project, env=env, check=True)


def user_hook(home: Path, marker: Path) -> None:
    """A hook of the person's own, in their user settings: it must not join the run."""
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    command = join_command(["touch", str(marker)])
    hook = {"hooks": [{"type": "command", "command": command}]}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [hook], "PreToolUse": [hook]}}))


@pytest.mark.skipif(shutil.which("socat") is None, reason="the client's sandbox needs socat")
def test_the_clients_sandbox_keeps_the_agent_from_the_protected_files(
    cli: Cli,
    claude_bin: Path,
    claude_env: dict[str, str],
    api: FakeAnthropicAPI,
    project: Path,
    home: Path,
    tmp_path: Path,
) -> None:
    # Claude Code's sandbox makes its bridge sockets in TMPDIR and shows the agent a /tmp
    # of its own: a worker's TMPDIR under /tmp (tests/conftest.py) is not there inside,
    # so the client gets the system's, as a person's session has.
    env = {**claude_env, **IDENTITY, "TMPDIR": "/tmp"}
    guarded_project(project, env)
    cli("install")
    cli("init", "Add a CSV export", "-c", "tests pass")
    trust = next(home.rglob("trust.json"), None) or home / ".local/share/ralphstate/trust.json"
    marker = tmp_path / "user hook ran"
    user_hook(home, marker)
    api.add_turns(
        [bash("echo weakened >> tests/test_a.py")],
        [bash(f"echo forged >> {join_command([str(trust)])}")],
        [bash('ralphstate criteria set "tests pass" true')],
        [text("Recorded tests pass.")],
    )
    run = ralphstate(
        project,
        env,
        "run",
        "--sandbox",
        "claude",
        "--agent",
        join_command([str(claude_bin), "-p"]),
        "--max",
        "1",
        "--timeout",
        "90",
        "--json",
        timeout=180,
    )
    out = json.loads(run.stdout)
    results = tool_results(api.conversation()[-1])
    assert "weakened" not in (project / "tests" / "test_a.py").read_text(), results
    assert not trust.exists() or "forged" not in trust.read_text(), results
    assert state(project)["criteriaStatus"] == {"tests pass": True}, (results, run.stderr)
    assert not marker.exists(), "the person's own hook ran inside the run"
    assert out["runs"][0]["sandbox"] == "Claude Code's sandbox", out
    assert "sandbox: Claude Code's sandbox" in run.stderr
    assert "Permission deny rule" not in run.stderr  # the client reads every rule


def test_without_socat_the_run_refuses_before_the_first_iteration(
    cli: Cli,
    claude_bin: Path,
    claude_env: dict[str, str],
    project: Path,
    tmp_path: Path,
) -> None:
    """A PATH with the tools but socat: the client's sandbox could not start, and the
    run says so before any iteration."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("git", "bwrap", "sh"):
        found = shutil.which(name)
        if found is not None:
            (tools / name).symlink_to(found)
    python_dir = claude_env["PATH"].split(os.pathsep)[0]
    env = {**claude_env, "PATH": os.pathsep.join([python_dir, str(tools)])}
    cli("init", "Add a CSV export", "-c", "tests pass")
    run = ralphstate(
        project,
        env,
        "run",
        "--sandbox",
        "claude",
        "--agent",
        join_command([str(claude_bin), "-p"]),
        "--max",
        "1",
    )
    assert run.returncode == 1, run
    assert run.stderr.strip() == (
        "ralphstate: Claude Code's sandbox cannot start here: socat is not on PATH (Debian"
        " and Ubuntu: apt-get install bubblewrap socat); the run does not go on unconfined."
    )
    assert state(project)["iteration"] == 0


@pytest.mark.skipif(shutil.which("socat") is None, reason="the client's sandbox needs socat")
def test_in_a_session_install_sandbox_keeps_the_bash_tool_from_a_guarded_test(
    cli: Cli,
    run_claude: RunClaude,
    claude_env: dict[str, str],
    api: FakeAnthropicAPI,
    project: Path,
) -> None:
    """`install --sandbox` writes the sandbox into the local settings: a plain `claude -p`
    session in the project (no --settings) cannot write a guarded test with its Bash
    tool; `--uninstall` takes it away again, and the same command goes through."""
    guarded_project(project, {**claude_env, **IDENTITY})
    cli("init", "Add a CSV export", "-c", "tests pass")
    cli("install", "--sandbox")
    api.add_turns([bash("echo weakened >> tests/test_a.py")], [text("Tried.")])
    run_claude(project, "Edit the test.")
    results = tool_results(api.conversation()[-1])
    assert "weakened" not in (project / "tests" / "test_a.py").read_text(), results
    # Refused by the deny rule before the command runs, or by the sandbox when it runs.
    assert "has been denied" in results[0] or "Read-only file system" in results[0], results

    cli("install", "--sandbox", "--uninstall")
    api.add_turns([bash("echo weakened >> tests/test_a.py")], [text("Done.")])
    run_claude(project, "Edit the test.")
    assert "weakened" in (project / "tests" / "test_a.py").read_text()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
@pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0,
    reason="the client's rule for root applies only to root",
)
def test_as_root_the_skip_permissions_recipe_runs_inside_bubblewrap(
    cli: Cli,
    claude_bin: Path,
    claude_env: dict[str, str],
    api: FakeAnthropicAPI,
    project: Path,
) -> None:
    """As root the client refuses --dangerously-skip-permissions outside a sandbox it
    knows of (IS_SANDBOX=1, or CLAUDE_CODE_BUBBLEWRAP set); `--sandbox bwrap` tells it,
    and only inside the sandbox: the recipe runs to completion without IS_SANDBOX."""
    assert "IS_SANDBOX" not in claude_env
    cli("install")
    cli("init", "Add a CSV export", "-c", "tests pass")
    api.add_turns(
        [bash('ralphstate criteria set "tests pass" true')],
        [text("Recorded tests pass.")],
    )
    agent = join_command([str(claude_bin), "-p", "--dangerously-skip-permissions"])
    run = ralphstate(
        project,
        claude_env,
        "run",
        "--sandbox",
        "bwrap",
        "--agent",
        agent,
        "--max",
        "1",
        "--timeout",
        "90",
        "--json",
        timeout=180,
    )
    out = json.loads(run.stdout)
    assert out["outcome"] == "complete", (out, run.stderr)
    assert out["runs"][0]["sandbox"] == "bubblewrap"
