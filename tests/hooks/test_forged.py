"""Hook inputs the agent forged (hooks/forged.py), through real `ralphstate hook`
processes: a SessionEnd run from a shell to hand the loop back (no transcript, one
outside Claude Code's own directory, one that does not exist, another session's) does
not release it; the person is told on stderr, in the log and in the history; and the
made-up session that starts next does not get the loop, so the owner's Stop hook still
holds it. The client's own SessionEnd (tests/hooks/test_handover.py) still releases.

A Stop run by hand while the session's Bash tool runs it (its transcript ends in a call
still waiting for its result) counts for nothing: no iteration, no completion, no pause;
a SessionStart made up while the loop's owner is in a tool call does not take it; one
that cannot be told from a real start beside a session in a tool call takes it, and
says so, in `status` too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.agents import table
from ralphstate.core import limits
from ralphstate.hooks import forged
from tests.helpers import run_process
from tests.helpers.loops import DONE, SID, load, make_loop
from tests.hooks.test_handover import events, transcript

GHOST = "session-that-does-not-exist"


def hook(event: str, root: Path, data: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    raw = orjson.dumps({"cwd": str(root), **data})
    done = run_process(["hook", event], cwd=root, input=raw, timeout=30)
    assert done.returncode == 0
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    return out, done.stderr.decode()


def forged_inputs(tmp_path: Path) -> dict[str, dict[str, Any]]:
    elsewhere = tmp_path / "made-up" / f"{SID}.jsonl"
    elsewhere.parent.mkdir()
    elsewhere.write_text("{}\n")
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    return {
        "no transcript": {},
        "outside the client's directory": {"transcript_path": str(elsewhere)},
        "a transcript that does not exist": {
            "transcript_path": str(projects / "-p" / f"{SID}.jsonl")
        },
        "another session's": {"transcript_path": transcript("session-other")},
    }


@pytest.mark.parametrize(
    "how",
    [
        "no transcript",
        "outside the client's directory",
        "a transcript that does not exist",
        "another session's",
    ],
)
def test_a_forged_session_end_does_not_hand_the_loop_away(
    root: Path, tmp_path: Path, how: str
) -> None:
    make_loop(root)
    data = {"session_id": SID, "reason": "other", **forged_inputs(tmp_path)[how]}

    out, err = hook("session-end", root, data)

    assert out is None
    assert "was not handed back" in err and "may not come from Claude Code" in err, err
    assert load(root)["sessionId"] == SID
    refused = events(root)[-1]
    assert (refused["event"], refused["session"]) == ("release_refused", SID)
    # The made-up session that starts next finds the loop owned: it takes nothing.
    hook("session-start", root, {"session_id": GHOST, "source": "startup"})
    assert load(root)["sessionId"] == SID
    said, _ = hook("stop", root, {"session_id": SID, "last_assistant_message": "Done."})
    assert said is not None and said.get("decision") == "block", said


def test_the_client_s_own_session_end_still_releases(root: Path) -> None:
    make_loop(root)
    data = {"session_id": SID, "reason": "other", "transcript_path": transcript(SID)}
    out, err = hook("session-end", root, data)
    assert (out, err) == (None, "")
    assert load(root)["sessionId"] is None


# -- a Stop run by hand, a SessionStart made up ------------------------------------------

PROMPT = {"type": "user", "message": {"role": "user", "content": "Fix the parser"}}
SAID = {"type": "assistant", "message": {"content": [{"type": "text", "text": "Done."}]}}
RUNNING = {
    "type": "assistant",
    "message": {
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Bash",
                "input": {"command": "sh by-hand.sh"},
            }
        ]
    },
}
RESULT = {
    "type": "user",
    "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
}


def where(session: str, folder: str = "-a-project") -> Path:
    """Where Claude Code writes the session's transcript (not written here)."""
    return Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / folder / f"{session}.jsonl"


def session_transcript(session: str, *entries: dict[str, Any], folder: str = "-a-project") -> str:
    """The session's transcript where Claude Code writes it, holding `entries`."""
    path = where(session, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
    return str(path)


@pytest.mark.parametrize("named", [True, False])
def test_a_stop_run_by_hand_during_a_tool_call_counts_for_nothing(root: Path, named: bool) -> None:
    """Naming the session's transcript, or none: then it is looked up where the client
    writes the project's, by the session's id."""
    make_loop(root, maxIterations=2)
    folder = "-a-project" if named else re.sub(r"[^A-Za-z0-9]", "-", str(root))
    path = session_transcript(SID, PROMPT, SAID, RUNNING, folder=folder)
    data = {"session_id": SID, "last_assistant_message": DONE}
    if named:
        data["transcript_path"] = path
    before = load(root)

    for _ in range(3):  # as many as would pause the loop at its cap
        out, err = hook("stop", root, data)
        # Held once, counting nothing: were it the client's own Stop read before the
        # call's result was written, the agent stays in its loop.
        assert out is not None and out.get("decision") == "block", out
        assert "Nothing was counted" in out["reason"], out
        assert "run from a shell" in out["systemMessage"], out
        assert "Bash: sh by-hand.sh" in err, err
    out, err = hook("stop", root, {**data, "stop_hook_active": True})
    assert out is not None and "decision" not in out, out  # never a trap
    assert "run from a shell" in out["systemMessage"], out

    after = load(root)
    assert (after["status"], after["iteration"]) == (before["status"], before["iteration"])
    assert [e["event"] for e in events(root)][-4:] == ["stop_refused"] * 4
    # The client's own Stop, once the call has its result and the turn ended, decides.
    session_transcript(SID, PROMPT, SAID, RUNNING, RESULT, SAID, folder=folder)
    out, err = hook("stop", root, data)
    assert out is not None and out.get("decision") == "block", out
    assert load(root)["iteration"] == before["iteration"] + 1


@pytest.mark.parametrize("named", [True, False])
def test_a_session_start_made_up_while_the_owner_is_in_a_tool_call_takes_nothing(
    root: Path, named: bool
) -> None:
    make_loop(root, claude_pid="4242")
    folder = "-a-project" if named else re.sub(r"[^A-Za-z0-9]", "-", str(root))
    session_transcript(SID, PROMPT, SAID, RUNNING, folder=folder)
    data: dict[str, Any] = {"session_id": GHOST, "source": "clear"}
    if named:  # where the client would write it: a new session's is not there yet
        data["transcript_path"] = str(where(GHOST))

    out = run_process(
        ["hook", "session-start"], cwd=root, input=orjson.dumps({"cwd": str(root), **data}),
        env={"CLAUDE_PID": "4242"}, timeout=30,
    )  # fmt: skip

    assert out.returncode == 0
    said = orjson.loads(out.stdout)["systemMessage"]
    assert "did not take the loop" in said and "in the middle of a tool call" in said, said
    assert load(root)["sessionId"] == SID
    assert events(root)[-1]["event"] == "adopt_refused"


def test_a_start_that_cannot_be_told_apart_takes_the_loop_and_says_so(root: Path) -> None:
    make_loop(root, session=None)
    session_transcript("session-other", PROMPT, RUNNING)
    data = {"session_id": GHOST, "source": "startup", "transcript_path": str(where(GHOST))}

    out, err = hook("session-start", root, data)

    assert out is not None
    assert "could not tell from a shell's" in str(out), out
    assert "could not tell from a shell's" in err
    assert load(root)["sessionId"] == GHOST
    taken = events(root)[-1]
    assert taken["event"] == "adopted" and "session-other" in taken["unsure"], taken
    shown = run_process(["status"], cwd=root).stdout.decode()
    assert "by an input ralphstate could not tell from a shell's" in shown, shown


def test_a_resumed_session_must_name_its_own_transcript(root: Path) -> None:
    make_loop(root, session=None)
    data = {"session_id": GHOST, "source": "resume", "transcript_path": transcript("session-b")}
    out, _ = hook("session-start", root, data)
    assert out is not None and "did not take the loop" in out["systemMessage"], out
    assert load(root)["sessionId"] is None
    data["transcript_path"] = transcript(GHOST)
    hook("session-start", root, data)
    assert load(root)["sessionId"] == GHOST


# -- the bounds of what is read --------------------------------------------------------


def test_forged_tail_bytes(tmp_path: Path) -> None:
    """A call waiting whose line ends within the last FORGED_TAIL_BYTES is seen whole;
    one byte further back, its line is cut, and nothing is said of it."""
    call = orjson.dumps(RUNNING) + b"\n"
    path = tmp_path / "t.jsonl"
    for extra, seen in ((0, True), (1, False)):
        pad = {"type": "attachment", "pad": ""}
        padding = limits.FORGED_TAIL_BYTES - 1 - len(call) + extra - len(orjson.dumps(pad)) - 1
        pad["pad"] = "x" * padding
        tail = call + orjson.dumps(pad) + b"\n"
        assert len(tail) == limits.FORGED_TAIL_BYTES - 1 + extra
        path.write_bytes(orjson.dumps(PROMPT) + b"\n" + tail)
        assert (forged.waiting_call(str(path)) is not None) is seen, extra


def test_forged_siblings(root: Path) -> None:
    """The newest FORGED_SIBLINGS transcripts of the project are looked at for a session
    in a tool call; an older one is not."""
    agent = table.get("claude")
    data: dict[str, object] = {"session_id": GHOST, "transcript_path": str(where(GHOST))}
    busy = Path(session_transcript("session-busy", PROMPT, RUNNING))
    for n in range(limits.FORGED_SIBLINGS):
        if n == limits.FORGED_SIBLINGS - 1:
            judged = forged.shell_start(agent, data, GHOST, "startup", None)
            assert judged is not None and judged[0] is False, judged
        os.utime(busy, (1_000_000, 1_000_000))
        session_transcript(f"session-{n}", PROMPT, SAID)
    assert forged.shell_start(agent, data, GHOST, "startup", None) is None


@pytest.mark.skipif(os.name == "nt", reason="a process id is looked up on POSIX only")
def test_a_crashed_owner_s_call_left_waiting_does_not_keep_its_loop(root: Path) -> None:
    """Killed in the middle of a Bash command, the owner's transcript ends in that call
    for ever: the next session takes the loop at once all the same, and nothing says
    it could not be told from a shell's."""
    make_loop(root, session=None, ownerTimeout=1800)
    first = {"session_id": SID, "transcript_path": str(where(SID)), "cwd": str(root)}
    dead = {"CLAUDE_PID": dead_pid()}
    run_process(["hook", "session-start"], cwd=root, input=orjson.dumps(first), env=dead)
    assert load(root)["sessionId"] == SID
    session_transcript(SID, PROMPT, SAID, RUNNING)
    data = {"session_id": GHOST, "transcript_path": str(where(GHOST)), "cwd": str(root)}
    alive = {"CLAUDE_PID": str(os.getpid())}
    done = run_process(["hook", "session-start"], cwd=root, input=orjson.dumps(data), env=alive)
    assert done.returncode == 0
    assert load(root)["sessionId"] == GHOST
    assert b"could not tell" not in done.stdout + done.stderr
    assert events(root)[-1]["ownerProcessGone"] is True


def dead_pid() -> str:
    """The id of a process that ran and is gone."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return str(child.pid)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX's")
def test_a_fifo_among_the_project_s_transcripts_does_not_hang_a_start(root: Path) -> None:
    """The agent can leave a FIFO named like a transcript where the client keeps the
    project's: a real start, whose own transcript is not written yet, looks at the
    newest of them and must not wait on it for a writer; a session in a tool call
    beside it is still seen."""
    make_loop(root, session=None)
    session_transcript("session-other", PROMPT, RUNNING)
    os.mkfifo(where("session-fifo"))
    os.utime(where("session-other"), (1_000_000, 1_000_000))  # the FIFO is newer
    data = {"session_id": GHOST, "source": "startup", "transcript_path": str(where(GHOST))}

    out, _ = hook("session-start", root, data)  # run_process's timeout: 30 s

    assert out is not None and "could not tell from a shell's" in str(out), out
    assert load(root)["sessionId"] == GHOST


@pytest.mark.parametrize("named", ["a\x00b.jsonl", "~no-such-user-here/x.jsonl"])
def test_a_transcript_path_that_names_no_path_is_one_sentence(root: Path, named: str) -> None:
    """An input whose transcript is no path a file can have (a NUL byte, a `~user` with
    no home) is doubted in one sentence: the Stop decides as for one naming none, and a
    SessionStart does not take the loop; neither fails open on an unexpected error."""
    make_loop(root, maxIterations=5)
    out, err = hook("stop", root, {"session_id": SID, "transcript_path": named})
    assert "unexpected error" not in err, err
    assert out is not None and out.get("decision") == "block", out

    make_loop(root, session=None)
    data = {"session_id": GHOST, "source": "startup", "transcript_path": named}
    out, err = hook("session-start", root, data)
    assert "unexpected error" not in err, err
    assert "no path a file can have" in err, err
    assert load(root)["sessionId"] is None
