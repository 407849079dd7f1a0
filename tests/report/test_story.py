"""The loop's story from a state and its history (report/story.py), and its text and
Markdown renderings: exact output for a small loop told by run, hook and person."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.loop.project import locate
from ralphstate.report import collect
from ralphstate.report import story as story_
from ralphstate.report.html import html
from ralphstate.report.plain import markdown, text

TREE = "a" * 40
OTHER = "b" * 40
COMMIT = "c0ffee" + "0" * 34


def the_state() -> st.State:
    state = st.new(
        "Add a CSV export", ["tests pass", "docs"], ["write it"], now="2026-01-01T00:00:00Z"
    )
    cast(st.Raw, state).update(
        checks={"tests pass": "pytest -q"},
        criteriaStatus={"tests pass": True, "docs": False},
        completedSteps=["write it"],
        iteration=3,
        status="paused",
        pauseReason="stall",
        evidence={
            "tests pass": {
                "result": "verified",
                "command": "pytest -q",
                "exitCode": 0,
                "durationMs": 4200,
                "at": "2026-01-01T00:05:00Z",
                "summary": "exit code 0",
                "outputTail": "3 passed",
                "commit": COMMIT,
                "dirty": False,
                "tree": TREE,
            }
        },
    )
    return st.normalise(state)


HISTORY: list[dict[str, Any]] = [
    {"at": "2026-01-01T00:00:00Z", "event": "init", "iteration": 0},
    {"at": "2026-01-01T00:00:10Z", "event": "run_started", "iteration": 0},
    {
        "at": "2026-01-01T00:01:10Z",
        "event": "run_iteration",
        "iteration": 1,
        "duration": 60.0,
        "result": "exit 0",
        "decision": "continue",
        "cost": 0.5,
        "tokens": 1200,
    },
    {
        "at": "2026-01-01T00:02:00Z",
        "event": "check",
        "iteration": 2,
        "criterion": "tests pass",
        "result": "failing",
        "by": "run",
    },
    {
        "at": "2026-01-01T00:02:00Z",
        "event": "run_iteration",
        "iteration": 2,
        "duration": 45.5,
        "result": "exit 1",
        "decision": "continue",
    },
    {
        "at": "2026-01-01T00:04:59Z",
        "event": "check",
        "iteration": 3,
        "criterion": "tests pass",
        "result": "verified",
        "by": "run",
    },
    {
        "at": "2026-01-01T00:05:00Z",
        "event": "commit",
        "iteration": 3,
        "commit": COMMIT,
        "subject": 'ralphstate: iteration 3: "tests pass" met',
    },
    {
        "at": "2026-01-01T00:05:00Z",
        "event": "run_iteration",
        "iteration": 3,
        "duration": 170.0,
        "result": "exit 0",
        "decision": "stall",
        "cost": 1.25,
    },
    {
        "at": "2026-01-01T00:05:01Z",
        "event": "run_finished",
        "iteration": 3,
        "outcome": "paused",
        "reason": "stall",
    },
]


def test_the_story_gathers_iterations_greens_pauses_and_commits() -> None:
    told = story_.gather(the_state(), HISTORY, "/p", tree=OTHER)
    assert [
        (i.number, i.by, i.duration, i.decision, i.cost, i.commit) for i in told.iterations
    ] == [
        (1, "run", 60.0, "continue", 0.5, None),
        (2, "run", 45.5, "continue", None, None),
        (3, "run", 170.0, "stall", 1.25, COMMIT),
    ]
    assert [(m.iteration, m.what) for m in told.greens] == [(3, "tests pass")]
    assert told.turns == [("tests pass", 3, True, "verified")]
    assert [(m.iteration, m.what, m.detail) for m in told.pauses] == [(3, "stall", "run")]
    assert [(m.iteration, m.what) for m in told.commits] == [(3, COMMIT)]
    assert [c.stale for c in told.criteria] == [True, False]
    assert told.total_duration == 275.5 and told.total_cost == 1.75
    assert told.total_tokens == 1200 and told.iterations[0].tokens == 1200


def test_hook_blocks_are_iterations_timed_from_the_event_before() -> None:
    history = [
        {"at": "2026-01-01T00:00:00Z", "event": "init", "iteration": 0},
        {"at": "2026-01-01T00:00:30Z", "event": "unmet", "iteration": 1, "unmet": ["docs"]},
        {"at": "2026-01-01T00:01:30Z", "event": "no_marker", "iteration": 2},
        {
            "at": "2026-01-01T00:01:40Z",
            "event": "criterion_set",
            "iteration": 2,
            "criterion": "docs",
            "value": True,
        },
        {"at": "2026-01-01T00:01:50Z", "event": "stall", "iteration": 2},
    ]
    told = story_.gather(the_state(), history, "/p")
    assert [(i.number, i.by, i.duration, i.result) for i in told.iterations] == [
        (1, "stop", 30.0, "1 unmet"),
        (2, "stop", 60.0, "marker missing"),
    ]
    assert [(m.what, m.detail) for m in told.greens] == [("docs", "claimed")]
    assert [(m.what, m.detail) for m in told.pauses] == [("stall", "by the Stop hook")]


def test_every_blocking_stop_rule_is_an_iteration_and_every_pausing_one_a_pause() -> None:
    """From the Stop rules' table (core/decide.py, OUTCOMES): a loop without criteria
    blocked is an iteration; a budget reached at a stop is a pause."""
    history = [
        {"at": "2026-01-01T00:00:00Z", "event": "init", "iteration": 0},
        {"at": "2026-01-01T00:00:20Z", "event": "no_criteria", "iteration": 1},
        {"at": "2026-01-01T00:00:30Z", "event": "budget", "iteration": 1, "budget": "tokens"},
    ]
    told = story_.gather(the_state(), history, "/p")
    assert [(i.number, i.by, i.duration, i.result) for i in told.iterations] == [
        (1, "stop", 20.0, "no criteria")
    ]
    assert [(m.what, m.detail) for m in told.pauses] == [("budget", "by the Stop hook")]
    assert story_.HOOK_ITERATIONS == (
        "unmet",
        "no_criteria",
        "no_marker",
        "verify_yourself",
        "ungraded",
    )
    assert story_.HOOK_PAUSES == ("max_iterations", "stall", "budget", "review", "untrusted_checks")


def test_the_text_report() -> None:
    told = story_.gather(the_state(), HISTORY, "/p", tree=OTHER)
    assert text(told).splitlines() == [
        "loop /p",
        "spec: Add a CSV export",
        (
            "status: paused (stall) · iteration 3/20 · 1/2 criteria · 1/1 step"
            " · 3 iterations in 4m36s · 1,200 tokens · cost $1.75"
        ),
        f"started 2026-01-01T00:00:00Z · updated {told.state['updatedAt']}",
        "",
        "criteria:",
        (
            "  [x] tests pass: verified on c0ffee0000 · checked in the agent's environment"
            " · STALE: the code changed since"
            " · exit code 0 · 4.2s · 2026-01-01T00:05:00Z"
        ),
        "      check: pytest -q",
        "  [ ] docs: unmet, no check",
        "",
        "steps:",
        "  [x] write it",
        "",
        "iterations:",
        "  #1    run    1m00s · exit 0 · continue · 1,200 tokens · cost $0.5000",
        "  #2    run    45.5s · exit 1 · continue",
        "  #3    run    2m50s · exit 0 · stall · cost $1.25 · commit c0ffee0000",
        "",
        "criteria turning green:",
        (
            "  #3    2026-01-01T00:04:59Z tests pass · verified by its check"
            " (run, checked in the agent's environment)"
        ),
        "",
        "pauses:",
        "  #3    2026-01-01T00:05:01Z stall · run",
        "",
        "commits:",
        '  #3    2026-01-01T00:05:00Z c0ffee0000 · ralphstate: iteration 3: "tests pass" met',
    ]


def test_the_markdown_report_is_a_pull_request_body() -> None:
    body = markdown(story_.gather(the_state(), HISTORY, "/p", tree=TREE))
    assert body.startswith("## Add a CSV export\n\n_status: paused (stall) · iteration 3/20")
    assert (
        "- [x] **tests pass**: verified on c0ffee0000 · checked in the agent's environment"
        " · exit code 0 · 4.2s" in body
    )
    assert "STALE" not in body  # proven on the tree the work tree holds
    assert "  - check: `pytest -q`\n" in body
    assert "| # | by | duration | result | decision | cost | commit |\n" in body
    assert "| 3 | run | 2m50s | exit 0 | stall | $1.25 | c0ffee0000 |\n" in body
    assert "- after iteration 3: **stall**: run\n" in body
    assert '- `c0ffee0000` ralphstate: iteration 3: "tests pass" met\n' in body


def test_text_from_the_state_cannot_break_out_of_the_html() -> None:
    state = the_state()
    cast(st.Raw, state)["spec"] = '<script>alert(1)</script> & "x"'
    page = html(story_.gather(state, HISTORY, "/p"))
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot;" in page
    assert page.count('class="bar"') == 3


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one line more"])
def test_max_report_history_lines(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch, extra: int
) -> None:
    assert rs("init", "Add a CSV export", "-c", "tests pass").code == 0
    history = project / ".loop" / "history.jsonl"
    lines = history.read_bytes().splitlines()  # the init event
    monkeypatch.setattr(limits, "MAX_REPORT_HISTORY_LINES", len(lines) + 3)
    with history.open("ab") as handle:
        for n in range(1, 4 + extra):
            event = {
                "at": "2026-01-01T00:00:00Z",
                "event": "run_iteration",
                "iteration": n,
                "loop": orjson.loads(lines[0]).get("loop"),
                "duration": 1.0,
                "result": "exit 0",
                "decision": "continue",
            }
            handle.write(orjson.dumps(event) + b"\n")
    told = collect.story(locate(project))
    assert told.history_cut is bool(extra)
    assert [i.number for i in told.iterations] == list(range(1, 4 + extra))
    assert text(told).endswith("(only the newest history lines were read)") is bool(extra)


def test_a_held_out_failure_turns_the_criterion_red() -> None:
    held = [
        *HISTORY,
        {
            "at": "2026-01-01T00:06:00Z",
            "event": "heldout_failed",
            "criterion": "tests pass",
            "by": "stop",
            "iteration": 4,
        },
    ]
    told = story_.gather(the_state(), held, "/p", tree=OTHER)
    assert told.turns == [("tests pass", 3, True, "verified"), ("tests pass", 4, False, "refuted")]
