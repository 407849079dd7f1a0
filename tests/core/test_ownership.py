"""The ownership rules (core/ownership.py) as a table, and `take`'s history event."""

from __future__ import annotations

import datetime as dt
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


# -- an owner that is gone, and a session that ends -------------------------------------

NOW = dt.datetime(2026, 1, 1, 0, 0, tzinfo=dt.timezone.utc)


def touched(minutes_ago: float, timeout: float | None = None) -> st.State:
    """A loop owned by s1, last written `minutes_ago` before NOW."""
    state = loop("s1", "claude")
    state["updatedAt"] = (NOW - dt.timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    state["ownerTimeout"] = timeout
    return state


@pytest.mark.parametrize(
    ("minutes_ago", "timeout", "modified_ago", "is_gone"),
    [
        (29, None, None, False),  # the default: 30 minutes
        (30, None, None, True),
        (3 * 60, None, 10, False),  # the file was written by hand since
        (5, 4 * 60, None, True),  # `ownerTimeout` in seconds
        (3, 4 * 60, None, False),
        (10_000, 0, None, False),  # 0: never by time
        (-5, None, None, False),  # a time still to come says nothing
    ],
)
def test_an_owner_is_gone_when_the_loop_was_left_untouched_for_its_timeout(
    minutes_ago: float, timeout: float | None, modified_ago: float | None, is_gone: bool
) -> None:
    state = touched(minutes_ago, timeout)
    modified = None if modified_ago is None else NOW - dt.timedelta(minutes=modified_ago)
    assert ownership.gone(state, modified, NOW) is is_gone


def test_a_loop_without_a_time_is_never_taken_over() -> None:
    state = touched(60)
    state["updatedAt"] = None
    assert ownership.idle_for(state, None, NOW) is None
    assert ownership.gone(state, None, NOW) is False


@pytest.mark.parametrize(
    ("session", "agent", "known", "gone", "verdict"),
    [
        ("s2", "claude", True, True, "takeover"),
        ("s2", "codex", True, True, "takeover"),  # a session of another agent too
        ("s2", "claude", False, True, "foreign"),  # a clone's owned file: never
        ("s2", "claude", True, False, "foreign"),  # a live owner
        (None, "claude", True, True, "foreign"),  # a session that does not say its id
        ("s1", "claude", True, True, "owner"),
    ],
)
def test_a_starting_session_takes_over_only_a_known_loop_whose_owner_is_gone(
    session: str | None, agent: str, known: bool, gone: bool, verdict: str
) -> None:
    state = loop("s1", "claude")
    found = ownership.judge(
        state, session, agent, known=lambda: known, gone=lambda: gone, cleared_here=lambda: False
    )
    assert found == verdict
    # The Stop hook asks neither: it never takes a loop over.
    assert ownership.judge(state, session, agent, known=lambda: known) in ("owner", "foreign")


def test_release_leaves_the_loop_unowned_and_says_whose_it_was() -> None:
    state = loop("s1", "codex")
    event = ownership.release(state, "prompt_input_exit")
    assert (state["sessionId"], state["ownerAgent"]) == (None, None)
    assert event == {
        "event": "released",
        "session": "s1",
        "agent": "codex",
        "reason": "prompt_input_exit",
    }
    assert ownership.judge(state, "s2", "claude", known=lambda: True) == "adopt"


def test_take_gives_a_hand_written_loop_a_start_time() -> None:
    state = st.normalise({"spec": "x", "criteria": ["a"]})
    assert state["startedAt"] is None
    ownership.take(state, "s1", "claude", "stop")
    assert state["startedAt"] is not None and state["loopId"] is None
