"""Verify-on-stop end to end: the real client, ralphstate's installed hooks, a scripted
model that claims too early. The check fails, the model is sent the failure in the
block reason; once it fixes the work, the check passes and the loop completes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from e2e_support import RunClaude, trust_at_terminal
from e2e_support import rs as ralphstate
from fake_api import FakeAnthropicAPI, bash, feedback, text, tool_results

pytestmark = pytest.mark.e2e

CRITERION = "greeting test passes"
CHECK_CODE = """\
import sys
from pathlib import Path

greeting = Path("greeting.txt").read_text().strip()
print("greeting.txt says", repr(greeting))
if greeting != "hello":
    print("FAILED: expected 'hello'")
    sys.exit(1)
print("ok")
"""


def test_a_failing_check_sends_the_model_back_until_it_passes(
    run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, claude_env: dict[str, str]
) -> None:
    (project / "check_greeting.py").write_text(CHECK_CODE)
    check = f'"{sys.executable}" check_greeting.py'
    ralphstate(project, claude_env, "install")
    ralphstate(project, claude_env, "init", "Greet", "-c", CRITERION, "--verify-on-stop")
    ralphstate(project, claude_env, "criteria", "check", CRITERION, check)
    trust_at_terminal(project, claude_env)  # the person trusts the check at their terminal
    api.add_turns(
        [bash("printf hullo > greeting.txt")],
        [bash(f'ralphstate criteria set "{CRITERION}" true')],
        [text("The greeting is written. <loop-complete>")],
        [bash("printf hello > greeting.txt")],
        [bash(f'ralphstate criteria set "{CRITERION}" true')],
        [text("Fixed the greeting. <loop-complete>")],
    )

    done, result = run_claude(project, "Write the greeting", timeout=120)

    assert done.returncode == 0, done.stderr
    assert result["result"] == "Fixed the greeting. <loop-complete>"
    requests = api.conversation()
    assert len(requests) == 6
    # The claim was checked: the model's next request carries the real failure.
    reason = feedback(requests[3])
    assert reason.startswith(
        "You claimed every criterion; ralphstate ran the checks and 1 failed. Their"
        " criteria are set back to not verified:\n"
        f"- {CRITERION}: `{check}` exit code 1 ("
    )
    assert "the end of its output:\n    greeting.txt says 'hullo'\n" in reason
    assert "    FAILED: expected 'hello'\n" in reason
    assert f"1 of 1 criterion not verified yet:\n- {CRITERION}\n" in reason
    assert tool_results(requests[5])[-1].startswith(f"{CRITERION}: met")
    # The second claim was checked too, and passed.
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert state["status"] == "complete"
    assert state["criteriaStatus"] == {CRITERION: True}
    evidence = state["evidence"][CRITERION]
    assert (evidence["result"], evidence["exitCode"]) == ("verified", 0)
    assert evidence["outputTail"] == "greeting.txt says 'hello'\nok"
    lines = (project / ".loop" / "history.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    checks = [(e["result"], e["by"]) for e in events if e["event"] == "check"]
    assert checks == [("failing", "stop"), ("verified", "stop")]
    assert events[-1]["event"] == "complete"
