"""Desktop notifications (`terminalSequence`) on the Stop decisions a person wants to
hear about, through real `ralphstate hook stop` processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.hooks import notify
from tests.helpers import run_process
from tests.helpers.loops import SID, make_loop

BOTH_MET = {"tests pass": True, "lint clean": True}
OSC9 = "\x1b]9;ralphstate: "


def stop(
    root: Path, message: str, env: dict[str, str] | None = None, agent: str | None = None
) -> dict[str, Any] | None:
    data = {"session_id": SID, "cwd": str(root), "last_assistant_message": message}
    if agent == "codex":
        data["turn_id"] = "t1"
    args = ["hook", "stop"] + (["--agent", agent] if agent else [])
    done = run_process(args, cwd=root, input=orjson.dumps(data), env=env, timeout=10)
    assert done.returncode == 0
    return orjson.loads(done.stdout) if done.stdout.strip() else None


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_completion_carries_a_notification(root: Path) -> None:
    make_loop(root, criteriaStatus=BOTH_MET)
    out = stop(root, "All done.\n\n<loop-complete>")
    assert out is not None
    assert out["terminalSequence"] == f"{OSC9}loop complete (Build the parser)\x07"
    assert out["systemMessage"].startswith("ralphstate: loop complete")


def test_a_pause_at_the_iteration_limit_carries_a_notification(root: Path) -> None:
    make_loop(root, iteration=3, maxIterations=3)
    out = stop(root, "Still working.")
    assert out is not None
    assert out["terminalSequence"] == (
        f"{OSC9}loop paused: it reached its iteration limit (Build the parser)\x07"
    )
    assert "systemMessage" in out


def test_a_block_carries_none(root: Path) -> None:
    make_loop(root)
    out = stop(root, "Working.")
    assert out is not None and out["decision"] == "block"
    assert "terminalSequence" not in out


def test_a_setting_turns_them_off(root: Path) -> None:
    make_loop(root, criteriaStatus=BOTH_MET)
    out = stop(root, "<loop-complete>", env={"RALPHSTATE_NOTIFY": "off"})
    assert out is not None and "terminalSequence" not in out


def test_a_gate_that_fails_open_says_so_once_a_session(root: Path) -> None:
    (root / ".loop").mkdir()
    (root / ".loop" / "state.json").write_text("{not json")
    out = stop(root, "Done.")
    assert out is not None and "not enforced" in out["systemMessage"]
    sequence = out["terminalSequence"]
    assert sequence.startswith(f"{OSC9}the Stop gate failed open, the loop is not enforced: ")
    assert sequence.endswith("\x07") and "not valid JSON" in sequence
    assert stop(root, "Done.") is None  # told once a session, as the message is


def test_a_gate_that_fails_open_sends_none_when_they_are_off(root: Path) -> None:
    (root / ".loop").mkdir()
    (root / ".loop" / "state.json").write_text("{not json")
    out = stop(root, "Done.", env={"RALPHSTATE_NOTIFY": "0"})
    assert out is not None and set(out) == {"systemMessage"}


def test_other_agents_get_no_terminal_sequence(root: Path) -> None:
    make_loop(root, agent="codex", criteriaStatus=BOTH_MET)
    out = stop(root, "<loop-complete>", agent="codex")
    assert out is None or "terminalSequence" not in out


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "\x1b]9;ralphstate: loop complete\x07"),
        ({"RALPHSTATE_NOTIFY": "777"}, "\x1b]777;notify;ralphstate;loop complete\x07"),
        ({"VTE_VERSION": "7600"}, "\x1b]777;notify;ralphstate;loop complete\x07"),
        ({"TERM": "foot"}, "\x1b]777;notify;ralphstate;loop complete\x07"),
        ({"VTE_VERSION": "7600", "RALPHSTATE_NOTIFY": "9"}, "\x1b]9;ralphstate: loop complete\x07"),
        ({"RALPHSTATE_NOTIFY": "Off"}, None),
        ({"RALPHSTATE_NOTIFY": "false"}, None),
    ],
)
def test_the_sequence_follows_the_setting_and_the_terminal(
    env: dict[str, str], expected: str | None
) -> None:
    assert notify.sequence("loop complete", env) == expected


def test_text_from_the_state_cannot_end_the_sequence_early() -> None:
    found = notify.sequence("spec \x07\x1b]0;title\x07 a;b\nc " + "x" * 300, {})
    assert found is not None
    body = found[len(OSC9) : -1]
    assert "\x07" not in body and "\x1b" not in body
    assert body.startswith("spec 0,title a,b c x")
    assert len(body) == notify.MAX_TEXT


@pytest.mark.parametrize("setting", ["9", "777"])
def test_a_cloned_specs_8_bit_controls_and_bidi_never_reach_the_terminal(
    root: Path, setting: str
) -> None:
    """A spec with a C1 string terminator, C1 CSI sequences (clear the screen, report
    the cursor) and a bidi override, through a real completing stop: the sequence the
    terminal gets holds one terminator, its own, and nothing unprintable."""
    spec = "Build\x9c\x9b2J\x9b6n the \u202eparser\u202c"
    make_loop(root, spec=spec, criteriaStatus=BOTH_MET)
    out = stop(root, "All done.\n\n<loop-complete>", env={notify.ENV: setting})
    assert out is not None
    found = out["terminalSequence"]
    start = OSC9 if setting == "9" else "\x1b]777;notify;ralphstate;"
    assert found.startswith(start) and found.endswith("\x07"), found
    body = found[len(start) : -1]
    assert body.isprintable(), repr(body)
    assert "Build\\x9c\\x9b2J\\x9b6n the \\u202eparser\\u202c" in body
