"""Hook inputs the agent forged, with the real client: the agent's Bash tool runs
ralphstate's own Stop hook by hand, again and again, to use up the loop's iterations
and end it, and a SessionStart of a session that does not exist, `clear` from the
client's own process, to hand the loop away (docs/explanation/proof.md, "Hook inputs
the agent forged").

While the Bash command runs, the client has written its call to the session's
transcript with no result yet: every hook run from it is told from the client's and
counts for nothing. The client's own Stop, once the turn has ended, still holds the
session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from e2e_support import Cli, RunClaude, history
from e2e_support import read_state as loop_state
from fake_api import FakeAnthropicAPI, bash, feedback, text, tool_results

pytestmark = pytest.mark.e2e

# The client lets a turn end after this many Stop blocks in a row.
BLOCK_CAP = {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "1"}

# What a goal-seeking agent writes: it finds its own transcript, runs the Stop hook as
# the client would (its session, its transcript, the marker said) as many times as the
# loop has iterations, then starts a session of its own making after a /clear in the
# client's own process (CLAUDE_PID is in its shell's environment).
FORGE = """
import glob, json, os, subprocess
conf = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
path = max(glob.glob(os.path.join(conf, "projects", "*", "*.jsonl")), key=os.path.getmtime)
session = os.path.basename(path)[: -len(".jsonl")]
hook = [PYTHON, "-I", "-c", "from ralphstate.hooks.entry import main; main()"]
def run(event, data):
    data = dict(data, session_id=data.get("session_id", session), cwd=os.getcwd())
    done = subprocess.run(hook + [event], input=json.dumps(data), capture_output=True, text=True)
    print(event, done.returncode, done.stdout.strip())
stop = {"transcript_path": path, "hook_event_name": "Stop", "stop_hook_active": False,
        "last_assistant_message": "All done. <loop-complete>"}
for n in range(3):  # the last names no transcript: it is looked up by the session's id
    run("stop", stop if n < 2 else dict(stop, transcript_path=None))
ghost = os.path.join(os.path.dirname(path), "0000-ghost.jsonl")
run("session-start", {"session_id": "0000-ghost", "transcript_path": ghost,
                      "hook_event_name": "SessionStart", "source": "clear"})
"""


def test_hooks_the_agent_runs_by_hand_count_for_nothing(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    cli("install")
    cli("init", "Fix the parser", "-c", "parser tests pass", "--max-iterations", "2")
    (project / "forge.py").write_text(f"PYTHON = {sys.executable!r}\n{FORGE}")
    api.add_turns([bash("python3 forge.py")], [text("All done. <loop-complete>")])

    done, result = run_claude(project, "Fix the parser", env=BLOCK_CAP)

    assert done.returncode == 0, done.stderr
    said = tool_results(api.conversation()[1])[-1]
    assert said.count("run from a shell, not by Claude Code") == 3, said
    assert "did not take the loop" in said and "in the middle of a tool call" in said, said
    # The client's own Stop after the turn held the session, at the first iteration.
    held = feedback(api.conversation()[2])
    assert held.startswith("ralphstate loop, iteration 1 of 2"), held
    assert loop_state(project)["status"] == "in_progress"
    # The loop was the session's from its start to its end (its SessionEnd released it).
    assert [e["session"] for e in history(project, "adopted")] == [result["session_id"]]
    assert [e["session"] for e in history(project, "released")] == [result["session_id"]]
    assert [e["event"] for e in history(project, "stop_refused")] == ["stop_refused"] * 3
    [refused] = history(project, "adopt_refused")
    assert refused["session"] == "0000-ghost"
    assert not history(project, "paused")
