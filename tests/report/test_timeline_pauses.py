"""The HTML timeline draws a pause as a pause: the turn a Stop-hook pause ended (a
budget reached inside a session, through real hook processes), and a run's iteration
after which the run paused, are never a blue bar that "went on"."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from ralphstate.core import state as st
from ralphstate.report import story as story_
from ralphstate.report.html import COLOURS, timeline
from tests.helpers import run_process

BLUE = "#3b7dd8"
SHAPE = re.compile(r'<rect class="(bar|paused)" data-iteration="(\d+)"[^>]* fill="(#\w+)">')


def reply(transcript: Path, number: int, tokens: int) -> None:
    """A reply of the session, as Claude Code writes it to the transcript."""
    line = {
        "type": "assistant",
        "timestamp": f"2030-01-01T00:00:0{number}Z",
        "message": {
            "id": f"msg-{number}",
            "role": "assistant",
            "content": [{"type": "text", "text": "working"}],
            "usage": {"input_tokens": tokens, "output_tokens": 0},
        },
    }
    with transcript.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def test_a_budget_pause_in_a_session_is_drawn_as_the_pause(project: Path, tmp_path: Path) -> None:
    assert run_process(["init", "Build it", "-c", "a"], cwd=project).returncode == 0
    assert run_process(["config", "max-tokens", "1000"], cwd=project).returncode == 0
    transcript = project / "transcript.jsonl"
    said = []
    for number, tokens in enumerate((100, 200, 900)):  # the third turn passes the budget
        reply(transcript, number, tokens)
        time.sleep(1.1)  # each turn takes a second: the bars have widths to compare
        data = {
            "session_id": "s1",
            "cwd": str(project),
            "transcript_path": str(transcript),
            "last_assistant_message": "working",
        }
        done = run_process(["hook", "stop"], cwd=project, input=json.dumps(data))
        said.append(json.loads(done.stdout))
    assert [s.get("decision") for s in said] == ["block", "block", None]
    assert "its budget is reached" in said[-1]["systemMessage"]

    page = tmp_path / "report.html"
    made = run_process(["report", "--html", "-o", str(page)], cwd=project)
    assert made.returncode == 0, made.stderr
    shapes = SHAPE.findall(page.read_text(encoding="utf-8"))
    assert shapes == [
        ("bar", "1", BLUE),
        ("bar", "2", BLUE),
        ("paused", "2", COLOURS["budget"]),  # the last turn: it ended in the pause
    ]
    assert COLOURS["budget"] != BLUE


def _run_history(decision: str) -> list[dict[str, Any]]:
    return [
        {"at": "2026-01-01T00:00:00Z", "event": "run_started", "iteration": 0},
        {
            "at": "2026-01-01T00:01:00Z",
            "event": "run_iteration",
            "iteration": 1,
            "duration": 60.0,
            "result": "exit 0",
            "decision": "continue",
        },
        {
            "at": "2026-01-01T00:02:00Z",
            "event": "run_iteration",
            "iteration": 2,
            "duration": 60.0,
            "result": "usage limit",
            "decision": decision,
        },
        {
            "at": "2026-01-01T00:02:00Z",
            "event": "run_finished",
            "iteration": 2,
            "outcome": "paused",
            "reason": "budget",
        },
    ]


def test_a_run_that_paused_after_an_iteration_draws_that_iteration_as_the_pause() -> None:
    state = st.new("Build it", ["a"], [], now="2026-01-01T00:00:00Z")
    # Waiting out a limit would have passed the duration budget: the iteration's own
    # decision was to try again, and the run paused instead.
    drawn = timeline(story_.gather(state, _run_history("retry"), "/p"))
    assert SHAPE.findall(drawn) == [("bar", "1", BLUE), ("bar", "2", COLOURS["budget"])]
    assert "then paused: budget" in drawn
    for decision in ("run_max", "agent_errors", "step_retries", "limit"):
        drawn = timeline(story_.gather(state, _run_history(decision), "/p"))
        assert SHAPE.findall(drawn)[-1] == ("bar", "2", COLOURS[decision])
        assert COLOURS[decision] != BLUE
