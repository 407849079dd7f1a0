"""An approval proves a person was there (loop/person.py), in real processes: the
person types yes at their terminal, in one step; every way the agent's user has to
approve without them is refused and approves nothing.

- a pipe (stdin is never read), `env -i` from the agent's shell, `script -qc` (a pty
  the agent made) from the agent's shell, a library call from Python;
- the PreToolUse hook run by hand from the agent's shell: its token names a call the
  client never asked the person about; a token whose prompt the person declined dies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core.approving import APPROVAL_ENV
from ralphstate.storage.peruser import truststore
from ralphstate.storage.system import paths
from tests.helpers import REPO
from tests.helpers.checks import PASS
from tests.helpers.terminal import at_terminal
from tests.loop.test_person import transcript

pytestmark = pytest.mark.skipif(os.name == "nt", reason="a pseudo-terminal needs POSIX")

CLAUDE = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "sess-1"}


@pytest.fixture
def loop(project: Path, rs: Any) -> paths.LoopPaths:
    """A loop whose check was changed by hand: untrusted until the person trusts it."""
    assert rs("init", "Build it", "-c", "a").code == 0
    assert rs("criteria", "check", "a", PASS).code == 0
    state = project / ".loop" / "state.json"
    raw = orjson.loads(state.read_bytes())
    raw["checks"]["a"] = PASS + " "
    state.write_bytes(orjson.dumps(raw))
    return paths.at(str(project / ".loop"))


def trusted(loop: paths.LoopPaths) -> bool:
    from ralphstate.storage.loopdir.store import Store

    return truststore.is_trusted(loop, Store(loop).load())


def detached(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """`argv` in a session of its own with no controlling terminal, as the agent's Bash
    tool runs a command."""
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )


def rs_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "ralphstate", *args]


def test_the_person_types_yes_at_the_terminal_and_trusts_in_one_step(
    project: Path, loop: paths.LoopPaths
) -> None:
    typed = at_terminal(["trust"], cwd=project)
    assert (typed.code, typed.asked) == (0, True), typed.screen
    assert "`ralphstate trust` for the loop in" in typed.screen
    assert f"check a: {PASS} " in typed.screen  # it names what is approved
    assert "what proves it done: sha256 " in typed.screen
    assert typed.screen.count("Type yes") == 1  # one question, one step
    assert trusted(loop)
    status = detached(rs_argv("status"), project).stdout
    assert "as approved by you, confirmed at your terminal" in status


def test_anything_but_yes_approves_nothing(project: Path, loop: paths.LoopPaths) -> None:
    typed = at_terminal(["trust"], cwd=project, answer="y")
    assert (typed.code, typed.asked) == (1, True)
    assert "was not confirmed at the terminal: nothing was approved." in typed.screen
    assert not trusted(loop)


def test_yes_piped_into_stdin_is_no_answer(project: Path, loop: paths.LoopPaths) -> None:
    done = detached(rs_argv("trust"), project, stdin="yes\n")
    assert done.returncode == 1
    assert "this process has none (a pipe, a script, an agent's tool)" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not trusted(loop)


def test_env_i_in_the_agent_s_shell_at_a_terminal_is_refused(
    project: Path, loop: paths.LoopPaths
) -> None:
    """The agent strips its variables (`env -i`); its shell, the parent, keeps them."""
    home = os.environ["RALPHSTATE_HOME"]
    line = (
        f"env -i PATH=\"$PATH\" RALPHSTATE_HOME='{home}' PYTHONPATH='{REPO}'"
        f" '{sys.executable}' -m ralphstate trust; echo ended"
    )
    typed = at_terminal([], cwd=project, program=["sh", "-c", line], env=CLAUDE)
    assert not typed.asked, typed.screen
    assert "this process was started by claude session sess-1" in typed.screen
    assert not trusted(loop)


def test_script_s_pty_from_the_agent_s_shell_is_refused(
    project: Path, loop: paths.LoopPaths
) -> None:
    """`script` makes a terminal of its own, and types what it reads into it."""
    home = os.environ["RALPHSTATE_HOME"]
    inner = f"env -i PATH=\"$PATH\" RALPHSTATE_HOME='{home}' '{sys.executable}' -m ralphstate trust"
    line = f'script -qec "{inner}" /dev/null'
    done = detached(["sh", "-c", line], project, env=CLAUDE, stdin="yes\n")
    assert "Type yes" not in done.stdout
    assert "this process was started by claude session sess-1" in done.stdout
    assert not trusted(loop)


@pytest.mark.parametrize("env", [{}, CLAUDE])
def test_a_library_call_is_asked_as_the_command_is(
    project: Path, loop: paths.LoopPaths, env: dict[str, str]
) -> None:
    """The rule lives in the function every approval goes through, not in the command."""
    code = (
        "from ralphstate.loop import proofreview\n"
        "from ralphstate.storage.loopdir.store import Store\n"
        "from ralphstate.storage.system import paths\n"
        "import sys\n"
        "store = Store(paths.at(sys.argv[1]))\n"
        "for call in (lambda: proofreview.approve(store, {'kind': 'person'}),"
        " lambda: proofreview.revert(store)):\n"
        "    try:\n"
        "        call()\n"
        "    except Exception as exc:\n"
        "        print(type(exc).__name__, exc)\n"
    )
    done = detached([sys.executable, "-c", code, str(loop.dir)], project, env=env)
    said = done.stdout.splitlines()
    assert len(said) == 2, done
    assert all(line.startswith("RalphstateError ") for line in said), said
    assert not trusted(loop)


def test_the_pre_tool_use_hook_run_by_hand_gives_no_usable_token(
    project: Path, loop: paths.LoopPaths
) -> None:
    """The agent feeds the hook an input it made up, takes the token from the command
    the hook hands back, and runs `trust` with it."""
    made_up = transcript(loop, "sess-1", "ls")  # the agent's own call approves nothing
    hook_input = {
        "session_id": "sess-1",
        "transcript_path": str(made_up),
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ralphstate trust"},
        "tool_use_id": "toolu_01",
    }
    env = {**CLAUDE, "CLAUDE_CODE_ENTRYPOINT": "cli"}
    entry = "from ralphstate.hooks.entry import main; main()"
    hook = detached(
        [sys.executable, "-I", "-c", entry, "pre-tool-use"],
        project,
        env=env,
        stdin=json.dumps(hook_input),
    )
    asked = json.loads(hook.stdout)["hookSpecificOutput"]
    assert asked["permissionDecision"] == "ask", hook
    token = asked["updatedInput"]["command"].split("=", 1)[1].split("\n", 1)[0]
    done = detached(rs_argv("trust"), project, env={**env, APPROVAL_ENV: token})
    assert done.returncode == 1
    assert "carries an approval Claude Code never asked the person for" in done.stderr
    assert not trusted(loop)


def test_a_token_whose_prompt_the_person_declined_dies(
    project: Path, loop: paths.LoopPaths
) -> None:
    from ralphstate.storage.peruser import approvals

    answered = transcript(loop, "sess-1", "ralphstate trust", answered=True)
    token = approvals.mint(loop, "sess-1", "toolu_01", str(answered))
    done = detached(rs_argv("trust"), project, env={**CLAUDE, APPROVAL_ENV: token})
    assert done.returncode == 1
    assert "one they already answered, so it counts as none" in done.stderr
    again = detached(rs_argv("trust"), project, env={**CLAUDE, APPROVAL_ENV: token})
    assert "counts as none" not in again.stderr  # it is gone: unknown now
    assert not trusted(loop)
