"""Every bound of ralphstate/core/limits.py that guards what is read or emitted, tested at
its boundary: the value at the limit passes whole, one more is refused or cut.

Bounds tested elsewhere: MAX_HOOK_INPUT_BYTES through real processes in test_hooks.py;
MAX_TRANSCRIPT_TAIL_BYTES and TRANSCRIPT_CHUNK_BYTES in test_transcript.py;
FORGED_TAIL_BYTES and FORGED_SIBLINGS in tests/hooks/test_forged.py;
LOCK_TIMEOUT in test_store.py; HOOK_LOCK_TIMEOUT in test_faults.py; MAX_LOG_FILE_BYTES
in test_security.py. SECURITY.md lists them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from ralphstate.core import limits, restore
from ralphstate.core import state as st
from ralphstate.core.decide import StopFacts, decide_stop
from tests.helpers.hardening import SID, cli, hook, hook_input_for, make_loop, told


def loop(**changes: Any) -> st.State:
    state = st.new("Build it", ["tests pass"], ["one"], session_id=SID, now="2026-01-01T00:00:00Z")
    cast(st.Raw, state).update(changes)
    return st.normalise(state)


# -- what is read ----------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one byte more"])
def test_max_hook_input_bytes(project: Path, extra: int) -> None:
    make_loop(project)
    raw = orjson.dumps(hook_input_for(project))
    raw = raw[:-1] + b" " * (limits.MAX_HOOK_INPUT_BYTES + extra - len(raw)) + b"}"
    assert len(raw) == limits.MAX_HOOK_INPUT_BYTES + extra
    run = hook("stop", raw)
    if extra:
        assert (run.out, run.text) == (
            b"",
            (
                f"ralphstate hook stop: input is larger than {limits.MAX_HOOK_INPUT_BYTES} bytes;"
                " allowing.\n"
            ),
        )
    else:
        assert orjson.loads(run.out)["decision"] == "block"


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one byte more"])
def test_max_state_bytes(project: Path, extra: int) -> None:
    path = make_loop(project)
    data = path.read_bytes().rstrip()
    data += b" " * (limits.MAX_STATE_BYTES + extra - len(data))
    path.write_bytes(data)
    status = cli("status", "--json")
    stop = hook("stop", hook_input_for(project))
    if extra:
        problem = (
            f".loop/state.json is {limits.MAX_STATE_BYTES + 1} bytes, more than the"
            f" {limits.MAX_STATE_BYTES} ralphstate reads; it was left as it is"
        )
        assert (status.code, status.text) == (1, f"ralphstate: {problem}.\n")
        assert (stop.out, stop.text) == (
            told(problem),
            f"ralphstate hook stop: {problem}; allowing.\n",
        )
        assert path.read_bytes() == data
    else:
        assert status.code == 0 and orjson.loads(status.out)["spec"] == "Build the parser"
        assert orjson.loads(stop.out)["decision"] == "block"


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one more"])
def test_max_log_lines(project: Path, extra: int) -> None:
    make_loop(project)
    count = limits.MAX_LOG_LINES + 1
    lines = (
        orjson.dumps({"at": "t", "event": "note", "iteration": 0, "n": i}) for i in range(count)
    )
    (project / ".loop" / "history.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    run = cli("log", "--json", "-n", str(limits.MAX_LOG_LINES + extra))
    shown = [orjson.loads(line)["n"] for line in run.out.splitlines()]
    assert shown == list(range(1, count))  # the newest MAX_LOG_LINES, never more


# -- what is emitted ------------------------------------------------------------------------------


def reason_with(padding: int) -> str:
    state = loop(
        criteria=[f"criterion {i:02d} " + "c" * 270 for i in range(10)],
        continueMessage="m" * padding,
    )
    decision = decide_stop(state, StopFacts(SID, "working", known_here=True))
    assert decision.block and decision.reason is not None
    return decision.reason


def test_max_reason_chars() -> None:
    base = len(reason_with(1))
    fits = 1 + limits.MAX_REASON_CHARS - base  # the padding that lands on the limit exactly
    assert 0 < fits < limits.MAX_SPEC_CHARS
    whole = reason_with(fits)
    assert len(whole) == limits.MAX_REASON_CHARS and whole.endswith(
        "only when every criterion is verified."
    )
    cut = reason_with(fits + 1)
    assert len(cut) == limits.MAX_REASON_CHARS and cut.endswith("…")
    assert cut[1:-1] == whole[:-2]  # one more character in, one cut off the end


def context_with(padding: int) -> str:
    state = loop(
        spec="s" * padding,
        criteria=[f"criterion {i:02d} " + "c" * 280 for i in range(15)],
        steps=[f"step {i} " + "t" * 280 for i in range(3)],
    )
    return restore.context(state, "resume")


def test_max_context_chars() -> None:
    base = len(context_with(1))
    fits = 1 + limits.MAX_CONTEXT_CHARS - base
    assert 0 < fits < limits.MAX_SPEC_CHARS
    whole = context_with(fits)
    assert len(whole) == limits.MAX_CONTEXT_CHARS
    assert "\nIteration 0 of 20; stall limit 5; status in_progress\n</loop-state>\n" in whole
    cut = context_with(fits + 1)
    assert len(cut) == limits.MAX_CONTEXT_CHARS
    # the data is cut, and says so, before the closing marker
    assert f"t…\n{restore.DATA_CUT}\n</loop-state>\n" in cut
    assert "\nIteration 0 of 20" not in cut
    assert cut.endswith(whole[whole.index("\n</loop-state>") :])  # the protocol is kept


@pytest.mark.parametrize(
    ("limit", "field", "shown"),
    [
        (limits.MAX_ITEM_CHARS, "criteria", "- [ ] {}\n"),
        (limits.MAX_SPEC_CHARS, "spec", "Spec: {}\n"),
    ],
    ids=["MAX_ITEM_CHARS", "MAX_SPEC_CHARS"],
)
def test_longest_item_quoted(limit: int, field: str, shown: str) -> None:
    exact, longer = "x" * limit, "y" * (limit + 1)
    cut = "y" * (limit - 1) + "…" + (f" {restore.SPEC_CUT}" if field == "spec" else "")
    for text, expected in ((exact, exact), (longer, cut)):
        value: Any = [text] if field == "criteria" else text
        assert shown.format(expected) in restore.context(loop(**{field: value}), "resume")


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one more"])
def test_max_list_items(extra: int) -> None:
    names = [f"criterion {i}" for i in range(limits.MAX_LIST_ITEMS + extra)]
    context = restore.context(loop(criteria=names, criteriaStatus={}), "resume")
    for name in names[: limits.MAX_LIST_ITEMS]:
        assert f"- [ ] {name}\n" in context
    if extra:
        assert f"- [ ] {names[-1]}\n" not in context
        assert "\n- … 1 more (1 unmet; `ralphstate status --all` lists them all)\n" in context
    else:
        assert "more" not in context


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one more"])
def test_max_errors(project: Path, extra: int) -> None:
    errors = [{"n": i} for i in range(limits.MAX_ERRORS + extra)]
    path = make_loop(project, errors=errors)
    assert cli("step", "add", "two").code == 0
    assert st.parse(path.read_bytes())["errors"] == errors[-limits.MAX_ERRORS :]


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one more"])
def test_max_problem_chars(project: Path, extra: int) -> None:
    """What is wrong with a file quotes its values, but stays a short line."""
    path = project / ".loop" / "state.json"
    path.parent.mkdir()
    before, after = "criteriaStatus['", "'] must be true or false, not 1"
    name = "k" * (limits.MAX_PROBLEM_CHARS + extra - len(before) - len(after))
    path.write_bytes(orjson.dumps({"criteria": [name], "criteriaStatus": {name: 1}}))
    run = cli("status")
    problem = (before + name + after)[: limits.MAX_PROBLEM_CHARS - extra] + "…" * extra
    assert run.text == f"ralphstate: .loop/state.json: {problem}; it was left untouched.\n"
    assert len(problem) == limits.MAX_PROBLEM_CHARS
