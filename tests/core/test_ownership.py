"""The ownership rules (core/ownership.py) as a table, and `take`'s history event."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ralphstate.core import ownership
from ralphstate.core import state as st


def loop(session: str | None = None, agent: str | None = None) -> st.State:
    state = st.new(
        "Build it", ["a"], [], session_id=session, agent=agent, now="2026-01-01T00:00:00Z"
    )
    return state


def asked(answer: bool, calls: list[str], name: str) -> Callable[[], bool]:
    def fact() -> bool:
        calls.append(name)
        return answer

    return fact


@pytest.mark.parametrize(
    ("owner", "owner_agent", "session", "agent", "known", "cleared", "verdict"),
    [
        # nobody owns it: a loop made here may be adopted, one from a clone may not
        (None, None, "s1", "claude", True, None, "adopt"),
        (None, None, None, "claude", True, None, "adopt"),
        (None, None, "s1", "claude", False, None, "unknown"),
        # the asking session of the owning agent
        ("s1", "claude", "s1", "claude", False, None, "owner"),
        ("s1", "codex", "s1", "codex", False, None, "owner"),
        # another session, or the same id from another agent
        ("s1", "claude", "s2", "claude", True, None, "foreign"),
        ("s1", "claude", "s1", "codex", True, None, "foreign"),
        ("s1", "claude", None, "claude", True, None, "foreign"),
        # /clear in the owning Claude Code process: re-owned, but only when all hold
        ("s1", "claude", "s2", "claude", True, True, "reown"),
        ("s1", "claude", "s2", "claude", True, False, "foreign"),
        ("s1", "claude", "s2", "claude", False, True, "foreign"),
        ("s1", "codex", "s2", "claude", True, True, "foreign"),
    ],
)
def test_judge(
    owner: str | None,
    owner_agent: str | None,
    session: str | None,
    agent: str,
    known: bool,
    cleared: bool | None,
    verdict: str,
) -> None:
    calls: list[str] = []
    state = loop(owner, owner_agent)
    found = ownership.judge(
        state,
        session,
        agent,
        known=asked(known, calls, "known"),
        cleared_here=None if cleared is None else asked(cleared, calls, "cleared"),
    )
    assert found == verdict


def test_the_owner_is_never_asked_about_the_registry() -> None:
    """A loop owned by the asking session costs no read of the per-user registry."""
    calls: list[str] = []
    state = loop("s1", "claude")
    verdict = ownership.judge(
        state,
        "s1",
        "claude",
        known=asked(True, calls, "known"),
        cleared_here=asked(True, calls, "cleared"),
    )
    assert (verdict, calls) == ("owner", [])


def test_a_file_without_owner_agent_belongs_to_claude_code() -> None:
    state = loop("s1", "claude")
    state["ownerAgent"] = None
    assert ownership.owner_agent(state) == "claude"
    assert ownership.judge(state, "s1", "claude", known=lambda: False) == "owner"
    assert ownership.judge(state, "s1", "codex", known=lambda: True) == "foreign"


@pytest.mark.parametrize(
    ("session", "agent", "owner", "owner_agent"),
    [("s2", "codex", "s2", "codex"), (None, "claude", None, None)],
)
def test_take_sets_the_owner_and_says_so(
    session: str | None, agent: str, owner: str | None, owner_agent: str | None
) -> None:
    state = loop("s1", "claude")
    event = ownership.take(state, session, agent, "cli")
    assert (state["sessionId"], state["ownerAgent"]) == (owner, owner_agent)
    assert event == {
        "event": "adopted",
        "session": session,
        "agent": agent,
        "from": "s1",
        "by": "cli",
    }
