"""`ralphstate log`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from freezegun import freeze_time

from tests.helpers.commands import (
    NOW,
    state_of,
    write_raw,
)


def test_log(project: Path, rs: Any) -> None:
    with freeze_time(NOW) as frozen:
        rs("init", "Build it", "-c", "tests pass", "-s", "write it")
        frozen.tick(60)
        rs("criteria", "set", "1", "yes", "--note", "84 passed")
        frozen.tick(60)
        rs("step", "done", "write it")
        frozen.tick(60)
        rs("pause")
    result = rs("log")
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(
        '2026-01-02T03:04:05Z  #0   init             [you] spec: "Build it" · criteria: 1'
        " · steps: 1"
    )
    assert lines[1].startswith(
        '2026-01-02T03:05:05Z  #0   criterion_set    [you] criterion: "tests pass" · value: true'
    )
    assert lines[1].endswith(' · note: "84 passed"')
    assert "='" not in result.out and "=True" not in result.out  # words, not Python's repr
    assert lines[2:] == [
        '2026-01-02T03:06:05Z  #0   step_done        [you] step: "write it"',
        '2026-01-02T03:07:05Z  #0   paused           [you] reason: "user"',
    ]
    assert rs("log", "-n", "2").out == "".join(result.out.splitlines(keepends=True)[-2:])
    as_json = rs("log", "-n", "2", "--json")
    loop_id = state_of(project)["loopId"]
    assert [json.loads(line) for line in as_json.out.splitlines()] == [
        {
            "at": "2026-01-02T03:06:05Z",
            "event": "step_done",
            "iteration": 0,
            "loop": loop_id,
            "step": "write it",
            "actor": {"kind": "person"},
        },
        {
            "at": "2026-01-02T03:07:05Z",
            "event": "paused",
            "iteration": 0,
            "loop": loop_id,
            "reason": "user",
            "actor": {"kind": "person"},
        },
    ]


def test_log_skips_lines_that_do_not_parse(loop: Path, rs: Any) -> None:
    with (loop / ".loop" / "history.jsonl").open("ab") as handle:
        handle.write(b"{torn\n[1]\n")
    out = rs("log", "--json").out
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["init"]


def test_log_without_history(project: Path, rs: Any) -> None:
    write_raw(project, {"spec": "x"})
    result = rs("log")
    assert (result.code, result.out, result.err) == (0, "", "")
