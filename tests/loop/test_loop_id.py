"""Every loop gets an id at `init` (`loopId`); its history, notes and evidence are its
own: what an earlier loop in the same directory recorded never shows in a new one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core import state as st


def state_of(project: Path) -> st.State:
    return st.parse((project / ".loop" / "state.json").read_bytes())


def history_of(project: Path) -> list[dict[str, Any]]:
    path = project / ".loop" / "history.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_init_gives_every_loop_its_own_random_id(rs: Any, project: Path) -> None:
    assert rs("init", "first", "-c", "a").code == 0
    first = state_of(project)["loopId"]
    assert isinstance(first, str) and re.fullmatch(r"[0-9a-f]{16}", first)
    assert rs("init", "second", "-c", "a", "--force").code == 0
    second = state_of(project)["loopId"]
    assert isinstance(second, str) and re.fullmatch(r"[0-9a-f]{16}", second)
    assert second != first


def test_every_history_line_names_its_loop(rs: Any, project: Path) -> None:
    rs("init", "first", "-c", "a", "-s", "x")
    rs("criteria", "set", "a", "true", "--note", "seen")
    rs("step", "done", "x")
    loop_id = state_of(project)["loopId"]
    assert [e.get("loop") for e in history_of(project)] == [loop_id] * 3


def test_a_template_never_gives_its_id_to_the_new_loop(rs: Any, project: Path) -> None:
    template = project / "template.json"
    template.write_text(json.dumps({"spec": "t", "criteria": ["a"], "loopId": "0" * 16}))
    assert rs("init", "--from", str(template)).code == 0
    assert state_of(project)["loopId"] not in (None, "0" * 16)


def test_a_note_from_a_cancelled_loop_is_not_evidence_in_the_next(rs: Any, project: Path) -> None:
    rs("init", "old work", "-c", "tests pass")
    rs("criteria", "set", "tests pass", "true", "--note", "OLD-LOOP-NOTE")
    rs("cancel")
    rs("init", "new work", "-c", "tests pass")
    rs("criteria", "set", "tests pass", "true")
    shown = rs("run", "--agent", "agent", "--dry-run")
    assert shown.code == 0, shown
    assert "- [x] tests pass" in shown.out
    assert "OLD-LOOP-NOTE" not in shown.out
    rs("criteria", "set", "tests pass", "false")
    rs("criteria", "set", "tests pass", "true", "--note", "NEW-LOOP-NOTE")
    assert "NEW-LOOP-NOTE" in rs("run", "--agent", "agent", "--dry-run").out


def test_log_shows_the_current_loop_and_all_of_it_on_request(rs: Any, project: Path) -> None:
    rs("init", "old work", "-c", "a")
    rs("criteria", "set", "a", "true", "--note", "OLD-LOOP-NOTE")
    rs("init", "new work", "-c", "a", "--force")
    shown = rs("log")
    assert shown.code == 0 and shown.out.count("\n") == 1, shown
    assert "init" in shown.out and "OLD-LOOP-NOTE" not in shown.out
    assert "OLD-LOOP-NOTE" in rs("log", "--all").out
    assert [e["event"] for e in map(json.loads, rs("log", "--json").out.splitlines())] == ["init"]


def test_a_loop_from_before_ids_still_works_and_reads_its_history_since_its_init(
    rs: Any, project: Path
) -> None:
    """A file written before `loopId` has none: it stays without one, and its history is
    the lines since the newest `init` that name no loop."""
    loop = project / ".loop"
    loop.mkdir()
    (loop / "state.json").write_text(
        json.dumps({"spec": "older", "criteria": ["a"], "criteriaStatus": {"a": True}})
    )
    (loop / "history.jsonl").write_text(
        '{"at": "2026-01-01T00:00:00Z", "event": "init", "iteration": 0}\n'
        '{"at": "2026-01-01T00:00:01Z", "event": "criterion_set", "iteration": 0,'
        ' "criterion": "a", "value": true, "note": "BEFORE-THE-LAST-INIT"}\n'
        '{"at": "2026-01-01T00:00:02Z", "event": "init", "iteration": 0}\n'
        '{"at": "2026-01-01T00:00:03Z", "event": "criterion_set", "iteration": 0,'
        ' "criterion": "a", "value": true, "note": "SINCE-THE-LAST-INIT"}\n'
    )
    assert rs("status").code == 0
    assert rs("step", "add", "x").code == 0
    assert state_of(project)["loopId"] is None
    assert "loop" not in history_of(project)[-1]
    prompt = rs("run", "--agent", "agent", "--dry-run").out
    assert "SINCE-THE-LAST-INIT" in prompt and "BEFORE-THE-LAST-INIT" not in prompt
    events = [json.loads(line)["event"] for line in rs("log", "--json").out.splitlines()]
    assert events == ["init", "criterion_set", "step_added"]


def test_report_and_watch_tell_only_the_current_loop(rs: Any, project: Path) -> None:
    rs("init", "old work", "-c", "OLD-CRITERION")
    rs("criteria", "set", "OLD-CRITERION", "true")
    rs("cancel")
    rs("init", "new work", "-c", "tests pass")
    rs("criteria", "set", "tests pass", "true")
    report = rs("report")
    assert report.code == 0, report
    assert "tests pass" in report.out and "OLD-CRITERION" not in report.out
    watched = rs("watch", "--once")
    assert "tests pass" in watched.out and "OLD-CRITERION" not in watched.out
