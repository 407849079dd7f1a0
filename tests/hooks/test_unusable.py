"""A loop the hooks cannot use: they let the agent go and tell the person once per
fault per session; and a hook whose input names no session changes nothing. Real
`ralphstate hook ...` processes against real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.storage.peruser import notices
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import run_process
from tests.helpers.hardening import lock_held, told
from tests.helpers.loops import SID, make_loop

DOCTOR = "; the loop is not enforced until this is fixed (`ralphstate doctor` checks it)."


def hook(
    event: str, root: Path, data: dict[str, Any], agent: str = "claude", **env: str
) -> tuple[dict[str, Any] | None, str]:
    raw = orjson.dumps({"cwd": str(root), **data})
    done = run_process(["hook", event, "--agent", agent], cwd=root, input=raw, env=env)
    assert done.returncode == 0
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    return out, done.stderr.decode()


def not_json(root: Path) -> str:
    make_loop(root).write_bytes(b'{"spec": "x",\n  oops}\n')
    return (
        ".loop/state.json is not valid JSON (line 2, column 3): unexpected character, expected"
        " a string key; it was left untouched"
    )


def newer(root: Path) -> str:
    path = make_loop(root)
    path.write_bytes(path.read_bytes().replace(b'"version": 1', b'"version": 9'))
    return (
        ".loop/state.json has schema version 9, newer than this ralphstate understands (1);"
        " upgrade ralphstate to use it; it was left untouched"
    )


def too_large(root: Path) -> str:
    path = make_loop(root)
    data = path.read_bytes().rstrip()
    path.write_bytes(data + b" " * (limits.MAX_STATE_BYTES + 1 - len(data)))
    return (
        f".loop/state.json is {limits.MAX_STATE_BYTES + 1} bytes, more than the"
        f" {limits.MAX_STATE_BYTES} ralphstate reads; it was left as it is"
    )


def not_a_file(root: Path) -> str:
    make_loop(root).unlink()
    (root / ".loop" / "state.json").mkdir()
    return ".loop/state.json is not a regular file"


FAULTS = {"not JSON": not_json, "newer": newer, "too large": too_large, "not a file": not_a_file}


def files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() if p.is_file() else b"<dir>" for p in (root / ".loop").iterdir()}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_stop_on_an_unusable_loop_tells_the_person_once_a_session(root: Path, fault: str) -> None:
    problem = FAULTS[fault](root)
    before = files(root)
    want = orjson.loads(told(problem))  # with the notification that the gate failed open
    assert want["systemMessage"] == f"ralphstate: {problem}{DOCTOR}"
    line = f"ralphstate hook stop: {problem}; allowing.\n"
    assert hook("stop", root, {"session_id": SID}) == (want, line)
    assert hook("stop", root, {"session_id": SID}) == (None, line)  # told already
    assert hook("stop", root, {"session_id": "session-b"}) == (want, line)  # another session
    assert files(root) == before


def test_told_at_session_start_is_not_told_again_at_stop_or_compaction(root: Path) -> None:
    problem = not_json(root)
    want = {"systemMessage": f"ralphstate: {problem}{DOCTOR}"}
    out, err = hook("session-start", root, {"session_id": SID, "source": "startup"})
    assert out == want
    assert err == f"ralphstate hook session-start: {problem}; allowing.\n"
    assert hook("pre-compact", root, {"session_id": SID})[0] is None
    assert hook("stop", root, {"session_id": SID})[0] is None


def test_pre_compact_tells_first(root: Path) -> None:
    problem = newer(root)
    out, _ = hook("pre-compact", root, {"session_id": SID, "trigger": "auto"})
    assert out == {"systemMessage": f"ralphstate: {problem}{DOCTOR}"}
    assert hook("session-start", root, {"session_id": SID, "source": "compact"})[0] is None


def test_another_fault_in_the_same_session_is_told(root: Path) -> None:
    first = not_json(root)
    assert hook("stop", root, {"session_id": SID})[0] is not None
    (root / ".loop" / "state.json").write_bytes(b"[]\n")
    out, _ = hook("stop", root, {"session_id": SID})
    assert out is not None and first not in out["systemMessage"]
    assert "must hold a JSON object" in out["systemMessage"]


def test_a_lock_never_had_is_told_once(root: Path) -> None:
    path = make_loop(root)
    before = path.read_bytes()
    problem = ".loop/state.lock is held by another process; gave up after 2s"
    with lock_held(root / ".loop"):
        first, _ = hook("stop", root, {"session_id": SID})
        second, err = hook("stop", root, {"session_id": SID})
    assert first == orjson.loads(told(problem))
    assert first is not None and first["systemMessage"] == f"ralphstate: {problem}{DOCTOR}"
    assert second is None and err == f"ralphstate hook stop: {problem}; allowing.\n"
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("agent", "session_key", "shown"),
    [
        ("codex", "session_id", True),
        ("gemini", "session_id", True),
        ("copilot", "sessionId", False),  # shows no systemMessage: stderr only
        ("cursor", "conversation_id", False),
    ],
)
def test_every_agent_that_shows_messages_is_told(
    root: Path, agent: str, session_key: str, shown: bool
) -> None:
    problem = not_json(root)
    data = {session_key: SID, "status": "completed", "workspace_roots": [str(root)]}
    out, err = hook("stop", root, data, agent=agent)
    assert out == ({"systemMessage": f"ralphstate: {problem}{DOCTOR}"} if shown else None)
    assert err == f"ralphstate hook stop: {problem}; allowing.\n"


def test_a_notices_file_that_cannot_be_written_means_telling_again(
    root: Path, isolated: Path
) -> None:
    not_json(root)
    (isolated / "state").mkdir(parents=True, exist_ok=True)
    (isolated / "state" / notices.NOTICES_NAME).mkdir()  # cannot be replaced by a file
    assert hook("stop", root, {"session_id": SID})[0] is not None
    assert hook("stop", root, {"session_id": SID})[0] is not None


def test_notices_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_NOTICES_PER_LOOP", 3)
    monkeypatch.setattr(limits, "MAX_NOTICE_LOOPS", 2)
    loops = [LoopPaths(tmp_path / str(i), tmp_path / str(i) / ".loop") for i in range(3)]
    assert [notices.first_time(loops[0], f"s{i}", "bad") for i in range(4)] == [True] * 4
    assert notices.first_time(loops[0], "s3", "bad") is False  # the newest 3 are kept
    assert notices.first_time(loops[0], "s0", "bad") is True  # the oldest was dropped
    assert notices.first_time(loops[1], "s3", "bad") is True
    assert notices.first_time(loops[2], "s3", "bad") is True  # loop 0 is dropped
    assert notices.first_time(loops[0], "s0", "bad") is True
    data = orjson.loads(notices._path().read_bytes())
    assert len(data["loops"]) == 2
    assert all(len(e["told"]) <= 3 for e in data["loops"].values())


# -- input without a session changes nothing ---------------------------------------------


@pytest.mark.parametrize(
    ("event", "changes"),
    [
        ("pre-compact", {}),
        ("pre-compact", {"sessionId": None}),
        ("session-start", {"sessionId": None}),
        ("stop", {"sessionId": None}),
        ("stop", {}),
    ],
    ids=["pre-compact", "pre-compact unowned", "session-start unowned", "stop unowned", "stop"],
)
def test_input_without_a_session_changes_nothing(
    root: Path, isolated: Path, event: str, changes: dict[str, Any]
) -> None:
    path = make_loop(root, **changes)
    registry = isolated / "state" / "loops.json"
    before = (path.read_bytes(), registry.read_bytes())
    hook(event, root, {"trigger": "auto", "source": "startup"})
    assert (path.read_bytes(), registry.read_bytes()) == before
    assert not (root / ".loop" / "history.jsonl").exists()
    assert st.parse(path.read_bytes())["lastCheckpoint"] is None
    assert not (isolated / "state" / notices.NOTICES_NAME).exists()
