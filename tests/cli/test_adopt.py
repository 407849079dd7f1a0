"""`ralphstate adopt`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ralphstate.storage.peruser import registry
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.commands import (
    history_of,
    registered,
    state_of,
    write_raw,
)


def test_adopt_outside_a_session(project: Path, rs: Any) -> None:
    # A loop that arrived with a clone: this machine has never seen it.
    write_raw(
        project,
        {
            "spec": "cloned",
            "criteria": ["a"],
            "sessionId": "theirs",
            "startedAt": "2026-01-01T00:00:00Z",
        },
    )
    assert registered(project) is None
    result = rs("adopt")
    assert (result.code, result.out, result.err) == (
        0,
        "adopted; the next session here owns it\n",
        "",
    )
    assert state_of(project)["sessionId"] is None
    paths = LoopPaths(project, project / ".loop")
    assert registry.knows(paths, state_of(project))
    last = history_of(project)[-1]
    assert {k: last[k] for k in ("event", "session", "from", "by")} == {
        "event": "adopted",
        "session": None,
        "from": "theirs",
        "by": "cli",
    }


def test_adopt_inside_a_session(loop: Path, rs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "sess-2")
    monkeypatch.setenv("CLAUDE_PID", "777")
    assert rs("adopt").out == "adopted by session sess-2\n"
    assert state_of(loop)["sessionId"] == "sess-2"
    entry = registered(loop)
    assert entry is not None and (entry["sessionId"], entry["claudePid"]) == ("sess-2", "777")
    assert history_of(loop)[-1]["from"] is None
