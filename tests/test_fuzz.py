"""Property-based fuzzing of everything ralphstate reads from outside: hook stdin for
all three hooks, state files, and Claude Code transcripts.

The hooks run in this process through `hooks.run_hook` with their streams swapped (a
subprocess costs ~100 ms); a few examples also go through a real `python -m
ralphstate` process and must give the same answer. The budget and seed come from the
hypothesis profile in conftest.py (`--hypothesis-profile=long` for a longer hunt).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, cast

import orjson
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as hs

from ralphstate.agents import table as adapters
from ralphstate.agents.claude import last_assistant_text
from ralphstate.agents.contract import Agent
from ralphstate.core import limits, queries, render, schema, stall
from ralphstate.core import state as st
from ralphstate.core.decide import Checked, StopFacts, decide_stop
from ralphstate.core.errors import CorruptState, RalphstateError
from ralphstate.core.fields import EVIDENCE_RESULTS
from ralphstate.hooks import arrival, notify
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import notices, registry, truststore
from ralphstate.storage.repo import filestamp
from ralphstate.storage.system import paths
from tests.helpers import run_process
from tests.helpers.hardening import (
    HOOKS,
    SID,
    Run,
    cli,
    cli_kept_its_promises,
    hook,
    hook_kept_its_promises,
    make_loop,
    processes_started,
)


def budget(share: float = 1.0) -> settings:
    """The profile's example budget scaled by `share` (cheap tests try more examples,
    real processes fewer); the fixtures used are reset by each example itself."""
    default = settings.default
    assert default is not None  # the profile conftest.py loads
    examples = max(1, round(default.max_examples * share))
    return settings(
        max_examples=examples, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )


CLAUDE = adapters.get("claude")
MARKER = "<loop-complete>"

# -- strategies --------------------------------------------------------------------------

json_leaves = (
    hs.none()
    | hs.booleans()
    | hs.integers(min_value=-(2**63), max_value=2**64 - 1)
    | hs.floats(allow_nan=False, allow_infinity=False)
    | hs.text(max_size=20)
)
json_values = hs.recursive(
    json_leaves,
    lambda inner: hs.lists(inner, max_size=4) | hs.dictionaries(hs.text(max_size=8), inner),
    max_leaves=10,
)


def encode(value: Any) -> bytes:
    """JSON as a person or a tool might write it: big integers, NaN and all."""
    return json.dumps(value, allow_nan=True).encode()


# A reply: plain words, the marker said, the marker quoted in code, or anything at all.
replies = hs.one_of(
    hs.text(max_size=40),
    hs.sampled_from(
        [
            f"All verified. {MARKER}",
            f"Mentioning `{MARKER}` in code",
            f"```\n{MARKER}\n```",
            MARKER,
            "",
        ]
    ),
    json_values,
)


# -- the hooks' input ----------------------------------------------------------------------


def hook_inputs(root: Path) -> hs.SearchStrategy[bytes]:
    """Arbitrary bytes, arbitrary JSON, and the real shape with arbitrary values."""
    transcript = str(root / "t.jsonl")
    fields = {
        "session_id": hs.sampled_from([SID, "session-b", ""]) | json_values,
        "cwd": hs.sampled_from([str(root), str(root / "sub"), "sub", "", "/nonexistent/x"])
        | json_values,
        "last_assistant_message": replies,
        "transcript_path": hs.sampled_from([transcript, str(root), os.devnull, ""]) | json_values,
        "hook_event_name": hs.sampled_from(["Stop", "SessionStart", "PreCompact"]) | json_values,
        "stop_hook_active": json_values,
        "source": hs.sampled_from(["startup", "resume", "clear", "compact", "fork"]) | json_values,
        "trigger": hs.sampled_from(["manual", "auto"]) | json_values,
        "permission_mode": json_values,
        # The other agents' names for the same things.
        "prompt_response": replies,
        "conversation_id": hs.sampled_from([SID, "session-b", ""]) | json_values,
        "workspace_roots": hs.lists(hs.sampled_from([str(root), str(root / "sub")]), max_size=2)
        | json_values,
        "status": hs.sampled_from(["completed", "aborted", "error"]) | json_values,
    }
    extra = hs.dictionaries(hs.text(max_size=8), json_values, max_size=3)
    # The real shape, each field of any type.
    shaped = hs.fixed_dictionaries({}, optional=fields).flatmap(
        lambda known: extra.map(lambda more: {**more, **known})
    )
    # What Claude Code sends, with arbitrary values where the type allows anything.
    valid = hs.fixed_dictionaries(
        {
            "session_id": hs.sampled_from([SID, SID, "session-b"]),
            "cwd": hs.sampled_from([str(root), str(root / "sub")]),
            "hook_event_name": hs.sampled_from(["Stop", "SessionStart", "PreCompact"]),
            "conversation_id": hs.sampled_from([SID, SID, "session-b"]),
            "workspace_roots": hs.lists(hs.just(str(root)), min_size=1, max_size=1),
        },
        optional={
            "last_assistant_message": replies,
            "transcript_path": fields["transcript_path"],
            "stop_hook_active": hs.booleans(),
            "source": fields["source"],
            "trigger": fields["trigger"],
            "permission_mode": hs.text(max_size=10),
            "prompt_response": replies,
            "status": fields["status"],
        },
    ).flatmap(lambda known: extra.map(lambda more: {**more, **known}))
    return hs.one_of(
        valid.map(encode),
        valid.map(encode),
        shaped.map(encode),
        json_values.map(encode),
        hs.binary(max_size=200),
        shaped.map(lambda d: encode(d)[: len(encode(d)) // 2]),  # cut short
    )


# The loop the input meets: a few shapes, so every rule of the decision is reached.
SCENARIOS: dict[str, dict[str, Any]] = {
    "unmet": {},
    "all met": {"criteriaStatus": {"tests pass": True, "lint clean": True}},
    "unowned and known": {"sessionId": None},
    "unowned stranger": {"sessionId": None, "known": False},
    "at max iterations": {"iteration": 20},
    "stalled": {"blocksWithoutProgress": 5},
    "paused": {"status": "paused", "pauseReason": "user"},
    "another agent's": {"ownerAgent": "codex"},
}


def forget(isolated: Path) -> None:
    """What this machine remembers of loops: the registry, the notices, the state files
    sessions found at their start, the ledger."""
    for name in ("loops.json", notices.NOTICES_NAME, registry.PRESENT_NAME):
        (isolated / "state" / name).unlink(missing_ok=True)
    shutil.rmtree(isolated / "data" / "loops", ignore_errors=True)


def setup_loop(root: Path, isolated: Path, scenario: str) -> Path:
    """A fresh loop for one example: no history, no registry, no transcript."""
    shutil.rmtree(root / ".loop", ignore_errors=True)
    forget(isolated)
    changes = dict(SCENARIOS[scenario])
    known = changes.pop("known", True)
    return make_loop(root, known=known, **changes)


# -- what the hooks must do, from the pure decision ----------------------------------------


def located(root: Path, hook_input: dict[str, Any], agent: Agent) -> bool:
    start = agent.project_dir(os.environ)
    found = paths.find(start or agent.cwd(hook_input) or Path.cwd())
    return found is not None and found.dir == root / ".loop"


def expected_stop(
    root: Path, hook_input: Any, before: bytes, agent: Agent = CLAUDE
) -> tuple[dict[str, Any] | None, st.State | None]:
    """(output, state written) the Stop hook owes this input: the pure decision on the
    state as it was, or nothing and no write wherever a fault means fail open."""
    if not isinstance(hook_input, dict) or not agent.turn_finished(hook_input):
        return None, None
    if not located(root, hook_input, agent):
        return None, None
    try:
        state = st.parse(before)
    except CorruptState:
        return unusable(root, agent, "stop"), None
    session = agent.session_id(hook_input)
    if session is None or state["status"] != "in_progress":
        return None, None
    owner = state["sessionId"]
    loop = paths.LoopPaths(root, root / ".loop")
    if owner and (owner != session or (state["ownerAgent"] or "claude") != agent.name):
        # Another session's; one this machine does not know is named to the person once.
        told = not registry.knows(loop, state)
        return (agent.render_notice(arrival.clone_line(state)) if told else None), None
    own = not owner and not registry.knows(loop, state)
    if own and registry.present_at_start(loop, session):
        # It came with a clone: the session found it at its start. Named once.
        return agent.render_notice(arrival.clone_line(state)), None
    # Otherwise a loop nobody knows is a file the session's agent wrote (the fuzz's
    # project is in no git repository): taken, and the person told so.
    claims = queries.verify_on_stop(state) and any(c in state["checks"] for c in state["criteria"])
    untrusted = claims and not truststore.is_trusted(loop, state)
    facts = StopFacts(
        session,
        agent.last_message(hook_input),
        known_here=True,
        checked=Checked(untrusted=True) if untrusted else None,
        agent=agent.name,
        files=filestamp.stamp(loop),  # the project's files, as the hook looks at them
        background=stall.running(hook_input.get("background_tasks")),
    )
    decision = decide_stop(state, facts)
    out = notify.after_stop(agent.render_stop(decision), agent.name, decision, {})
    if own and decision.adopted and decision.state is not None:
        out = arrival.tell(agent, out, arrival.adopted_line(decision.state))
    return out, decision.state


def unusable(root: Path, agent: Agent = CLAUDE, event: str = "") -> dict[str, Any] | None:
    """What a hook says, the first time, about the loop in `root` it cannot use (a Stop
    hook with the notification that the gate failed open)."""
    try:
        Store(paths.LoopPaths(root, root / ".loop")).load()
    except RalphstateError as exc:
        problem = str(exc).rstrip(".")
        out = agent.render_notice(render.unusable(problem))
        if event == "stop":
            out = notify.attach(out, agent.name, notify.failed_open(problem), {})
        return out
    raise AssertionError("the loop is usable")


def without_clock(state: st.State) -> dict[str, object]:
    return {k: v for k, v in st.normalise(state).items() if k != "updatedAt"}


def parsed(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def check_stop(
    run: Run, want: tuple[dict[str, Any] | None, st.State | None], before: bytes, after: bytes
) -> None:
    out = hook_kept_its_promises(run, "stop")
    assert out == want[0]
    if want[1] is None:
        assert after == before
    else:
        assert without_clock(st.parse(after)) == without_clock(want[1])
    if out is not None:
        reason = out.get("reason") or out.get("followup_message") or ""
        assert len(reason) <= limits.MAX_REASON_CHARS


def check_session_start(root: Path, run: Run, before: bytes, after: bytes) -> None:
    out = hook_kept_its_promises(run, "session-start")
    if out is not None:
        assert "decision" not in out
        assert set(out) <= {"hookSpecificOutput", "systemMessage"}
        context = out.get("hookSpecificOutput", {}).get("additionalContext", "")
        assert len(context) <= limits.MAX_CONTEXT_CHARS
    if after != before:  # only ownership may change, and only of a usable loop
        old, new = st.parse(before), st.parse(after)
        assert old["status"] in st.ACTIVE
        changed = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
        assert changed <= {"sessionId", "ownerAgent", "updatedAt"}
        assert out is not None and "hookSpecificOutput" in out


def check_pre_compact(root: Path, run: Run, hook_input: Any, before: bytes, after: bytes) -> None:
    out = hook_kept_its_promises(run, "pre-compact")
    assert out is None or (reading(before) is None and out == unusable(root))
    if after != before:  # only a checkpoint, and only of a usable loop this session owns
        old, new = st.parse(before), st.parse(after)
        assert old["status"] in st.ACTIVE
        changed = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
        assert changed <= {"lastCheckpoint", "updatedAt"}
        owner = old["sessionId"]
        if owner:
            assert owner == hook_input.get("session_id") and old["ownerAgent"] == "claude"
        else:  # a loop that arrived with a clone is left alone until adopted
            assert registry.knows(paths.LoopPaths(root, root / ".loop"), old)


def check_history(loop: Path) -> None:
    history = loop / "history.jsonl"
    if history.exists():
        for line in history.read_bytes().splitlines():
            assert isinstance(orjson.loads(line), dict)


def note(name: str, out: Any, wrote: bool, usable: bool) -> None:
    """What an example reached, for `--hypothesis-show-statistics`."""
    shape = "nothing" if out is None else out.get("decision") or "+".join(sorted(out))
    state = "usable" if usable else "unusable"
    event(f"{name} on an {state} state: {shape}{', wrote' if wrote else ''}")


def run_and_check(root: Path, event: str, data: bytes, agent: Agent = CLAUDE) -> None:
    state_path = root / ".loop" / "state.json"
    before = state_path.read_bytes()
    hook_input = parsed(data)
    want = expected_stop(root, hook_input, before, agent) if event == "stop" else None
    with processes_started() as started:
        run = hook(event, data, "--agent", agent.name)
    assert started == []  # nothing in a state or an input is ever run
    after = state_path.read_bytes()
    outcome = parsed(run.out)
    name = event if agent is CLAUDE else f"{event} --agent {agent.name}"
    note(name, outcome, after != before, reading(before) is not None)
    if event == "stop":
        assert want is not None
        check_stop(run, want, before, after)
    elif event == "session-start":
        check_session_start(root, run, before, after)
    else:
        check_pre_compact(root, run, hook_input, before, after)
    check_history(root / ".loop")


@pytest.fixture
def fuzz_root(project: Path) -> Path:
    (project / "sub").mkdir()
    transcript = project / "t.jsonl"
    line = {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": f"ok {MARKER}"}]},
    }
    transcript.write_bytes(orjson.dumps(line) + b"\n")
    return project


@pytest.mark.parametrize("event", HOOKS)
@budget()
@given(data=hs.data(), scenario=hs.sampled_from(list(SCENARIOS)))
def test_hook_input_fuzz(
    fuzz_root: Path,
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
    data: hs.DataObject,
    event: str,
    scenario: str,
) -> None:
    """Whatever arrives on stdin: exit 0, one JSON object or nothing, a block only when
    the decision on a valid in-progress loop says so, and no write unless it does."""
    if data.draw(hs.booleans(), label="CLAUDE_PROJECT_DIR set"):
        monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(fuzz_root))
    else:
        monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    setup_loop(fuzz_root, isolated, scenario)
    raw = data.draw(hook_inputs(fuzz_root), label="stdin")
    run_and_check(fuzz_root, event, raw)


@budget()
@given(
    data=hs.data(),
    agent=hs.sampled_from([adapters.get(name) for name in ("codex", "gemini", "cursor")]),
    scenario=hs.sampled_from(list(SCENARIOS)),
)
def test_stop_input_fuzz_other_agents(
    fuzz_root: Path,
    isolated: Path,
    data: hs.DataObject,
    agent: Agent,
    scenario: str,
) -> None:
    """The same promises through the other agents' field names and output shapes: a
    block (or follow-up) only when the decision says so, for that agent's session."""
    path = setup_loop(fuzz_root, isolated, scenario)
    raw = orjson.loads(path.read_bytes())
    if raw["sessionId"]:  # owned by this agent's session, or by Claude Code's
        raw["ownerAgent"] = "claude" if scenario == "another agent's" else agent.name
        path.write_bytes(orjson.dumps(raw))
    run_and_check(fuzz_root, "stop", data.draw(hook_inputs(fuzz_root), label="stdin"), agent)


def task_inputs(root: Path) -> hs.SearchStrategy[bytes]:
    """TaskCompleted inputs: the shape Claude Code sends with subjects and descriptions
    that name the loop's criteria (or almost), and everything `hook_inputs` draws."""
    subjects = hs.sampled_from(
        ["tests pass", " TESTS  pass ", "lint clean", "tests", "criterion: lint clean", ""]
    )
    text = subjects | hs.text(max_size=30) | json_values
    task = hs.fixed_dictionaries(
        {
            "session_id": hs.sampled_from([SID, SID, "session-b"]),
            "cwd": hs.sampled_from([str(root), str(root / "sub")]),
            "hook_event_name": hs.just("TaskCompleted"),
            "task_id": hs.sampled_from(["1", "2"]) | json_values,
            "task_subject": subjects | text,
        },
        optional={
            "task_description": text | subjects.map(lambda name: f"Do it.\ncriterion: {name}"),
            "teammate_name": json_values,
        },
    ).map(encode)
    return hs.one_of(task, task, hook_inputs(root))


@budget()
@given(data=hs.data(), scenario=hs.sampled_from(list(SCENARIOS)))
def test_task_completed_input_fuzz(
    fuzz_root: Path,
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
    data: hs.DataObject,
    scenario: str,
) -> None:
    """Whatever arrives on stdin, the task gate on a loop whose checks are not trusted
    here: exit 0, nothing run, nothing written, and at most the one notice."""
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(fuzz_root))
    path = setup_loop(fuzz_root, isolated, scenario)
    raw = orjson.loads(path.read_bytes())
    raw["checks"] = {"tests pass": "exit 1", "lint clean": "exit 1"}
    path.write_bytes(orjson.dumps(raw))
    before = path.read_bytes()
    with processes_started() as started:
        run = hook("task-completed", data.draw(task_inputs(fuzz_root), label="stdin"))
    assert started == []  # an untrusted check never runs
    out = hook_kept_its_promises(run, "task-completed")
    assert out is None or set(out) == {"systemMessage"}
    event("told" if out else "silent")
    assert path.read_bytes() == before
    assert not (fuzz_root / ".loop" / "history.jsonl").exists()


# -- state files ---------------------------------------------------------------------------

names = hs.sampled_from(["tests pass", "lint clean", "1", "2", "", " ", "a\nb", "ü", MARKER])
name_lists = hs.lists(names | hs.text(max_size=8), max_size=6) | hs.integers(0, 3000).map(
    lambda n: [f"c{i}" for i in range(n)]
)


def mostly(usual: hs.SearchStrategy[Any], odd: hs.SearchStrategy[Any]) -> hs.SearchStrategy[Any]:
    """`usual` nine times in ten, `odd` otherwise."""
    return hs.integers(0, 9).flatmap(lambda n: odd if n == 0 else usual)


numbers = mostly(
    hs.integers(0, 30),
    hs.integers(-(2**70), 2**70)
    | hs.sampled_from(
        [-1, 0, limits.MAX_ITERATIONS_CEILING, limits.MAX_ITERATIONS_CEILING + 1, 2**63]
    )
    | hs.floats(),
)
# Each key with a value of its type, mostly one the schema accepts.
GOOD: dict[str, hs.SearchStrategy[Any]] = {
    "version": mostly(hs.just(1), hs.sampled_from([2, 0, -1, True, "1", 1.0])),
    "spec": hs.text(max_size=30),
    "criteria": name_lists,
    "criteriaStatus": hs.dictionaries(names | hs.integers().map(str), hs.booleans(), max_size=6),
    "checks": hs.dictionaries(names, hs.text(max_size=10), max_size=3),
    "steps": name_lists,
    "completedSteps": name_lists,
    "remainingSteps": name_lists,
    "iteration": numbers,
    "maxIterations": numbers,
    "stallLimit": numbers,
    "blocksWithoutProgress": numbers,
    "completionMarker": hs.sampled_from([MARKER, MARKER, "DONE", "", "  "]),
    "continueMessage": hs.none() | hs.text(max_size=30),
    "status": hs.sampled_from(["in_progress", "in_progress", *schema.STATUSES]),
    "pauseReason": hs.sampled_from([None, "user", "stall"]),
    "sessionId": hs.sampled_from([SID, SID, None, "session-b", ""]),
    "ownerAgent": hs.sampled_from(["claude", "codex", None]),
    "startedAt": hs.sampled_from(["2026-01-01T00:00:00Z", None]),
    "lastProgress": hs.none() | hs.text(max_size=16),
    "errors": hs.lists(json_values, max_size=3) | hs.integers(0, 200).map(lambda n: [{}] * n),
    "verifyOnStop": hs.booleans(),
    "checkTimeouts": hs.dictionaries(names, numbers, max_size=2),
    "evidence": hs.dictionaries(
        names, hs.fixed_dictionaries({"result": hs.sampled_from(EVIDENCE_RESULTS)})
    ),
}


# Keys a near-valid state starts with (a mutation may still drop them), so that most
# examples reach a decision rather than an unowned stranger.
ALWAYS = ("criteria", "status", "sessionId", "startedAt")


def mutate(state: dict[str, Any], changes: list[tuple[str, Any]], drop: list[str]) -> Any:
    """A few keys given values of any type, a few removed."""
    state = {**state, **dict(changes)}
    for key in drop:
        state.pop(key, None)
    return state


# Near-valid: mostly the right types (missing keys, odd numbers, duplicate criteria, long
# lists, numeric keys in criteriaStatus), a couple of wrong ones, extra keys kept.
near_valid = hs.builds(
    mutate,
    hs.fixed_dictionaries(
        {k: v for k, v in GOOD.items() if k in ALWAYS},
        optional={k: v for k, v in GOOD.items() if k not in ALWAYS},
    ),
    hs.lists(hs.tuples(hs.sampled_from(list(GOOD)) | hs.text(max_size=6), json_values), max_size=2),
    hs.lists(hs.sampled_from(list(GOOD)), max_size=2),
)


def duplicated(state: dict[str, Any], key: str, value: Any) -> bytes:
    """The object with `key` written twice: an earlier `value`, then the real one."""
    body = encode(state)
    return b"{" + encode(key) + b": " + encode(value) + (b", " if state else b"") + body[1:]


state_bytes = hs.one_of(
    near_valid.map(encode),
    near_valid.map(encode),
    near_valid.map(encode),
    near_valid.map(encode),
    near_valid.map(lambda s: json.dumps(s, indent=2).encode()),
    hs.builds(duplicated, near_valid, hs.sampled_from(list(GOOD)), json_values),
    near_valid.map(lambda s: b"\xef\xbb\xbf" + encode(s)),  # a byte-order mark
    near_valid.map(lambda s: encode(s)[: len(encode(s)) * 2 // 3]),  # half-written
    json_values.map(encode),
    hs.binary(max_size=100),
)

COMMANDS = [
    ("status",),
    ("status", "--json"),
    ("show",),
    ("log", "-n", "5"),
    ("criteria", "list"),
    ("criteria", "set", "1", "true"),
    ("criteria", "set", "tests pass", "false"),
    ("criteria", "add", "a new one"),
    ("criteria", "remove", "1"),
    ("step", "add", "a new step"),
    ("step", "done", "1"),
    ("step", "undo", "1"),
    ("pause",),
    ("resume",),
    ("resume", "--more", "3"),
    ("cancel",),
    ("adopt",),
    ("init", "a fresh loop", "-c", "x"),
]


def write_state(root: Path, isolated: Path, data: bytes, known: bool) -> Path:
    shutil.rmtree(root / ".loop", ignore_errors=True)
    forget(isolated)
    loop = root / ".loop"
    loop.mkdir()
    path = loop / "state.json"
    path.write_bytes(data)
    raw = parsed(data)
    started = raw.get("startedAt") if isinstance(raw, dict) else None
    if known and isinstance(started, str):
        summary = {"startedAt": started, "spec": "", "status": "in_progress", "criteria": []}
        state = st.normalise({**summary, "criteriaStatus": {}})
        registry.record(paths.LoopPaths(root, loop), state)
    return path


def reading(data: bytes) -> st.State | None:
    """The state a command works on, or None when the file cannot be used."""
    try:
        return st.parse(data)
    except CorruptState:
        return None


@budget()
@given(data=state_bytes, args=hs.sampled_from(COMMANDS), known=hs.booleans())
def test_state_file_fuzz_commands(
    project: Path, isolated: Path, data: bytes, args: tuple[str, ...], known: bool
) -> None:
    """Every command works on a sensible reading of the file or refuses with one line;
    a file that cannot be used is never rewritten; unknown keys survive."""
    path = write_state(project, isolated, data, known)
    before = reading(data)
    with processes_started() as started:
        run = cli(*args)
    assert started == []
    cli_kept_its_promises(run)
    after = path.read_bytes()
    event(f"{'usable' if before is not None else 'unusable'} state, exit {run.code}")
    if before is None:
        assert after == data
        if args[0] not in ("show", "log"):
            assert run.code == 1
    elif args[0] == "init" and run.code == 0:
        kept = [p for p in path.parent.iterdir() if p.name.endswith(".json.bak")]
        assert [p.read_bytes() for p in kept] == [data]
    else:
        now = st.parse(after)  # whatever was written can be read back
        for key in set(before) - set(st.FIELD_ORDER):
            assert cast(st.Raw, now)[key] == cast(st.Raw, before)[key]
        if run.code == 1:
            assert after == data
    if args == ("status", "--json") and before is not None:
        assert orjson.loads(run.out) == orjson.loads(orjson.dumps(before))
    if args == ("show",) and run.code == 0:
        assert run.out.rstrip(b"\n") == data.decode("utf-8", "replace").encode().rstrip(b"\n")
    check_history(path.parent)


@pytest.mark.parametrize("event", HOOKS)
@budget()
@given(
    data=state_bytes,
    reply=hs.sampled_from(["working on it", f"done {MARKER}"]),
    known=hs.booleans(),
)
def test_state_file_fuzz_hooks(
    project: Path,
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
    data: bytes,
    event: str,
    reply: str,
    known: bool,
) -> None:
    """Whatever the state file holds, the hooks fail open on what cannot be used and
    decide on what can, exactly as the pure decision says."""
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    write_state(project, isolated, data, known)
    hook_input = {
        "session_id": SID,
        "cwd": str(project),
        "last_assistant_message": reply,
        "source": "resume",
        "trigger": "auto",
    }
    run_and_check(project, event, orjson.dumps(hook_input))


# -- a few of the same through real processes ----------------------------------------------


@budget(1 / 15)
@given(data=hs.data(), scenario=hs.sampled_from(list(SCENARIOS)))
def test_hook_input_fuzz_in_real_processes(
    fuzz_root: Path, isolated: Path, data: hs.DataObject, scenario: str
) -> None:
    """The in-process runs stand for real ones: the same input and state give the same
    stdout, exit code and file in a `python -m ralphstate hook stop` process."""
    raw = data.draw(hook_inputs(fuzz_root), label="stdin")
    env = {"CLAUDE_PROJECT_DIR": str(fuzz_root)}
    state_path = setup_loop(fuzz_root, isolated, scenario)
    done = run_process(["hook", "stop"], cwd=fuzz_root, input=raw, env=env, timeout=30)
    real_after = state_path.read_bytes()
    setup_loop(fuzz_root, isolated, scenario)
    os.environ["CLAUDE_PROJECT_DIR"] = str(fuzz_root)
    try:
        run = hook("stop", raw)
    finally:
        del os.environ["CLAUDE_PROJECT_DIR"]
    assert (done.returncode, done.stdout) == (run.code, run.out)
    assert without_clock(st.parse(real_after)) == without_clock(st.parse(state_path.read_bytes()))
    hook_kept_its_promises(Run(done.returncode, done.stdout, done.stderr), "stop")


# -- the transcript tail reader ------------------------------------------------------------


def assistant(text: str) -> bytes:
    content = [{"type": "text", "text": text}]
    return orjson.dumps({"type": "assistant", "message": {"role": "assistant", "content": content}})


def prompt(text: str) -> bytes:
    return orjson.dumps({"type": "user", "message": {"role": "user", "content": text}})


wide_text = hs.text(alphabet=hs.characters(min_codepoint=0x80, exclude_categories=["Cs"]))
transcript_lines = hs.one_of(
    wide_text.map(assistant),
    hs.text(max_size=20).map(assistant),
    hs.text(max_size=20).map(prompt),
    hs.binary(max_size=30).filter(lambda b: b"\n" not in b),
    hs.sampled_from([b"", b"{", b"\xf0\x9f", b"\xe2\x82", b"{}", b"[]", b"null"]),
)


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    return path


@budget(2.5)
@given(
    lines=hs.lists(transcript_lines, max_size=10),
    ending=hs.sampled_from([b"\n", b"\r\n", b""]),
    chunk=hs.integers(min_value=1, max_value=48),
)
def test_transcript_chunks_never_change_the_answer(
    tmp_path: Path, lines: list[bytes], ending: bytes, chunk: int
) -> None:
    """Lines and multi-byte characters split across chunk boundaries: reading backwards
    in chunks gives what one read of the whole file gives."""
    data = ending.join(lines) + (ending if lines and ending else b"")
    path = write(tmp_path, data)
    whole = last_assistant_text(path, chunk=len(data) + 1)
    assert last_assistant_text(path, chunk=chunk) == whole


@budget(2.5)
@given(
    words=hs.lists(wide_text, min_size=1, max_size=3),
    chunk=hs.integers(min_value=1, max_value=7),
)
def test_transcript_multibyte_text_split_across_chunks(
    tmp_path: Path, words: list[str], chunk: int
) -> None:
    """Characters of two to four bytes cut by every small chunk size come back whole."""
    data = prompt("go") + b"\n" + b"\n".join(assistant(w) for w in words) + b"\n"
    assert last_assistant_text(write(tmp_path, data), chunk=chunk) == words[-1]


@budget(2.5)
@given(
    lines=hs.lists(hs.text(max_size=15).map(assistant) | hs.just(prompt("p")), max_size=6),
    cut_line=hs.text(max_size=15).map(assistant) | hs.just(prompt("p")),
    cut=hs.floats(min_value=0, max_value=1, exclude_max=True),
    chunk=hs.integers(min_value=1, max_value=32),
)
def test_transcript_truncated_last_line_is_passed_over(
    tmp_path: Path, lines: list[bytes], cut_line: bytes, cut: float, chunk: int
) -> None:
    """A line still being written (cut anywhere before its end) changes nothing: the
    answer is the one the complete lines give."""
    complete = b"".join(line + b"\n" for line in lines)
    partial = cut_line[: int(len(cut_line) * cut)]
    expected = last_assistant_text(write(tmp_path, complete))
    assert last_assistant_text(write(tmp_path, complete + partial), chunk=chunk) == expected


# -- command-line arguments ----------------------------------------------------------------

# Text as a shell hands it over: on POSIX, bytes that are not UTF-8 arrive as lone
# surrogates (Python's surrogateescape).
arguments = hs.text(alphabet=hs.characters(codec=None), max_size=12) | hs.sampled_from(
    ["", " ", "1", "0", "99", "¹", "\u0661", "-x", "--", "\udcff", "tests pass", "true", "\n"]
)
ARGUMENT_COMMANDS = [
    lambda a, b: ("init", a, "-c", b, "--force"),
    lambda a, b: ("criteria", "add", a),
    lambda a, b: ("criteria", "set", a, b),
    lambda a, b: ("criteria", "remove", a),
    lambda a, b: ("step", "add", a),
    lambda a, b: ("step", "done", a),
    lambda a, b: ("pause", "--reason", a),
    lambda a, b: ("resume", "--more", a),
    lambda a, b: ("log", "-n", a),
]


@budget()
@example(command=ARGUMENT_COMMANDS[2], first="¹", second="true")  # a digit, not a number
@example(command=ARGUMENT_COMMANDS[0], first="x", second="\udcff")  # not UTF-8
@given(
    command=hs.sampled_from(ARGUMENT_COMMANDS),
    first=arguments,
    second=arguments,
)
def test_command_arguments_fuzz(
    project: Path, isolated: Path, command: Any, first: str, second: str
) -> None:
    """Any argument text: the command works or refuses with one line (a usage mistake
    too); the loop on disk stays readable."""
    path = make_loop(project)
    for stale in project.joinpath(".loop").glob("*.bak"):
        stale.unlink()
    cli_kept_its_promises(cli(*command(first, second)))
    st.parse(path.read_bytes())
    check_history(path.parent)
