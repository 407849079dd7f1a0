"""A loop whose gate was off for part of its life says so after its hooks are back
(loop/gateoff.py, `gateOff` in the ledger): `status`, its report and its completion
message name the time nothing enforced it, as real processes. And a report names the
person behind an approval only where their presence was shown (core/provenance.py,
`acted`): an older record of a person with no presence is "outside the agent,
unconfirmed", never "you"."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.helpers.homes import bare_home
from tests.helpers.loops import own, stop
from tests.loop.test_gateoff import NO_LONGER, ralphstate, set_key

WAS_OFF = "Its gate was off for part of its life, nothing enforcing it: since 20"


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bare_home(tmp_path, monkeypatch)
    project = tmp_path / "project"
    project.mkdir()
    return project


def test_a_gate_off_for_part_of_the_loop_is_in_its_report_and_completion(bare: Path) -> None:
    ralphstate(bare, "install")
    ralphstate(bare, "init", "Add a CSV export", "--no-criteria")
    own(bare)
    local = bare / ".claude" / "settings.local.json"
    out, _ = ralphstate(bare, "status")
    assert NO_LONGER not in out and "gate was off" not in out
    set_key(local, disableAllHooks=True)
    out, _ = ralphstate(bare, "status")
    assert NO_LONGER in out
    set_key(local, disableAllHooks=False)
    out, _ = ralphstate(bare, "status")
    assert NO_LONGER not in out
    assert WAS_OFF in out
    report, _ = ralphstate(bare, "report")
    assert WAS_OFF in report and f"({local} changed) until 20" in report
    said = stop(bare)
    assert said is not None
    message = str(said.get("systemMessage") or said.get("reason"))
    assert "complete" in message.lower() and WAS_OFF in message, said


def test_a_loop_never_switched_off_says_nothing_of_it(bare: Path) -> None:
    ralphstate(bare, "install")
    ralphstate(bare, "init", "Add a CSV export", "--no-criteria")
    own(bare)
    said = stop(bare)
    assert said is not None and "gate was off" not in str(said)


def test_a_report_says_you_only_for_an_approval_that_proved_the_person(bare: Path) -> None:
    ralphstate(bare, "init", "Add a CSV export", "--no-criteria")
    history = bare / ".loop" / "history.jsonl"
    loop = orjson.loads((bare / ".loop" / "state.json").read_bytes())["loopId"]
    lines = [
        {"event": "approved", "at": "2026-01-01T00:00:00Z", "actor": {"kind": "person"}},
        {
            "event": "trusted",
            "at": "2026-01-01T00:01:00Z",
            "actor": {"kind": "person", "present": "terminal"},
        },
    ]
    with history.open("ab") as out:
        for line in lines:
            out.write(orjson.dumps({**line, "loop": loop, "iteration": 0}) + b"\n")
    report, _ = ralphstate(bare, "report")
    assert "you approved the loop's proof" not in report
    assert "someone outside the agent (unconfirmed" in report
    assert "you (confirmed at your terminal) trusted the checks" in report
