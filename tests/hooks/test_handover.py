"""A loop handed from one session to the next, through real `ralphstate hook ...`
processes: SessionEnd releases the owner's loop, the next SessionStart takes it, an owner
that left the loop untouched for its `ownerTimeout` is taken over by a session that
starts, and two live sessions never both drive the loop."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import state as st
from tests.helpers import run_process
from tests.helpers.loops import SID, load, make_loop

OTHER = "session-b"


def hook(
    event: str, root: Path, data: dict[str, Any], env: dict[str, str] | None = None
) -> dict[str, Any] | None:
    raw = orjson.dumps({"cwd": str(root), **data})
    done = run_process(["hook", event], cwd=root, input=raw, env=env, timeout=30)
    assert done.returncode == 0
    assert done.stderr == b"", done.stderr
    return orjson.loads(done.stdout) if done.stdout.strip() else None


def start(root: Path, session: str, source: str = "startup", **env: str) -> dict[str, Any] | None:
    return hook("session-start", root, {"session_id": session, "source": source}, env)


def stop(root: Path, session: str) -> dict[str, Any] | None:
    return hook("stop", root, {"session_id": session, "last_assistant_message": "Working."})


def transcript(session: str) -> str:
    """The session's transcript where Claude Code writes it (`$CLAUDE_CONFIG_DIR`,
    each test's own: tests/conftest.py): what a SessionEnd of the client names."""
    path = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-a-project" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"type": "user"}\n')
    return str(path)


def end(root: Path, session: str, reason: str = "other", **env: str) -> None:
    data = {"session_id": session, "reason": reason, "transcript_path": transcript(session)}
    assert hook("session-end", root, data, env) is None


def events(root: Path) -> list[dict[str, Any]]:
    path = root / ".loop" / "history.jsonl"
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def age(path: Path, seconds: float) -> None:
    """The state file last written `seconds` ago, by ralphstate and on disk alike."""
    raw = orjson.loads(path.read_bytes())
    then = time.time() - seconds
    raw["updatedAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(then))
    path.write_bytes(orjson.dumps(raw))
    os.utime(path, (then, then))


def context(out: dict[str, Any] | None) -> str:
    assert out is not None
    return str(out["hookSpecificOutput"]["additionalContext"])


# -- SessionEnd --------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["other", "prompt_input_exit", "logout", "resume"])
def test_the_owner_ending_hands_the_loop_to_the_next_session(root: Path, reason: str) -> None:
    make_loop(root)
    end(root, SID, reason)
    state = load(root)
    assert (state["sessionId"], state["ownerAgent"]) == (None, None)
    released = events(root)[-1]
    assert {k: released[k] for k in ("event", "session", "agent", "reason")} == {
        "event": "released",
        "session": SID,
        "agent": "claude",
        "reason": reason,
    }
    out = start(root, OTHER)
    assert "Spec: Build the parser" in context(out)
    assert load(root)["sessionId"] == OTHER


@pytest.mark.parametrize(
    ("changes", "session"),
    [
        ({}, OTHER),  # not the owner
        ({"status": "complete"}, SID),  # over: nothing to hand over
        ({"ownerAgent": "codex"}, SID),  # the same id from another agent
    ],
    ids=["another session", "complete", "another agent"],
)
def test_a_session_that_does_not_own_an_unfinished_loop_changes_nothing_as_it_ends(
    root: Path, changes: dict[str, Any], session: str
) -> None:
    path = make_loop(root, **changes)
    before = path.read_bytes()
    end(root, session)
    assert path.read_bytes() == before
    assert not (root / ".loop" / "state.lock").exists()


def test_an_iteration_of_a_run_keeps_the_loop_as_it_ends(root: Path) -> None:
    path = make_loop(root)
    before = path.read_bytes()
    end(root, SID, RALPHSTATE_RUNNER="1")
    assert path.read_bytes() == before


def test_clear_keeps_the_loop_for_the_session_after_it_in_the_same_claude_process(
    root: Path,
) -> None:
    make_loop(root, claude_pid="4242")
    end(root, SID, "clear", CLAUDE_PID="4242")
    assert load(root)["sessionId"] == SID  # nobody else can take it in between
    assert "Spec:" in context(start(root, "after-clear", "clear", CLAUDE_PID="4242"))
    assert load(root)["sessionId"] == "after-clear"
    assert [e["event"] for e in events(root)] == ["adopted"]


def test_clear_releases_the_loop_where_no_process_will_re_own_it(root: Path) -> None:
    make_loop(root, claude_pid="4242")
    end(root, SID, "clear", CLAUDE_PID="5353")
    assert load(root)["sessionId"] is None


# -- an owner that crashed (no SessionEnd) ----------------------------------------------


def test_a_session_that_starts_takes_over_a_loop_left_untouched_for_its_timeout(
    root: Path,
) -> None:
    path = make_loop(root, ownerTimeout=600)
    age(path, 599 - 5)
    out = start(root, OTHER)
    assert out is not None and "belongs to another session" in out["systemMessage"]
    assert load(root)["sessionId"] == SID

    age(path, 600 + 5)
    out = start(root, OTHER)
    assert "Spec: Build the parser" in context(out)
    assert out is not None
    said = re.sub(r"for 10m\d+s;", "for 10mNs;", out["systemMessage"])
    assert said.endswith(
        f"It was taken over from session {SID[:8]}…, which left it untouched for 10mNs;"
        " `ralphstate adopt` in that session takes it back."
    )
    assert load(root)["sessionId"] == OTHER
    taken = events(root)[-1]
    assert (taken["event"], taken["from"], taken["by"]) == ("adopted", SID, "startup")
    assert 600 <= taken["idle"] < 660


def test_an_owner_timeout_of_0_never_hands_the_loop_over_by_time(root: Path) -> None:
    path = make_loop(root, ownerTimeout=0)
    age(path, 10 * 24 * 3600)
    out = start(root, OTHER)
    assert out is not None and "belongs to another session" in out["systemMessage"]
    assert "takes it" not in out["systemMessage"]
    assert load(root)["sessionId"] == SID


def test_a_stop_never_takes_a_loop_over(root: Path) -> None:
    """Only a session that starts takes a gone owner's loop: a live session working on
    something else is not suddenly held by it."""
    path = make_loop(root, ownerTimeout=60)
    age(path, 3600)
    before = path.read_bytes()
    assert stop(root, OTHER) is None
    assert path.read_bytes() == before


def test_a_loop_that_came_with_a_clone_is_never_taken_over(root: Path) -> None:
    path = make_loop(root, known=False, ownerTimeout=60)
    age(path, 3600)
    start(root, OTHER)
    assert load(root)["sessionId"] == SID


# -- two live sessions -------------------------------------------------------------------


def test_two_live_sessions_never_both_drive_the_loop(root: Path) -> None:
    """Session A and session B in one project, their hooks interleaved as the clients
    would run them: at every stop, exactly one of them is held."""
    make_loop(root, session=None)
    a, b = SID, OTHER
    assert "Spec:" in context(start(root, a))
    out = start(root, b)
    assert out is not None and "belongs to another session" in out["systemMessage"]

    held = stop(root, a)
    assert held is not None and held["decision"] == "block"
    assert stop(root, b) is None  # B is let go: A drives the loop
    assert load(root)["sessionId"] == a
    held = stop(root, a)
    assert held is not None and held["decision"] == "block"

    end(root, a)  # A quits: the loop is handed back
    assert load(root)["sessionId"] is None
    held = stop(root, b)  # B's next stop takes it: now B alone is held
    assert held is not None and held["decision"] == "block"
    assert load(root)["sessionId"] == b

    out = start(root, a, "resume")  # A comes back: B's now
    assert out is not None and "belongs to another session" in out["systemMessage"]
    assert stop(root, a) is None
    end(root, a)  # A ends again, not the owner: nothing changes
    assert load(root)["sessionId"] == b
    held = stop(root, b)
    assert held is not None and held["decision"] == "block"

    owners = [e.get("session") for e in events(root) if e["event"] == "adopted"]
    assert owners == [a, b]
    blocks = [e["actor"]["session"] for e in events(root) if e["event"] == "unmet"]
    assert blocks == [a, a, b, b]
    assert st.parse((root / ".loop" / "state.json").read_bytes())["iteration"] == 4


def test_status_shows_when_the_owner_is_handed_over(root: Path) -> None:
    path = make_loop(root)
    age(path, 60)

    def head() -> str:
        done = run_process(["status"], cwd=root)
        assert done.returncode == 0, done.stderr
        return done.stdout.decode().splitlines()[0]

    assert head().endswith("ago")  # the default, with an owner still at work: nothing said
    assert run_process(["config", "owner-timeout", "2h"], cwd=root).returncode == 0
    assert head().endswith(" · handed over after 2h idle")
    assert run_process(["config", "owner-timeout", "off"], cwd=root).returncode == 0
    assert head().endswith(" · never handed over by time")
    assert run_process(["config", "owner-timeout", "default"], cwd=root).returncode == 0
    age(path, 31 * 60)
    assert head().endswith(" · idle past 30m: the next session to start here takes it")


def _dead_pid() -> str:
    """The id of a process that ran and is gone."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return str(child.pid)


@pytest.mark.skipif(os.name == "nt", reason="a process id is looked up on POSIX only")
def test_a_crashed_owners_loop_is_taken_at_once_when_its_process_is_gone(root: Path) -> None:
    """The owner's Claude Code process, recorded on this machine, is gone: the next
    session takes the loop now, not after `ownerTimeout`, and says why."""
    make_loop(root, session=None, ownerTimeout=1800)
    dead = _dead_pid()
    assert "Spec:" in context(start(root, SID, CLAUDE_PID=dead))
    assert load(root)["sessionId"] == SID
    out = start(root, OTHER, CLAUDE_PID=str(os.getpid()))
    assert "Spec: Build the parser" in context(out)
    assert out is not None and out["systemMessage"].endswith(
        f"It was taken over from session {SID[:8]}…, whose agent process is gone from this"
        " machine (it crashed or was killed); `ralphstate adopt` in that session takes it"
        " back."
    ), out
    assert load(root)["sessionId"] == OTHER
    taken = events(root)[-1]
    assert (taken["event"], taken["from"], taken["ownerProcessGone"]) == ("adopted", SID, True)


@pytest.mark.skipif(os.name == "nt", reason="a process id is looked up on POSIX only")
def test_a_live_owners_process_keeps_its_loop(root: Path) -> None:
    make_loop(root, session=None, ownerTimeout=1800)
    assert "Spec:" in context(start(root, SID, CLAUDE_PID=str(os.getpid())))  # alive
    out = start(root, OTHER, CLAUDE_PID=_dead_pid())
    assert out is not None and "belongs to another session" in out["systemMessage"]
    assert load(root)["sessionId"] == SID


@pytest.mark.skipif(os.name == "nt", reason="a process id is looked up on POSIX only")
def test_an_owner_timeout_of_0_keeps_a_crashed_owners_loop(root: Path) -> None:
    make_loop(root, session=None, ownerTimeout=0)
    assert "Spec:" in context(start(root, SID, CLAUDE_PID=_dead_pid()))
    out = start(root, OTHER, CLAUDE_PID=str(os.getpid()))
    assert out is not None and "belongs to another session" in out["systemMessage"]
    assert load(root)["sessionId"] == SID


# -- the permission rules, said at a session's start -------------------------------------

ALLOW = (
    "No permission rule allows the agent's ralphstate commands here, so each asks you first"
    " and `claude -p` refuses them: run /ralphstate:allow once (or `ralphstate install"
    " --allow-only`)."
)


def test_missing_allow_rules_are_said_when_a_session_starts(root: Path) -> None:
    """The hooks are installed without the rules (`/ralphstate:allow` forgotten): the
    person reads it at the session's start, not at the agent's first prompt; once the
    rules are there, or where nothing of ralphstate runs in Claude Code, nothing is said."""
    make_loop(root)
    out = start(root, SID)
    assert out is not None and ALLOW not in out["systemMessage"]  # no hooks installed here
    out = start(root, SID, CLAUDE_PLUGIN_ROOT=str(root))  # the plugin's hooks, no rules
    assert out is not None and out["systemMessage"].endswith(" " + ALLOW), out
    assert run_process(["install", "--no-allow"], cwd=root).returncode == 0
    out = start(root, SID)
    assert out is not None and out["systemMessage"].endswith(" " + ALLOW), out
    assert ALLOW not in str(start(root, SID, "compact"))  # said once, at the start
    assert run_process(["install", "--allow-only"], cwd=root).returncode == 0
    out = start(root, SID)
    assert out is not None and ALLOW not in out["systemMessage"]
