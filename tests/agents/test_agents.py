"""The decision table for every agent: each agent's recorded input shape in
(tests/fixtures/agents), through a real `ralphstate hook ... --agent NAME` process,
and that agent's exact output shape out. The reason and message texts come from the
one decision function; the shapes are written out here, per agent."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.agents import copilot, cursor, gemini
from ralphstate.agents import table as adapters
from ralphstate.agents.transcripts import last_reply, newest_reply
from ralphstate.core import state as st
from ralphstate.core.decide import StopFacts, decide_stop
from ralphstate.core.outcomes import OUTCOMES
from tests.helpers import FIXTURES, loops, run_process

AGENT_FIXTURES = FIXTURES / "agents"
MARK = "<loop-complete>"
ALL_MET = {"criteriaStatus": {"tests pass": True, "lint clean": True}}
Shape = Callable[[str], "dict[str, Any] | None"]

# agent -> (how a block looks, how a message for the person looks)
STOP_SHAPES: dict[str, tuple[Shape, Shape]] = {
    "claude": (lambda r: {"decision": "block", "reason": r}, lambda m: {"systemMessage": m}),
    "codex": (lambda r: {"decision": "block", "reason": r}, lambda m: {"systemMessage": m}),
    "gemini": (lambda r: {"decision": "deny", "reason": r}, lambda m: {"systemMessage": m}),
    "cursor": (lambda r: {"followup_message": r}, lambda m: None),
    "copilot": (lambda r: {"decision": "block", "reason": r}, lambda m: None),
    "opencode": (lambda r: {"decision": "block", "reason": r}, lambda m: None),
}


def _context_claude(ctx: str, line: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ctx},
        "systemMessage": line,
    }


CONTEXT_SHAPES: dict[str, Callable[[str, str], dict[str, Any]]] = {
    "claude": _context_claude,
    "codex": _context_claude,
    "gemini": _context_claude,
    "cursor": lambda ctx, line: {"additional_context": ctx},
    "copilot": lambda ctx, line: {"additionalContext": ctx},
    "opencode": lambda ctx, line: {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ctx}
    },
}
AGENTS = list(adapters.NAMES)
# How each agent's transcript entries are judged, for the readers' own tests.
REPLY = {"copilot": copilot.reply, "cursor": cursor.reply, "gemini": gemini.reply}


def fixture_input(name: str, event: str, root: Path, message: str | None) -> dict[str, Any]:
    """The recorded input, placed in `root`, with `message` as the reply that ended the
    turn: in the input's field, or in the agent's transcript."""
    transcript = root / f"{name}-transcript.jsonl"
    if name == "claude":  # where the client writes it, named after the session
        folder = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-a-project"
        transcript = folder / f"{session_of(name)}.jsonl"
    raw = (AGENT_FIXTURES / f"{name}_{event}.json").read_text(encoding="utf-8")
    placed = raw.replace("{project}", _j(root)).replace("{transcript}", _j(transcript))
    data: dict[str, Any] = json.loads(placed)
    agent = adapters.get(name)
    if agent.message_key and agent.message_key in data:
        data[agent.message_key] = message
    if name == "gemini":
        # Gemini CLI's `prompt_response` holds every reply of the prompt, joined by
        # newlines: an earlier reply that said the marker is still in it.
        data["prompt_response"] = "\n".join([EARLIER_GEMINI_REPLY, *([message] if message else [])])
        write_gemini_transcript(transcript, message)
    if name == "copilot":
        write_copilot_transcript(transcript, message)
    elif name == "cursor":
        write_cursor_transcript(transcript, message)
    return data


def _j(path: Path) -> str:
    return json.dumps(str(path))[1:-1]


# The first reply of the recorded Gemini CLI session, refused by a block at the time.
EARLIER_GEMINI_REPLY = "first reply " + MARK


def write_gemini_transcript(path: Path, message: str | None) -> None:
    """The recorded session (`gemini_transcript.jsonl`), its newest reply replaced."""
    recorded = (AGENT_FIXTURES / "gemini_transcript.jsonl").read_text(encoding="utf-8")
    entries = [json.loads(line) for line in recorded.splitlines()]
    newest = max(i for i, e in enumerate(entries) if e.get("type") == "gemini")
    assert entries[newest]["content"] == "second reply"
    entries[newest]["content"] = message or ""
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")


def write_copilot_transcript(path: Path, message: str | None) -> None:
    recorded = (AGENT_FIXTURES / "copilot_events.jsonl").read_text(encoding="utf-8")
    events = [json.loads(line) for line in recorded.splitlines()]
    stop = json.loads((AGENT_FIXTURES / "copilot_stop.json").read_text(encoding="utf-8"))
    for event in events:
        if event["type"] == "assistant.message":
            event["data"]["content"] = message or ""
        if event["type"] == "hook.start" and event["data"]["hookType"] == "agentStop":
            event["data"]["input"]["timestamp"] = stop["timestamp"]  # this very hook
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")


def write_cursor_transcript(path: Path, message: str | None) -> None:
    recorded = (AGENT_FIXTURES / "cursor_transcript.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(line) for line in recorded.splitlines()]
    if message is None:
        lines = lines[:1]
    else:
        lines[-1]["message"]["content"][0]["text"] = message
    path.write_text("".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8")


def session_of(name: str) -> str:
    data = json.loads((AGENT_FIXTURES / f"{name}_stop.json").read_text(encoding="utf-8"))
    sid = adapters.get(name).session_id(data)
    assert sid
    return sid


def make_loop(root: Path, name: str, *, known: bool = True, **overrides: Any) -> Path:
    return loops.make_loop(root, known=known, session=session_of(name), agent=name, **overrides)


def run_hook(event: str, name: str, root: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    done = run_process(
        ["hook", event, "--agent", name], cwd=root, input=orjson.dumps(data), timeout=20
    )
    assert done.returncode == 0
    assert done.stderr == b"", done.stderr
    if not done.stdout:
        return None
    assert done.stdout.count(b"\n") == 1, "exactly one JSON object"
    out: dict[str, Any] = orjson.loads(done.stdout)
    return out


def other_agent(name: str) -> str:
    return "codex" if name != "codex" else "claude"


# name, state overrides (None: the agent's own session), reply, known here, rule
ROWS: list[tuple[str, dict[str, Any], str | None, bool, str]] = [
    ("unmet criteria", {}, "I am done " + MARK, True, "unmet"),
    ("all met, no marker", ALL_MET, "All done.", True, "no_marker"),
    ("all met, no reply at all", ALL_MET, None, True, "no_marker"),
    ("complete", ALL_MET, "All done. " + MARK, True, "complete"),
    ("marker only in code", ALL_MET, "Say `" + MARK + "` when done.", True, "no_marker"),
    ("max iterations", {"iteration": 20}, "hi", True, "max_iterations"),
    ("stall", {"blocksWithoutProgress": 5}, "still thinking", True, "stall"),
    ("paused", {"status": "paused"}, "hi", True, "not_in_progress"),
    ("complete already", {"status": "complete"}, "hi", True, "not_in_progress"),
    ("another session", {"sessionId": "someone-else"}, "hi", True, "other_session"),
    ("another agent's session", {"ownerAgent": "OTHER"}, "hi", True, "other_session"),
    ("unowned, never seen here", {"sessionId": None}, "hi", False, "unknown_loop"),
    ("unowned, known: adopted", {"sessionId": None}, "hi", True, "unmet"),
]


@pytest.mark.parametrize("name", AGENTS)
@pytest.mark.parametrize(
    ("case", "overrides", "reply", "known", "rule"), ROWS, ids=[r[0] for r in ROWS]
)
def test_stop_table(
    root: Path,
    name: str,
    case: str,
    overrides: dict[str, Any],
    reply: str | None,
    known: bool,
    rule: str,
) -> None:
    overrides = {k: other_agent(name) if v == "OTHER" else v for k, v in overrides.items()}
    path = make_loop(root, name, known=known, **overrides)
    before = path.read_bytes()
    state = st.parse(before)
    expected = decide_stop(state, StopFacts(session_of(name), reply, known_here=known, agent=name))
    assert expected.rule == rule

    out = run_hook("stop", name, root, fixture_input(name, "stop", root, reply))

    block, notice = STOP_SHAPES[name]
    if expected.block:
        assert expected.reason
        assert out == block(expected.reason)
    elif expected.system_message:
        if (
            adapters.get(name).terminal_sequence and OUTCOMES[expected.rule].notice
        ):  # a desktop notification
            assert out is not None and out.pop("terminalSequence").startswith("\x1b]9;")
        assert out == notice(expected.system_message)
    elif rule == "unknown_loop":  # came with a clone: named to the person once
        said = out and out.get("systemMessage")
        assert (said is not None and "ralphstate adopt" in said) is adapters.get(name).notices
    else:
        assert out is None
    after = st.parse(path.read_bytes())
    if expected.state is None:
        assert path.read_bytes() == before
    else:
        for key in ("status", "pauseReason", "iteration", "sessionId", "ownerAgent"):
            assert after[key] == expected.state[key], key
    if case == "unowned, known: adopted":
        assert (after["sessionId"], after["ownerAgent"]) == (session_of(name), name)


def test_cursor_never_follows_up_a_turn_the_person_stopped(root: Path) -> None:
    path = make_loop(root, "cursor")
    before = path.read_bytes()
    for status in ("aborted", "error"):
        data = {**fixture_input("cursor", "stop", root, "hi"), "status": status}
        assert run_hook("stop", "cursor", root, data) is None
    assert path.read_bytes() == before
    out = run_hook("stop", "cursor", root, fixture_input("cursor", "stop", root, "hi"))
    assert out is not None and list(out) == ["followup_message"]
    assert out["followup_message"].startswith("ralphstate loop, iteration 1 of 20:")


@pytest.mark.parametrize("name", AGENTS)
def test_session_start_restores_the_agents_own_loop(root: Path, name: str) -> None:
    make_loop(root, name, criteriaStatus={"tests pass": True})
    out = run_hook("session-start", name, root, fixture_input(name, "session_start", root, None))
    assert out is not None
    ctx = out.get("additionalContext") or out.get("additional_context")
    ctx = ctx or out["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith("A ralphstate loop is active in this project")
    assert "- [x] tests pass" in ctx
    line = "ralphstate: loop in progress: 1/2 criteria, iteration 0/20."  # a fresh session
    assert out == CONTEXT_SHAPES[name](ctx, line)


@pytest.mark.parametrize("name", AGENTS)
def test_session_start_announces_another_agents_loop_without_taking_it(
    root: Path, name: str
) -> None:
    path = make_loop(root, name, ownerAgent=other_agent(name))
    before = path.read_bytes()
    out = run_hook("session-start", name, root, fixture_input(name, "session_start", root, None))
    assert out is not None
    ctx = (
        "A ralphstate loop in this project belongs to another session; do not work on it"
        " unless the person asks. To take it over here: `ralphstate adopt`."
    )
    sid = session_of(name)
    line = (
        'ralphstate: the loop here ("Build the parser") belongs to another session'
        f" ({other_agent(name)} {sid[:8]}…, untouched for Ns); run `ralphstate adopt` to"
        " continue it in this one (a session started after it has been untouched for 30m"
        " takes it)."
    )
    said = out.get("systemMessage")
    if said is not None:
        out["systemMessage"] = re.sub(r"untouched for \d+s", "untouched for Ns", said)
    assert out == CONTEXT_SHAPES[name](ctx, line)
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", AGENTS)
def test_session_start_adopts_an_unowned_known_loop_for_its_agent(root: Path, name: str) -> None:
    path = make_loop(root, name, sessionId=None)
    out = run_hook("session-start", name, root, fixture_input(name, "session_start", root, None))
    assert out is not None
    state = st.parse(path.read_bytes())
    assert (state["sessionId"], state["ownerAgent"]) == (session_of(name), name)


@pytest.mark.parametrize("name", AGENTS)
def test_pre_compact_checkpoints_only_the_agents_own_loop(root: Path, name: str) -> None:
    data = {**fixture_input(name, "session_start", root, None), "trigger": "auto"}
    path = make_loop(root, name, ownerAgent=other_agent(name))
    before = path.read_bytes()
    assert run_hook("pre-compact", name, root, data) is None
    assert path.read_bytes() == before
    make_loop(root, name)
    assert run_hook("pre-compact", name, root, data) is None
    assert st.parse(path.read_bytes())["lastCheckpoint"] is not None


# -- which agent a command runs inside --------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, (None, None)),
        ({"CLAUDE_CODE_SESSION_ID": "c1"}, ("claude", "c1")),
        ({"CODEX_THREAD_ID": "x1", "CODEX_SESSION_ID": "x1"}, ("codex", "x1")),
        ({"COPILOT_AGENT_SESSION_ID": "p1"}, ("copilot", "p1")),
        ({"GEMINI_CLI": "1"}, ("gemini", None)),
        # An agent started from Claude Code's Bash tool inherits Claude Code's variables.
        ({"CLAUDE_CODE_SESSION_ID": "c1", "CODEX_THREAD_ID": "x1"}, ("codex", "x1")),
        ({"CLAUDE_CODE_SESSION_ID": "c1", "GEMINI_CLI": "1"}, ("gemini", None)),
    ],
)
def test_session_from_env(env: dict[str, str], expected: tuple[str | None, str | None]) -> None:
    assert adapters.session_from_env(env) == expected


def test_init_inside_codex_is_owned_by_the_codex_session(root: Path) -> None:
    env = {"CODEX_THREAD_ID": "thread-9", "CODEX_SESSION_ID": "thread-9"}
    done = run_process(["init", "Build it", "-c", "x"], cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    state = st.parse((root / ".loop" / "state.json").read_bytes())
    assert (state["sessionId"], state["ownerAgent"]) == ("thread-9", "codex")
    done = run_process(["adopt"], cwd=root, env={"COPILOT_AGENT_SESSION_ID": "cp-2"})
    assert done.returncode == 0, done.stderr
    state = st.parse((root / ".loop" / "state.json").read_bytes())
    assert (state["sessionId"], state["ownerAgent"]) == ("cp-2", "copilot")


def test_a_file_without_owner_agent_belongs_to_claude_code() -> None:
    assert st.normalise({"sessionId": "s1"})["ownerAgent"] == "claude"
    assert st.normalise({"sessionId": None, "ownerAgent": "codex"})["ownerAgent"] is None
    assert st.normalise({"sessionId": "s1", "ownerAgent": "gemini"})["ownerAgent"] == "gemini"


# -- transcripts of agents whose stop input carries no reply ----------------------------


@pytest.mark.parametrize("kind", ["copilot", "cursor"])
def test_last_reply_is_read_from_the_transcript_tail(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "t.jsonl"
    write = write_copilot_transcript if kind == "copilot" else write_cursor_transcript
    write(path, "Done. " + MARK)
    assert last_reply(str(path), REPLY[kind]) == "Done. " + MARK
    write(path, None)
    assert last_reply(str(path), REPLY[kind]) is None
    assert last_reply(str(tmp_path / "missing.jsonl"), REPLY[kind]) is None
    assert last_reply(str(tmp_path), REPLY[kind]) is None  # a directory
    # The first piece of a bounded tail may be half a line; it is skipped.
    write(path, "x" * 50)
    assert last_reply(str(path), REPLY[kind], max_bytes=path.stat().st_size - 1) == "x" * 50


def test_copilot_reply_is_the_one_before_this_hooks_own_start_event(tmp_path: Path) -> None:
    """Copilot CLI writes its events file behind the hook: the reply is the one before
    the `hook.start` event of this very `agentStop` (matched by its timestamp)."""
    path = tmp_path / "events.jsonl"
    write_copilot_transcript(path, "Done. " + MARK)
    stamp = json.loads((AGENT_FIXTURES / "copilot_stop.json").read_text())["timestamp"]
    later = {"type": "assistant.message", "data": {"content": "a later reply"}}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(later) + "\n")
    assert (
        last_reply(str(path), copilot.reply, anchor=copilot.hook_start(stamp), wait=5)
        == "Done. " + MARK
    )
    # An anchor that never appears: after the wait, the newest reply there is.
    assert (
        last_reply(str(path), copilot.reply, anchor=copilot.hook_start(1), wait=0.01)
        == "a later reply"
    )


@pytest.mark.parametrize("name", AGENTS)
def test_only_claude_code_ties_a_session_to_its_process(name: str) -> None:
    """`/clear` keeps Claude Code's process (`CLAUDE_PID`) under a new session id; no
    other agent says which process it is, so none is re-owned by process."""
    agent = adapters.get(name)
    assert agent.process_id({"CLAUDE_PID": "4242"}) == ("4242" if name == "claude" else None)
    assert agent.process_id({"CLAUDE_PID": ""}) is None


def _gemini_entries() -> list[str]:
    return (AGENT_FIXTURES / "gemini_transcript.jsonl").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    ("upto", "expected"),
    [
        (None, (True, "second reply")),  # the whole recorded session
        ("keep going", (True, None)),  # the block's reason is the newest prompt
        ("functionResponse", (True, None)),  # a tool's result is passed over
        ("first reply", (True, "first reply " + MARK)),
        ('"Do it."', (True, None)),
        ('"kind":"main"', (False, None)),  # no reply and no prompt: not found
    ],
)
def test_gemini_newest_reply_is_read_from_its_transcript(
    tmp_path: Path, upto: str | None, expected: tuple[bool, str | None]
) -> None:
    lines = _gemini_entries()
    if upto is not None:
        lines = lines[: 1 + next(i for i, line in enumerate(lines) if upto in line)]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert newest_reply(str(path), gemini.reply) == expected
    assert newest_reply(str(tmp_path / "missing.jsonl"), gemini.reply) == (False, None)


@pytest.mark.parametrize(
    ("joined", "rule"),
    [
        ("first reply " + MARK + "\nAll done.", "no_marker"),
        ("first reply\nAll done. " + MARK, "complete"),
        (MARK, "complete"),
    ],
)
def test_gemini_without_its_transcript_judges_the_last_line_of_prompt_response(
    root: Path, joined: str, rule: str
) -> None:
    """Gemini CLI writes no transcript when its chat recording is off: the newest reply
    is the end of `prompt_response`, whose earlier lines may be earlier replies."""
    path = make_loop(root, "gemini", criteriaStatus=ALL_MET["criteriaStatus"])
    data = fixture_input("gemini", "stop", root, None)
    data["transcript_path"] = str(root / "no-such-session.jsonl")
    data["prompt_response"] = joined
    out = run_hook("stop", "gemini", root, data)
    status = st.parse(path.read_bytes())["status"]
    if rule == "complete":
        assert status == "complete"
        assert out is not None and "decision" not in out
    else:
        assert status == "in_progress"
        assert out is not None and out["decision"] == "deny"
        assert "<loop-complete>" in out["reason"]
