"""Clean-room verification end to end: the real client and ralphstate's installed hooks in
a git repository. The model writes the file the check needs but leaves it untracked;
the Stop hook runs the check in a clean room, where the file is not, and the block
reason says that untracked files are not in it and that `git add` puts them in. Once
the model adds it, the check passes in the room and the loop completes, its evidence
marked clean."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_support import RunClaude, trust_at_terminal
from e2e_support import rs as ralphstate
from fake_api import FakeAnthropicAPI, bash, feedback, text

pytestmark = pytest.mark.e2e

CRITERION = "greeting test passes"
CHECK_CODE = """\
import sys
from pathlib import Path

if not Path("greeting.txt").exists():
    print("FAILED: there is no greeting.txt")
    sys.exit(1)
print("ok")
"""
WHO = ["-c", "user.name=Loop Tester", "-c", "user.email=tester@example.invalid"]


def git(project: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=project, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_an_untracked_file_is_not_in_the_clean_room_and_the_model_is_told_to_add_it(
    run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, claude_env: dict[str, str]
) -> None:
    (project / "check_greeting.py").write_text(CHECK_CODE)
    (project / ".gitignore").write_text(".claude/\n.loop/\n")
    git(project, claude_env, "init", "-q")
    git(project, claude_env, "add", "-A")
    git(project, claude_env, *WHO, "commit", "-q", "-m", "the check")
    check = f'"{sys.executable}" check_greeting.py'
    ralphstate(project, claude_env, "install")
    ralphstate(project, claude_env, "init", "Greet", "-c", CRITERION)
    ralphstate(project, claude_env, "criteria", "check", CRITERION, check)
    trust_at_terminal(project, claude_env)
    api.add_turns(
        [bash("printf hello > greeting.txt")],
        [bash(f'ralphstate criteria set "{CRITERION}" true')],
        [text("The greeting is written. <loop-complete>")],
        [bash("git add greeting.txt")],
        [bash(f'ralphstate criteria set "{CRITERION}" true')],
        [text("Added the greeting to git. <loop-complete>")],
    )

    done, result = run_claude(project, "Write the greeting", timeout=120)

    assert done.returncode == 0, done.stderr
    assert result["result"] == "Added the greeting to git. <loop-complete>"
    requests = api.conversation()
    assert len(requests) == 6
    # The first claim was checked in the clean room, where greeting.txt is not.
    reason = feedback(requests[3])
    assert reason.startswith("You claimed every criterion; ralphstate ran the checks and 1 failed.")
    assert "    FAILED: there is no greeting.txt\n" in reason
    assert (
        "    ralphstate: this check ran in a clean room, which holds only the files git"
        " tracks; untracked files (greeting.txt) are not in it: `git add` puts them in.\n"
    ) in reason
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert state["status"] == "complete"
    evidence = state["evidence"][CRITERION]
    assert (evidence["result"], evidence["clean"]) == ("verified", True)
    lines = (project / ".loop" / "history.jsonl").read_text().splitlines()
    checks = [json.loads(line) for line in lines if '"event":"check"' in line]
    assert [(c["result"], c["by"], c["clean"]) for c in checks] == [
        ("failing", "stop", True),
        ("verified", "stop", True),
    ]
    # Nothing of either room is left: not in git's list, not on the disk.
    assert git(project, claude_env, "worktree", "list").count("\n") == 1
    assert "greeting.txt" in git(project, claude_env, "ls-files")
