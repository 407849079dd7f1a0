"""Reading state files the way agents write them by hand, and writing them back stably.

Each table runs twice: against the pure functions in `ralphstate.core.state`, and through
the real command line on a real `.loop/state.json`.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import orjson
import pytest
from freezegun import freeze_time
from hypothesis import given, settings
from hypothesis import strategies as hs

from ralphstate.core import checkrun, queries, schema, views
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState
from ralphstate.run import logline
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import REPO, run_process

EXAMPLE = REPO / ".loop.example"
SEEDS = REPO.parent / "shared" / "seeds"


def write_state(project: Path, raw: object) -> Path:
    path = project / ".loop" / "state.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(raw, indent=2))
    return path


def subset(actual: Mapping[str, object], expected: dict[str, Any]) -> dict[str, object]:
    return {k: actual.get(k, "<missing>") for k in expected}


# -- tolerant reading ---------------------------------------------------------------

DEFAULTS = {
    "version": 1,
    "spec": "",
    "criteria": [],
    "criteriaStatus": {},
    "checks": {},
    "steps": [],
    "completedSteps": [],
    "remainingSteps": [],
    "iteration": 0,
    "maxIterations": 20,
    "stallLimit": 5,
    "completionMarker": "<loop-complete>",
    "continueMessage": None,
    "status": "in_progress",
    "pauseReason": None,
    "sessionId": None,
    "startedAt": None,
    "lastCheckpoint": None,
    "errors": [],
}

TOLERANT = [
    pytest.param({}, DEFAULTS, id="empty-object-gets-every-default"),
    pytest.param(
        {"spec": "Fix the flaky test"}, {**DEFAULTS, "spec": "Fix the flaky test"}, id="spec-only"
    ),
    pytest.param(
        {"spec": "x", "criteria": None, "steps": None, "maxIterations": None, "checks": None},
        {"criteria": [], "steps": [], "maxIterations": 20, "checks": {}},
        id="nulls-read-as-defaults",
    ),
    pytest.param(
        {"criteria": ["a", "b"], "criteriaStatus": {"a": True}},
        {"criteria": ["a", "b"], "criteriaStatus": {"a": True}},
        id="criterion-missing-from-status-is-kept-missing",
    ),
    pytest.param(
        {"steps": ["one", "two", "three"], "completedSteps": ["one"]},
        {
            "steps": ["one", "two", "three"],
            "completedSteps": ["one"],
            "remainingSteps": ["two", "three"],
        },
        id="remaining-derived-when-absent",
    ),
    pytest.param(
        {
            "steps": ["one", "two", "three"],
            "completedSteps": ["two", "one"],
            "remainingSteps": ["one", "two", "three"],
        },
        {
            "steps": ["one", "two", "three"],
            "completedSteps": ["one", "two"],
            "remainingSteps": ["three"],
        },
        id="remaining-rederived-when-inconsistent",
    ),
    pytest.param(
        {"steps": ["one"], "completedSteps": ["zero"], "remainingSteps": ["two"]},
        {
            "steps": ["one", "zero", "two"],
            "completedSteps": ["zero"],
            "remainingSteps": ["one", "two"],
        },
        id="step-named-only-in-a-progress-list-joins-the-plan",
    ),
    pytest.param(
        {"remainingSteps": ["a", "b"]},
        {"steps": ["a", "b"], "completedSteps": [], "remainingSteps": ["a", "b"]},
        id="only-remaining-given",
    ),
    pytest.param(
        {
            "criteria": ["a", "b", "a"],
            "steps": ["s", "t", "s"],
            "completedSteps": ["s", "s"],
        },
        {
            "criteria": ["a", "b"],
            "steps": ["s", "t"],
            "completedSteps": ["s"],
            "remainingSteps": ["t"],
        },
        id="duplicates-read-as-one",
    ),
    pytest.param(
        {"iteration": 7.0, "maxIterations": 30.0, "completionMarker": ""},
        {"iteration": 7, "maxIterations": 30, "completionMarker": "<loop-complete>"},
        id="whole-floats-and-empty-marker",
    ),
    pytest.param(
        {"status": "paused", "pauseReason": "user", "sessionId": "abc"},
        {"status": "paused", "pauseReason": "user", "sessionId": "abc"},
        id="lifecycle-fields-kept",
    ),
    pytest.param(
        {"transcriptUsage": {"session": "s", "file": "f", "offset": 12.0}},
        {
            "transcriptUsage": {
                "session": "s",
                "file": "f",
                "offset": 12,
                "lastMessageId": None,
                "resync": False,
                "midLine": False,
                "countedAt": None,
            }
        },
        id="transcript-usage-completed",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), TOLERANT)
def test_tolerant_reading(raw: dict[str, Any], expected: dict[str, Any]) -> None:
    parsed = st.parse(json.dumps(raw).encode())
    assert subset(parsed, expected) == expected


@pytest.mark.parametrize(("raw", "expected"), TOLERANT)
def test_tolerant_reading_through_the_cli(
    project: Path, rs: Any, raw: dict[str, Any], expected: dict[str, Any]
) -> None:
    path = write_state(project, raw)
    before = path.read_bytes()
    result = rs("status", "--json")
    assert (result.code, result.err) == (0, "")
    assert subset(json.loads(result.out), expected) == expected
    assert path.read_bytes() == before  # reading never rewrites


def test_criterion_missing_from_status_counts_as_unmet(project: Path, rs: Any) -> None:
    raw = {"spec": "x", "criteria": ["a", "b", "c"], "criteriaStatus": {"a": True, "c": False}}
    assert queries.unmet(st.normalise(raw)) == ["b", "c"]
    write_state(project, raw)
    assert rs("criteria", "list").out == "1. [x] a\n2. [ ] b\n3. [ ] c\n"


def test_criteria_status_for_unlisted_criterion_does_not_count(project: Path) -> None:
    state = st.normalise({"criteria": ["a"], "criteriaStatus": {"a": False, "ghost": True}})
    assert queries.unmet(state) == ["a"]
    assert state["criteriaStatus"] == {"a": False, "ghost": True}  # kept, not invented


def test_unknown_keys_survive_a_rewrite(project: Path, rs: Any) -> None:
    path = write_state(
        project,
        {
            "ticket": "BILL-482",
            "criteria": ["tests pass"],
            "spec": "Export invoices",
            "notes": {"reviewer": "ana", "links": [1, 2, None]},
            "criteriaStatus": {"tests pass": False},
        },
    )
    result = rs("criteria", "set", "tests pass", "true")
    assert (result.code, result.out, result.err) == (0, "tests pass: met\n", "")
    written = orjson.loads(path.read_bytes())
    assert written["ticket"] == "BILL-482"
    assert written["notes"] == {"reviewer": "ana", "links": [1, 2, None]}
    assert written["criteriaStatus"] == {"tests pass": True}
    keys = list(written)
    assert keys[-2:] == ["ticket", "notes"]  # unknown keys last, in the order found
    assert keys[:-2] == [k for k in st.FIELD_ORDER if k in written]


def _seed_example() -> str:
    seed = next(SEEDS.glob("002_*.txt"))
    text = seed.read_text()
    section = text.split("### State File Schema", 1)[1]
    match = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert match, "the seed's state example moved"
    return match.group(1)


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the seeds are not beside this checkout")
def test_the_seeds_format_loads(project: Path, rs: Any) -> None:
    text = _seed_example()
    raw = json.loads(text)
    assert "version" not in raw
    state = st.parse(text.encode())
    assert state["version"] == 1
    assert state["spec"] == "original user request"
    assert queries.unmet(state) == ["no lint errors"]
    assert (state["completedSteps"], state["remainingSteps"]) == (["step1"], ["step2"])
    assert state["iteration"] == 2

    path = project / ".loop" / "state.json"
    path.parent.mkdir()
    path.write_text(text)
    result = rs("criteria", "set", "no lint errors", "yes")
    assert (result.code, result.err) == (0, "")
    written = orjson.loads(path.read_bytes())
    assert written["version"] == 1
    assert written["criteriaStatus"] == {"test passes": True, "no lint errors": True}
    assert written["iteration"] == 2


def test_a_future_version_is_refused(project: Path, rs: Any) -> None:
    with pytest.raises(CorruptState) as caught:
        st.parse(b'{"version": 2, "spec": "x"}')
    assert str(caught.value) == (
        "state.json has schema version 2, newer than this ralphstate understands (1);"
        " upgrade ralphstate to use it"
    )
    path = write_state(project, {"version": 2, "spec": "x", "criteria": ["a"]})
    before = path.read_bytes()
    for args in (("status",), ("criteria", "set", "a", "true")):
        result = rs(*args)
        assert (result.code, result.out) == (1, "")
        assert result.err == (
            "ralphstate: .loop/state.json has schema version 2, newer than this ralphstate"
            " understands (1); upgrade ralphstate to use it; it was left untouched.\n"
        )
    assert path.read_bytes() == before


# -- wrong types ----------------------------------------------------------------------

TRANSCRIPT_USAGE = (
    "'transcriptUsage' must be null or an object of session, file (strings), offset"
    " (a whole number, 0 or more), lastMessageId (a string or null), resync and"
    " midLine (true or false), countedAt (a string or null)"
)
WRONG = [
    ({"criteria": "tests pass"}, "'criteria' must be a list of strings"),
    ({"criteria": ["a", 2]}, "'criteria' must be a list of strings"),
    ({"criteriaStatus": {"a": "yes"}}, "criteriaStatus['a'] must be true or false, not 'yes'"),
    ({"criteriaStatus": "all"}, "'criteriaStatus' must be an object of criterion: true/false"),
    ({"checks": {"a": 1}}, "'checks' must be an object of criterion: command"),
    ({"steps": "one, two"}, "'steps' must be a list of strings"),
    ({"completedSteps": [1]}, "'completedSteps' must be a list of strings"),
    ({"maxIterations": 0}, "'maxIterations' must be between 1 and 100000, not 0"),
    ({"maxIterations": 10**9}, "'maxIterations' must be between 1 and 100000, not 1000000000"),
    ({"iteration": -1}, "'iteration' must be between 0 and 100000, not -1"),
    ({"iteration": True}, "'iteration' must be a whole number"),
    ({"maxIterations": 2.5}, "'maxIterations' must be a whole number"),
    ({"stallLimit": "3"}, "'stallLimit' must be a whole number"),
    (
        {"status": "done"},
        "'status' must be one of in_progress, paused, complete, cancelled, not 'done'",
    ),
    ({"spec": 5}, "'spec' must be a string"),
    ({"completionMarker": 5}, "'completionMarker' must be a non-empty string"),
    ({"sessionId": 7}, "'sessionId' must be a string or null"),
    ({"errors": "none"}, "'errors' must be a list"),
    ({"version": "1"}, "'version' must be a positive whole number, not '1'"),
    (
        {"transcriptUsage": "here"},
        TRANSCRIPT_USAGE,
    ),
    (
        {"transcriptUsage": {"session": "s", "file": "f", "offset": -1}},
        TRANSCRIPT_USAGE,
    ),
    (
        {"transcriptUsage": {"session": "s", "file": "f", "offset": True}},
        TRANSCRIPT_USAGE,
    ),
    (
        {"transcriptUsage": {"session": "s", "offset": 0}},
        TRANSCRIPT_USAGE,
    ),
    (
        {"transcriptUsage": {"session": "s", "file": "f", "offset": 0, "lastMessageId": 3}},
        TRANSCRIPT_USAGE,
    ),
    (
        {"transcriptUsage": {"session": "s", "file": "f", "offset": 0, "resync": "no"}},
        TRANSCRIPT_USAGE,
    ),
    (
        {"transcriptUsage": {"session": "s", "file": "f", "offset": 0, "countedAt": 5}},
        TRANSCRIPT_USAGE,
    ),
]


@pytest.mark.parametrize(("raw", "message"), WRONG, ids=[str(r) for r, _ in WRONG])
def test_wrong_types_are_refused_naming_the_key(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(CorruptState) as caught:
        st.normalise({"spec": "x", "criteria": ["a"], **raw})
    assert str(caught.value) == f"state.json: {message}"


@pytest.mark.parametrize(("raw", "message"), WRONG, ids=[str(r) for r, _ in WRONG])
def test_wrong_types_through_the_cli(
    project: Path, rs: Any, raw: dict[str, Any], message: str
) -> None:
    path = write_state(project, {"spec": "x", "criteria": ["a"], **raw})
    before = path.read_bytes()
    result = rs("criteria", "set", "a", "true")
    assert (result.code, result.out) == (1, "")
    assert result.err == f"ralphstate: .loop/state.json: {message}; it was left untouched.\n"
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[1, 2]", "state.json must hold a JSON object, not list"),
        (b'"just text"', "state.json must hold a JSON object, not str"),
        (b"null", "state.json must hold a JSON object, not NoneType"),
    ],
)
def test_not_an_object_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(CorruptState) as caught:
        st.parse(data)
    assert str(caught.value) == message


# -- writing --------------------------------------------------------------------------


def test_dumps_writes_schema_order_with_unknown_keys_last() -> None:
    state = st.normalise(
        {"zeta": 1, "status": "paused", "alpha": [2], "spec": "s", "criteria": ["c"]}
    )
    data = st.dumps(state)
    assert data.endswith(b"}\n")
    assert data.startswith(b'{\n  "version": 1,\n  "spec": "s",\n')
    keys = list(orjson.loads(data))
    assert keys == [*st.FIELD_ORDER, "zeta", "alpha"]


STABLE = [
    {},
    {"spec": "x", "criteria": ["a", "b"], "criteriaStatus": {"b": True}},
    {"steps": ["a", "b"], "remainingSteps": ["b", "c"], "extra": {"nested": [1, "two"]}},
    {"spec": 'ünïcødé ✓ "quoted"\n newline', "criteria": ["naïve"], "errors": [{"at": "x"}]},
]


@pytest.mark.parametrize("raw", STABLE)
def test_dumps_is_stable(raw: dict[str, Any]) -> None:
    once = st.dumps(st.normalise(raw))
    assert st.dumps(st.parse(once)) == once
    assert st.parse(once) == st.normalise(raw)


_text = hs.text(max_size=12)
_names = hs.lists(_text.filter(str.strip), max_size=5)  # blank names are refused


@settings(max_examples=150, deadline=None)
@given(
    criteria=_names,
    met=hs.lists(hs.booleans(), max_size=5),
    steps=_names,
    done=_names,
    remaining=hs.one_of(hs.none(), _names),
    iteration=hs.integers(0, 100_000),
    status=hs.sampled_from(schema.STATUSES),
    extra=hs.dictionaries(
        _text.filter(lambda k: k not in st.FIELD_ORDER),
        hs.one_of(
            hs.none(), hs.integers(-5, 5), _text, hs.lists(hs.integers(-(2**53), 2**53), max_size=3)
        ),
        max_size=3,
    ),
)
def test_normalise_and_dumps_round_trip(
    criteria: list[str],
    met: list[bool],
    steps: list[str],
    done: list[str],
    remaining: list[str] | None,
    iteration: int,
    status: str,
    extra: dict[str, Any],
) -> None:
    raw: dict[str, Any] = {
        **extra,
        "criteria": criteria,
        "criteriaStatus": dict(zip(criteria, met, strict=False)),
        "steps": steps,
        "completedSteps": done,
        "iteration": iteration,
        "status": status,
    }
    if remaining is not None:
        raw["remainingSteps"] = remaining
    state = st.normalise(raw)
    # The three step lists always agree.
    assert state["remainingSteps"] == [
        s for s in state["steps"] if s not in state["completedSteps"]
    ]
    assert set(state["completedSteps"]) <= set(state["steps"])
    assert set(steps) | set(done) | set(remaining or []) == set(state["steps"])
    # Unknown keys survive, and writing is a fixed point.
    assert {k: cast(st.Raw, state)[k] for k in extra} == extra
    once = st.dumps(state)
    assert st.parse(once) == state
    assert st.dumps(st.parse(once)) == once


# -- the example loop directory ------------------------------------------------------


def assert_lines_start(out: str, expected: list[str]) -> None:
    """Each line starts as expected (other features may annotate a line's end)."""
    lines = out.splitlines()
    assert len(lines) == len(expected), out
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start), (line, start)
    assert out.endswith("\n")


def example_store() -> Store:
    return Store(LoopPaths(REPO, EXAMPLE))


def test_the_example_loads_with_the_real_store() -> None:
    state = example_store().load()
    assert state["status"] == "in_progress"
    assert state["iteration"] == 6
    assert len(state["criteria"]) == 4 and len(queries.unmet(state)) == 2
    assert len(state["steps"]) == 5
    assert len(state["completedSteps"]) == 3
    assert state["remainingSteps"] == state["steps"][3:]
    assert state["sessionId"]
    assert set(state["checks"]) <= set(state["criteria"]) and state["checks"]
    assert "ticket" not in st.FIELD_ORDER and cast(st.Raw, state)["ticket"].startswith("https://")
    # Written as ralphstate writes: schema order, unknown keys last, every value as read.
    stored = orjson.loads((EXAMPLE / "state.json").read_bytes())
    assert list(stored) == [*(k for k in st.FIELD_ORDER if k in stored), "ticket"]
    assert {k: cast(st.Raw, state)[k] for k in stored} == stored
    # The stall fingerprint matches the state the last block saw.
    assert state["lastProgress"] == st.progress(state)


def test_the_example_carries_every_key_ralphstate_writes() -> None:
    """A key added to the schema must be added to the example too (with its README
    line), so the example shows every key a state.json written today holds."""
    written = list(orjson.loads(st.dumps(st.normalise({}))))
    stored = orjson.loads((EXAMPLE / "state.json").read_bytes())
    assert [k for k in written if k not in stored] == []
    assert list(stored) == [*written, "ticket"]


def test_the_example_is_shown_by_the_real_status_command_and_left_as_it_was() -> None:
    """What its README says to run: `RALPHSTATE_DIR=.loop.example ralphstate status`."""
    before = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    done = run_process(["status"], cwd=REPO, env={"RALPHSTATE_DIR": ".loop.example"})
    assert (done.returncode, done.stderr) == (0, b""), done
    out = done.stdout.decode()
    assert out.startswith(f"loop {REPO}: in progress · iteration 6/20 · owner 5f0c2a9e…")
    assert "spent: 1,284,650 tokens" in out and "the loop's budget: 5,000,000 tokens" in out
    assert "criteria 2/4 (2 claimed):" in out and "steps 3/5:" in out
    assert {p.name: p.read_bytes() for p in EXAMPLE.iterdir()} == before


def test_the_example_history_is_consistent_with_its_state() -> None:
    store = example_store()
    state = store.load()
    lines = (EXAMPLE / "history.jsonl").read_bytes().splitlines()
    history = store.history()
    assert len(history) == len(lines)  # every line parses
    assert history[0]["event"] == "init"
    stamps = [cast(str, e["at"]) for e in history]
    assert stamps == sorted(stamps)
    assert stamps[0] == state["startedAt"] and stamps[-1] == state["updatedAt"]
    iterations = [cast(int, e["iteration"]) for e in history]
    assert iterations == sorted(iterations) and iterations[-1] == state["iteration"]
    blocks = [e for e in history if e["event"] == "unmet"]
    assert [b["iteration"] for b in blocks] == list(range(1, state["iteration"] + 1))
    assert blocks[-1]["unmet"] == queries.unmet(state)
    met = {e["criterion"]: e["value"] for e in history if e["event"] == "criterion_set"}
    assert met == {c: True for c in state["criteria"] if queries.met(state, c)}
    done = [e["step"] for e in history if e["event"] == "step_done"]
    assert done == state["completedSteps"]
    checkpoints = [e for e in history if e["event"] == "checkpoint"]
    assert [c["at"] for c in checkpoints] == [state["lastCheckpoint"]]


def test_the_example_readme_explains_every_field() -> None:
    readme = (EXAMPLE / "README.md").read_text()
    state = orjson.loads((EXAMPLE / "state.json").read_bytes())
    missing = [k for k in state if f"`{k}`" not in readme]
    assert missing == []


@freeze_time("2026-03-14T10:45:37Z")
def test_the_example_status_view(tmp_path: Path, rs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "invoicekit"
    shutil.copytree(EXAMPLE, root / ".loop")
    monkeypatch.chdir(root)
    state = example_store().load()
    c, s = state["criteria"], state["steps"]
    result = rs("status")
    assert (result.code, result.err) == (0, "")
    assert_lines_start(
        result.out,
        [
            f"loop {root}: in progress · iteration 6/20 · owner 5f0c2a9e… · updated 4m ago",
            f"spec: {state['spec']}",
            "spent: 1,284,650 tokens (the loop's budget: 5,000,000 tokens)",
            "criteria 2/4 (2 claimed):",
            f"  [x] {c[0]}  (claimed)",
            f"  [x] {c[1]}  (claimed)",
            f"  [ ] {c[2]}",
            f"  [ ] {c[3]}",
            (
                "checks 2: NOT trusted on this machine (changed outside ralphstate, or they came"
                " with the repository); they will not run until you review them and run"
                " `ralphstate trust` · verify on stop: on (the default)"
            ),
            f"  {c[0]}: pytest -q",
            f"  {c[1]}: ruff check .",
            (
                "checks at a stop: 120s (the default) ·"
                f" {checkrun.default_jobs()} at once (the default)"
            ),
            "guarded: no files (not a git repository)",
            "clean-room verification: not a git repository (the checks run in the project)",
            "steps 3/5:",
            f"  [x] {s[0]}",
            f"  [x] {s[1]}",
            f"  [x] {s[2]}",
            f"  [>] {s[3]}  (next)",
            f"  [ ] {s[4]}",
            views.UNKNOWN_HERE,  # copied here, as a clone brings it
        ],
    )
    guarded = "guarded: no files (not a git repository)"  # tests/, outside git
    facts = views.StatusFacts(str(root), trusted=False, guarded=guarded, in_git=False)
    view = views.status(state, facts)
    assert result.out == f"{view}\n{views.UNKNOWN_HERE}\n"

    as_json = rs("status", "--json")
    assert as_json.code == 0
    shown = json.loads(as_json.out)
    assert list(shown) == [
        *st.FIELD_ORDER,
        "ticket",
        "knownHere",
        "proof",
        "staleEvidence",
        "standing",
    ]
    assert shown.pop("proof")["approvedBy"] is None  # no record here: it came with a clone
    assert shown.pop("standing") == {c: queries.standing(state, c) for c in state["criteria"]}
    assert shown == {**state, "knownHere": False, "staleEvidence": []}
    log = rs("log", "-n", "1")
    unmet = logline._worded(queries.unmet(state))
    assert log.out == f"2026-03-14T10:41:37Z  #6   unmet            unmet: {unmet}\n"


def test_errors_keep_only_the_most_recent() -> None:
    from ralphstate.core import limits

    state = st.new("x", ["a"], [], now="2026-01-01T00:00:00Z")
    for i in range(limits.MAX_ERRORS + 3):
        st.add_error(state, f"boom {i}" + "!" * 1000, at="2026-01-01T00:00:00Z")
    assert len(state["errors"]) == limits.MAX_ERRORS
    assert state["errors"][0]["message"].startswith("boom 3!")
    assert len(state["errors"][-1]["message"]) == limits.MAX_PROBLEM_CHARS
    assert st.parse(st.dumps(state))["errors"] == state["errors"]
