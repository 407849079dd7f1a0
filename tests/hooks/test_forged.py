"""Hook inputs the agent forged (hooks/forged.py), through real `ralphstate hook`
processes: a SessionEnd run from a shell to hand the loop back (no transcript, one
outside Claude Code's own directory, one that does not exist, another session's) does
not release it; the person is told on stderr, in the log and in the history; and the
made-up session that starts next does not get the loop, so the owner's Stop hook still
holds it. The client's own SessionEnd (tests/hooks/test_handover.py) still releases."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_process
from tests.helpers.loops import SID, load, make_loop
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
