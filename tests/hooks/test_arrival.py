"""A state file the agent writes itself (as the design notes have it do at a loop's
start) is the session's own loop and enforced at once; one that came with a clone, or
was there when the session started, is not, and the person hears so once. Through real
`ralphstate hook ...` processes and real git repositories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import state as st
from ralphstate.storage.peruser import ledger, registry
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import run_process
from tests.helpers.gitrepo import git, init_repo, use_identity
from tests.helpers.loops import SID, load, make_loop

# What the design notes have the agent write at a loop's start.
SEED = {
    "spec": "Make the parser tests pass",
    "criteria": ["parser tests pass", "no lint errors"],
    "criteriaStatus": {"parser tests pass": False, "no lint errors": False},
    "steps": ["write the tokenizer"],
    "completedSteps": [],
    "iteration": 0,
    "status": "in_progress",
}
ADOPTED = (
    "ralphstate: this session's agent wrote .loop/state.json itself, so the Stop hook now"
    " holds the session to that loop; its criteria are the agent's claims until you give"
    " them checks (`ralphstate criteria check NAME COMMAND`, then `ralphstate trust`)."
)
NOT_ENFORCED = (
    "ralphstate: the loop in .loop/state.json (2 criteria, in progress) is not enforced,"
    " since this machine did not start it and this session did not write it (it came with"
    " the repository or from another branch, or was here before); run `ralphstate adopt`"
    " to enforce it here."
)


@pytest.fixture(autouse=True)
def identity(monkeypatch: pytest.MonkeyPatch, isolated: Path) -> None:
    use_identity(monkeypatch, isolated)


def hook(event: str, root: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    raw = orjson.dumps({"cwd": str(root), "session_id": SID, **data})
    done = run_process(["hook", event], cwd=root, input=raw, timeout=30)
    assert done.returncode == 0
    assert done.stderr == b"", done.stderr
    return orjson.loads(done.stdout) if done.stdout.strip() else None


def stop(root: Path) -> dict[str, Any] | None:
    return hook("stop", root, {"last_assistant_message": "The loop is set up."})


def write_seed(root: Path, **changes: Any) -> Path:
    path = root / ".loop" / "state.json"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(orjson.dumps({**SEED, **changes}))
    return path


def test_a_state_file_the_agent_wrote_is_enforced_at_once(root: Path) -> None:
    init_repo(root)
    assert hook("session-start", root, {"source": "startup"}) is None  # nothing here yet
    write_seed(root)  # the agent, in its first turn

    out = stop(root)
    assert out is not None and out["decision"] == "block"
    assert out["reason"].startswith(
        "ralphstate loop, iteration 1 of 20: 2 of 2 criteria not verified yet:"
    )
    assert out["systemMessage"] == ADOPTED
    state = load(root)
    assert (state["sessionId"], state["ownerAgent"], state["iteration"]) == (SID, "claude", 1)
    assert state["startedAt"] is not None
    assert registry.knows(registry_paths(root), state)

    out = stop(root)  # the next stop: the session's loop, said no more
    assert out is not None and out["decision"] == "block" and "systemMessage" not in out


def test_the_line_asks_the_person_to_trust_the_checks_the_agent_wrote(root: Path) -> None:
    write_seed(root, checks={"parser tests pass": "pytest -q tests/test_parser.py"})
    out = stop(root)
    assert out is not None and out["decision"] == "block"
    assert out["systemMessage"] == (
        "ralphstate: this session's agent wrote .loop/state.json itself, so the Stop hook now"
        " holds the session to that loop; read its 1 check (`ralphstate status`) and run"
        " `ralphstate trust`, or it will not run and the loop cannot be proved done."
    )
    status = run_process(["status"], cwd=root)
    assert b"checks 1: NOT trusted on this machine" in status.stdout


def test_a_state_file_the_agent_committed_in_the_same_turn_is_still_its_own(
    root: Path,
) -> None:
    init_repo(root)
    write_seed(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Start the parser loop")
    out = stop(root)
    assert out is not None and out["decision"] == "block"


def test_a_state_file_that_came_with_a_clone_is_named_once_and_not_enforced(
    root: Path, tmp_path: Path
) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    init_repo(origin, {".loop/state.json": orjson.dumps(SEED).decode()})
    git(tmp_path, "clone", "-q", str(origin), str(root))
    before = (root / ".loop" / "state.json").read_bytes()

    assert stop(root) == {"systemMessage": NOT_ENFORCED}
    assert stop(root) is None  # once a session
    assert (root / ".loop" / "state.json").read_bytes() == before
    # Committed on top of the clone here: its history still holds a version from elsewhere.
    (root / "README").write_text("local work\n")
    git(root, "add", "README")
    git(root, "commit", "-q", "-m", "local work")
    assert stop(root) is None
    assert (root / ".loop" / "state.json").read_bytes() == before


def test_a_state_file_found_when_the_session_started_is_not_its_own(root: Path) -> None:
    path = write_seed(root)  # untracked, but here before the session
    before = path.read_bytes()
    out = hook("session-start", root, {"source": "startup"})
    assert out is not None and "ralphstate adopt" in out["systemMessage"]
    assert stop(root) == {"systemMessage": NOT_ENFORCED}
    assert stop(root) is None
    assert path.read_bytes() == before
    # Resumed or compacted, the same session still found it at its start.
    hook("session-start", root, {"source": "compact"})
    assert stop(root) is None


def test_a_file_written_over_an_unfinished_loop_is_not_the_agents_to_take(root: Path) -> None:
    """An agent that replaces the person's loop by writing a state file of its own gets
    no loop of its own: the person hears that the loop was replaced."""
    make_loop(root, session=None, loopId="fedcba9876543210")
    ledger.begin(registry_paths(root), load(root), {"kind": "person"}, {})
    path = write_seed(root)
    before = path.read_bytes()
    out = stop(root)
    assert out is not None and "another loop" in out["systemMessage"]
    assert stop(root) is None  # said once
    assert path.read_bytes() == before
    assert st.parse(before)["sessionId"] is None


def registry_paths(root: Path) -> LoopPaths:
    return LoopPaths(root, root / ".loop")
