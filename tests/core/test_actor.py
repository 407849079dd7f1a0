"""Who made a change: the person, an agent session, a run (core/actor.py)."""

from __future__ import annotations

import pytest

from ralphstate.agents import table
from ralphstate.core import actor


def test_every_agent_variable_begins_as_actor_expects() -> None:
    # a variable outside the prefixes would make an agent's command pass for the person's
    for name in (*table.variables(), "CLAUDECODE", "CLAUDE_CODE_CHILD_SESSION"):
        assert actor.maybe_agent({name: "1"}), name
    assert not actor.maybe_agent({"HOME": "/home/me", "PATH": "/bin"})


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, {"kind": "person"}),
        ({"CLAUDECODE": "1"}, {"kind": "agent", "agent": "claude"}),
        (
            {"CLAUDE_CODE_SESSION_ID": "s1"},
            {"kind": "agent", "agent": "claude", "session": "s1"},
        ),
        ({"CODEX_THREAD_ID": "t9"}, {"kind": "agent", "agent": "codex", "session": "t9"}),
        (
            {"RALPHSTATE_RUNNER": "1", "CLAUDE_CODE_SESSION_ID": "s2"},
            {"kind": "run", "agent": "claude", "session": "s2"},
        ),
        ({"RALPHSTATE_RUNNER": "1"}, {"kind": "run", "agent": "unknown"}),
    ],
)
def test_the_actor_comes_from_the_environment(
    environ: dict[str, str], expected: dict[str, str]
) -> None:
    assert actor.from_env(environ, table.session_from_env(environ)) == expected


def test_describe_names_each_actor() -> None:
    assert actor.describe({"kind": "person"}) == "you"
    assert actor.describe(actor.session("claude", "1a2b3c4d5e6f")) == "claude session 1a2b3c4d"
    run = actor.session("codex", None, runner=True)
    assert actor.describe(run) == "the agent of ralphstate run (codex)"
    assert actor.describe(None) == "someone unknown"


def test_a_finder_is_asked_once_and_reset_by_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def found() -> actor.Actor:
        calls.append(1)
        return {"kind": "agent", "agent": "gemini"}

    actor.find_with(found)
    assert actor.current() == actor.current() == {"kind": "agent", "agent": "gemini"}
    assert calls == [1]
    actor.find_with(lambda: dict(actor.PERSON))
    assert actor.current() == {"kind": "person"}
