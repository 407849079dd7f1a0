"""The Stop decision table, run twice: against the pure function and through real
`ralphstate hook stop` processes with JSON on stdin."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast, get_args

import orjson
import pytest

from ralphstate.core import state as st
from ralphstate.core.decide import Checked, StopFacts, decide_stop
from ralphstate.core.outcomes import OUTCOMES, Rule
from ralphstate.core.proof import Pending
from ralphstate.storage.peruser import registry
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import run_process
from tests.helpers.loops import parser_state

SID = "session-a"
MARK = "<loop-complete>"


def make(**overrides: Any) -> st.State:
    return parser_state(**overrides)


ALL_MET = {"criteriaStatus": {"tests pass": True, "lint clean": True}}

# name, state overrides, input session, last message, known here, rule, block, changes
TABLE: list[tuple[str, dict[str, Any], str, str | None, bool, str, bool, dict[str, Any]]] = [
    ("paused loop", {"status": "paused"}, SID, "hi", True, "not_in_progress", False, {}),
    ("complete loop", {"status": "complete"}, SID, "hi", True, "not_in_progress", False, {}),
    ("cancelled loop", {"status": "cancelled"}, SID, "hi", True, "not_in_progress", False, {}),
    ("other session", {}, "session-b", "hi", True, "other_session", False, {}),
    ("unowned, never seen", {"sessionId": None}, SID, "hi", False, "unknown_loop", False, {}),
    (
        "unowned, known: adopted, then blocked",
        {"sessionId": None},
        SID,
        "hi",
        True,
        "unmet",
        True,
        {"sessionId": SID, "iteration": 1},
    ),
    (
        "max iterations",
        {"iteration": 20},
        SID,
        "hi",
        True,
        "max_iterations",
        False,
        {"status": "paused", "pauseReason": "max_iterations", "iteration": 20},
    ),
    (
        "max iterations beats everything met",
        {"iteration": 3, "maxIterations": 3, **ALL_MET},
        SID,
        MARK,
        True,
        "max_iterations",
        False,
        {"status": "paused", "pauseReason": "max_iterations"},
    ),
    (
        "stall",
        {"blocksWithoutProgress": 5},
        SID,
        "still thinking",
        True,
        "stall",
        False,
        {"status": "paused", "pauseReason": "stall"},
    ),
    (
        "progress resets the stall count",
        {"blocksWithoutProgress": 5, "lastProgress": "something else"},
        SID,
        "did work",
        True,
        "unmet",
        True,
        {"blocksWithoutProgress": 0, "iteration": 1},
    ),
    (
        "unmet criteria",
        {},
        SID,
        "I am done " + MARK,
        True,
        "unmet",
        True,
        {"iteration": 1, "blocksWithoutProgress": 0, "status": "in_progress"},
    ),
    (
        "one unmet criterion",
        {"criteriaStatus": {"tests pass": True}},
        SID,
        None,
        True,
        "unmet",
        True,
        {"iteration": 1},
    ),
    (
        "all met, no marker",
        ALL_MET,
        SID,
        "All done.",
        True,
        "no_marker",
        True,
        {"iteration": 1},
    ),
    (
        "all met, marker only in a code block",
        ALL_MET,
        SID,
        f"Say `{MARK}` when done.\n```\n{MARK}\n```",
        True,
        "no_marker",
        True,
        {"iteration": 1},
    ),
    (
        "all met and marker",
        ALL_MET,
        SID,
        f"Everything verified.\n{MARK}",
        True,
        "complete",
        False,
        {"status": "complete", "iteration": 0},
    ),
    (
        "custom marker",
        {**ALL_MET, "completionMarker": "DONE-DONE"},
        SID,
        "DONE-DONE",
        True,
        "complete",
        False,
        {"status": "complete"},
    ),
    (
        "no criteria, started with --no-criteria: the marker decides",
        {"criteria": [], "criteriaStatus": {}, "noCriteria": True},
        SID,
        MARK,
        True,
        "complete",
        False,
        {"status": "complete"},
    ),
    (
        "no criteria and no --no-criteria: the marker is not enough",
        {"criteria": [], "criteriaStatus": {}},
        SID,
        MARK,
        True,
        "no_criteria",
        True,
        {"iteration": 1},
    ),
    (
        "a budget reached where the stop would block: paused",
        {"maxTokens": 1000, "usage": {"tokens": 1000}},
        SID,
        "still working",
        True,
        "budget",
        False,
        {"status": "paused", "pauseReason": "budget", "iteration": 0},
    ),
    (
        "a budget reached at a claimed completion: complete",
        {**ALL_MET, "maxCost": 1.0, "usage": {"cost": 2.5}},
        SID,
        MARK,
        True,
        "complete",
        False,
        {"status": "complete"},
    ),
    (
        "a budget not reached yet",
        {"maxTokens": 1000, "usage": {"tokens": 999}},
        SID,
        "still working",
        True,
        "unmet",
        True,
        {"status": "in_progress", "iteration": 1},
    ),
    (
        "criteria only in criteriaStatus count",
        {"criteria": [], "criteriaStatus": {"a": True, "b": False}},
        SID,
        MARK,
        True,
        "unmet",
        True,
        {"iteration": 1},
    ),
]
IDS = [row[0] for row in TABLE]


@pytest.mark.parametrize("name,overrides,session,message,known,rule,block,changes", TABLE, ids=IDS)
def test_decide_stop(
    name: str,
    overrides: dict[str, Any],
    session: str,
    message: str | None,
    known: bool,
    rule: str,
    block: bool,
    changes: dict[str, Any],
) -> None:
    state = make(**overrides)
    before = orjson.dumps(state)
    decision = decide_stop(state, StopFacts(session, message, known_here=known))
    assert orjson.dumps(state) == before, "decide_stop must not mutate its input"
    assert decision.rule == rule
    assert decision.block is block
    if changes:
        assert decision.state is not None
        for key, value in changes.items():
            assert cast(st.Raw, decision.state)[key] == value, key
    if rule in ("not_in_progress", "other_session", "unknown_loop"):
        assert decision.state is None
        assert decision.reason is None and decision.system_message is None
    if block:
        assert decision.reason
    if rule in ("max_iterations", "stall", "budget", "complete"):
        assert decision.system_message and decision.system_message.startswith("ralphstate: ")
    outcome = OUTCOMES[decision.rule]  # the table says what the rule does
    assert decision.block is outcome.block
    if outcome.ends:
        assert decision.state is not None
        status = "complete" if outcome.complete else "paused"
        assert (decision.state["status"], decision.state["pauseReason"]) == (status, outcome.pause)


def _write_loop(root: Path, state: st.State, known: bool) -> None:
    """The loop in `root`, made here; else it came with a clone, and session SID found
    it there when it started."""
    loop = root / ".loop"
    loop.mkdir()
    (loop / "state.json").write_bytes(st.dumps(state))
    if known:
        registry.record(LoopPaths(root, loop), state)
    else:
        registry.note_present(LoopPaths(root, loop), SID)


@pytest.mark.parametrize("name,overrides,session,message,known,rule,block,changes", TABLE, ids=IDS)
def test_stop_hook_process(
    tmp_path: Path,
    name: str,
    overrides: dict[str, Any],
    session: str,
    message: str | None,
    known: bool,
    rule: str,
    block: bool,
    changes: dict[str, Any],
) -> None:
    root = tmp_path / "my project"
    root.mkdir()
    state = make(**overrides)
    _write_loop(root, state, known)
    before = (root / ".loop" / "state.json").read_bytes()
    hook_input: dict[str, Any] = {
        "session_id": session,
        "transcript_path": str(tmp_path / "missing.jsonl"),
        "cwd": str(root),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    if message is not None:
        hook_input["last_assistant_message"] = message
    done = run_process(["hook", "stop"], cwd=tmp_path, input=orjson.dumps(hook_input))
    assert done.returncode == 0
    # No reply in the input and a transcript that is not there: said when the reply is
    # looked for (docs/explanation/hardening.md, "Faults that stay calm").
    unread = (
        b"ralphstate hook stop: the reply that ended the turn could not be read (no"
        b" last_assistant_message, and the transcript could not be read); it is taken to"
        b" hold no completion marker.\n"
    )
    assert done.stderr in ((b"", unread) if message is None else (b"",))
    after_bytes = (root / ".loop" / "state.json").read_bytes()
    if block:
        out = orjson.loads(done.stdout)
        assert out["decision"] == "block"
        assert (
            out["reason"]
            == decide_stop(state, StopFacts(session, message, known_here=known)).reason
        )
    elif rule in ("max_iterations", "stall", "budget", "complete"):
        out = orjson.loads(done.stdout)
        assert set(out) == {"systemMessage", "terminalSequence"}  # the notification
    elif rule == "unknown_loop":  # a loop that came with a clone: named once, untouched
        assert "ralphstate adopt" in orjson.loads(done.stdout)["systemMessage"]
        assert after_bytes == before
    else:
        assert done.stdout == b""
        assert after_bytes == before
    after = st.parse(after_bytes)
    for key, value in changes.items():
        assert cast(st.Raw, after)[key] == value, key
    history = root / ".loop" / "history.jsonl"
    if rule in ("not_in_progress", "other_session", "unknown_loop"):
        assert not history.exists()
    else:
        events = [orjson.loads(line)["event"] for line in history.read_bytes().splitlines()]
        assert events[-1] == rule


def test_block_reason_names_unmet_criteria_step_and_commands() -> None:
    state = make(criteriaStatus={"tests pass": True}, continueMessage="Keep going on the parser.")
    decision = decide_stop(state, StopFacts(SID, "hi", known_here=True))
    assert decision.reason == (
        "Keep going on the parser.\n"
        "\n"
        "ralphstate loop, iteration 1 of 20: 1 of 2 criteria not verified yet:\n"
        "- lint clean\n"
        "Next step: tokenizer\n"
        "\n"
        "Keep working. After verifying a criterion, record it:\n"
        '  ralphstate criteria set "lint clean" true\n'
        "After finishing a step:\n"
        '  ralphstate step done "tokenizer"\n'
        "Say <loop-complete> (outside code) only when every criterion is verified."
    )


@pytest.mark.parametrize(
    ("trusted", "changes", "rule"),
    [
        (False, ["the check of 'lint clean' was replaced"], "review"),
        (True, ["the check of 'lint clean' was replaced"], "unmet"),  # verify runs it
        (False, [], "unmet"),  # a check the agent added: nothing weakened to review
    ],
)
def test_an_unmet_criterion_only_a_person_can_let_its_check_prove_pauses_for_review(
    trusted: bool, changes: list[str], rule: Rule
) -> None:
    state = make(criteriaStatus={"tests pass": True}, checks={"lint clean": "true"})
    review = Pending(changes, ["claude session 1a2b3c4d"])
    facts = StopFacts(SID, "hi", known_here=True, trusted=trusted, review=review)
    decision = decide_stop(state, facts)
    assert decision.rule == rule
    if rule == "review":
        assert decision.state is not None and decision.state["pauseReason"] == "review"
        said = decision.system_message or ""
        assert said.startswith("ralphstate: NEEDS YOUR REVIEW. The loop is paused"), said
        assert "no check the agent may run proves 'lint clean'" in said
        assert "ralphstate verify" not in said and decision.reason is None


def test_no_progress_agent_is_paused_after_stall_limit_blocks() -> None:
    state = make(stallLimit=3)
    rules = []
    for _ in range(6):
        decision = decide_stop(state, StopFacts(SID, "thinking", known_here=True))
        rules.append(decision.rule)
        if decision.state is None:
            break
        state = decision.state
        if decision.rule == "stall":
            break
    assert rules == ["unmet", "unmet", "unmet", "stall"]
    assert state["iteration"] == 3 and state["pauseReason"] == "stall"


def test_progress_between_stops_keeps_the_loop_going() -> None:
    state = make(stallLimit=2)
    for i in range(5):
        decision = decide_stop(state, StopFacts(SID, "working", known_here=True))
        assert decision.rule == "unmet"
        assert decision.state is not None
        state = decision.state
        state["steps"].append(f"step {i}")
        state = st.normalise(state)


def test_runaway_agent_is_released_at_max_iterations() -> None:
    state = make(maxIterations=4, stallLimit=100)
    seen = []
    for i in range(10):
        state["criteriaStatus"]["tests pass"] = i % 2 == 0  # churn counts as progress
        decision = decide_stop(state, StopFacts(SID, "more", known_here=True))
        seen.append(decision.rule)
        assert decision.state is not None
        state = decision.state
        if decision.rule == "max_iterations":
            break
    assert seen == ["unmet"] * 4 + ["max_iterations"]
    assert state["iteration"] == 4 and state["status"] == "paused"


# The pause reasons no Stop rule gives: `ralphstate pause` (the person's or an agent's),
# and `ralphstate run`.
PAUSED_ELSEWHERE = ("user", "agent_errors", "step_retries", "agent")


def test_every_rule_has_one_outcome_in_the_order_the_rules_are_asked() -> None:
    assert tuple(OUTCOMES) == get_args(Rule)


def test_every_pause_reason_is_given_by_exactly_one_rule_or_elsewhere() -> None:
    given = [outcome.pause for outcome in OUTCOMES.values() if outcome.pause is not None]
    assert sorted([*given, *PAUSED_ELSEWHERE]) == sorted(get_args(st.PauseReason))


@pytest.mark.parametrize("rule", list(OUTCOMES))
def test_an_outcome_blocks_pauses_completes_or_leaves_the_loop(rule: Rule) -> None:
    outcome = OUTCOMES[rule]
    assert [outcome.block, outcome.pause is not None, outcome.complete].count(True) <= 1
    # A pause and a completion are notified and drawn in the report; nothing else is.
    assert (outcome.notice is not None) is outcome.ends
    assert (outcome.colour is not None) is outcome.ends
    assert outcome.when and (outcome.says or not (outcome.block or outcome.ends))


def test_the_costly_facts_are_asked_only_when_a_rule_needs_them_and_once_a_stop() -> None:
    asked: list[str] = []

    def reply() -> str:
        asked.append("reply")
        return MARK

    def stale(state: st.State) -> Sequence[str]:
        asked.append("stale")
        return []

    def known(state: st.State) -> bool:
        asked.append("known")
        return True

    facts = StopFacts(SID, reply, known_here=known, stale=stale)
    assert decide_stop(make(iteration=20), facts).rule == "max_iterations"
    assert asked == []  # the cap needs neither the reply nor git, and the loop is owned
    done = make(verifyOnStop=False, **ALL_MET)
    assert decide_stop(done, facts).rule == "complete"
    assert asked == ["reply", "stale"]
    again = facts.given(spent=None, checked=Checked())
    assert decide_stop(make(sessionId=None, **ALL_MET), again).rule == "complete"
    assert asked == ["reply", "stale", "known"]  # what was read stays read
    assert again.stale_found == [] and StopFacts(SID).stale_found is None
