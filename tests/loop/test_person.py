"""Only the person trusts (loop/person.py): `ralphstate trust` run from an agent's shell
or a `ralphstate run` iteration is refused, in real processes with the variables each
agent gives its commands, unless it carries the approval the person gave at Claude
Code's prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import actor
from ralphstate.core.approving import APPROVAL_ENV, trust_step
from ralphstate.core.errors import RalphstateError
from ralphstate.loop import person
from ralphstate.storage.peruser import approvals, truststore
from ralphstate.storage.system import paths
from tests.helpers import run_process
from tests.helpers.checks import PASS
from tests.helpers.terminal import at_terminal

CLAUDE = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "sess-1"}
LEAD = "ralphstate: `ralphstate trust` approves what proves this loop done, so only the person"


@pytest.fixture
def loop(project: Path, rs: Any) -> paths.LoopPaths:
    assert rs("init", "Build it", "-c", "a").code == 0
    assert rs("criteria", "check", "a", PASS).code == 0
    state = project / ".loop" / "state.json"
    raw = orjson.loads(state.read_bytes())
    raw["checks"]["a"] = PASS + " "  # changed by hand: not trusted any more
    state.write_bytes(orjson.dumps(raw))
    return paths.at(str(project / ".loop"))


def asked(loop: paths.LoopPaths, session: str = "sess-1", command: str = "ralphstate trust") -> str:
    """A token as Claude Code's PreToolUse hook makes it for a call the client asks the
    person about: the call is in the session's transcript, not answered yet."""
    return approvals.mint(loop, session, "toolu_01", str(transcript(loop, session, command)))


def transcript(loop: paths.LoopPaths, session: str, command: str, answered: bool = False) -> Path:
    path = Path(loop.root).parent / f"{session}.jsonl"
    call = {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": command}}
    lines = [{"type": "assistant", "message": {"role": "assistant", "content": [call]}}]
    if answered:
        result = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "no"}
        lines.append({"type": "user", "message": {"role": "user", "content": [result]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def trusted(loop: paths.LoopPaths) -> bool:
    from ralphstate.storage.loopdir.store import Store

    return truststore.is_trusted(loop, Store(loop).load())


def trust_in(project: Path, env: dict[str, str]) -> tuple[int, str]:
    done = run_process(["trust"], cwd=project, env=env)
    return done.returncode, done.stderr.decode()


def test_the_person_trusts(project: Path, loop: paths.LoopPaths) -> None:
    typed = at_terminal(["trust"], cwd=project)
    assert (typed.code, typed.asked) == (0, True), typed.screen
    assert trusted(loop)


@pytest.mark.parametrize(
    ("env", "ending"),
    [
        (CLAUDE, "ask them to run it in their own terminal, or to approve it when Claude Code"),
        ({"CLAUDECODE": "1"}, "ask them to run it in their own terminal, or to approve it"),
        ({"CODEX_THREAD_ID": "t1"}, "ask them to run it in their own terminal.\n"),
        ({"GEMINI_CLI": "1"}, "ask them to run it in their own terminal.\n"),
        (
            {"RALPHSTATE_RUNNER": "1", **CLAUDE},
            "never an iteration of `ralphstate run`: tell them it waits for them.\n",
        ),
    ],
)
def test_an_agent_or_a_run_is_refused_in_one_sentence(
    project: Path, loop: paths.LoopPaths, env: dict[str, str], ending: str
) -> None:
    code, err = trust_in(project, env)
    assert code == 1
    assert err.startswith(LEAD)
    assert ending in err
    assert err.count("\n") == 1 and err.count(". ") == 0
    assert not trusted(loop)


def test_the_person_s_approval_lets_the_agent_s_command_trust_once(
    project: Path, loop: paths.LoopPaths
) -> None:
    token = asked(loop)
    assert trust_in(project, {**CLAUDE, APPROVAL_ENV: token}) == (0, "")
    assert trusted(loop)
    line = json.loads((project / ".loop" / "history.jsonl").read_text().splitlines()[-1])
    assert line["event"] == "trusted"
    assert line["actor"] == {
        "kind": "person",
        "via": "permission prompt",
        "present": "prompt",
        "session": "sess-1",
    }
    code, err = trust_in(project, {**CLAUDE, APPROVAL_ENV: token})
    assert (code, err.startswith(LEAD)) == (1, True)


@pytest.mark.parametrize(
    "env",
    [
        {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": "another session"},
        {"RALPHSTATE_RUNNER": "1", **CLAUDE},
        {"CODEX_THREAD_ID": "t1"},
    ],
)
def test_an_approval_counts_only_in_its_session_and_never_in_a_run(
    project: Path, loop: paths.LoopPaths, env: dict[str, str]
) -> None:
    token = asked(loop)
    code, err = trust_in(project, {**env, APPROVAL_ENV: token})
    assert code == 1 and err.startswith(LEAD)
    assert not trusted(loop)


def test_an_approval_for_another_loop_does_not_count(
    project: Path, loop: paths.LoopPaths, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere" / ".loop"
    elsewhere.mkdir(parents=True)
    token = asked(paths.at(str(elsewhere)))
    code, err = trust_in(project, {**CLAUDE, APPROVAL_ENV: token})
    assert code == 1 and err.startswith(LEAD)


def test_a_made_up_approval_does_not_count(project: Path, loop: paths.LoopPaths) -> None:
    code, err = trust_in(project, {**CLAUDE, APPROVAL_ENV: "0" * 32})
    assert code == 1 and err.startswith(LEAD)
    assert not trusted(loop)


def test_an_expired_approval_says_so(
    loop: paths.LoopPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = asked(loop)
    later = approvals._now() + approvals.TTL_SECONDS + 1
    monkeypatch.setattr(approvals, "_now", lambda: later)
    for name, value in {**CLAUDE, APPROVAL_ENV: token}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(RalphstateError, match=r"^the person's approval of `ralphstate trust`"):
        person.require_person(loop, "`ralphstate trust`")
    assert actor.current() != {"kind": "person", "via": person.APPROVED_AT_PROMPT}


def test_the_person_is_told_to_trust_an_agent_to_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    actor.find_with(lambda: dict(actor.PERSON))
    assert trust_step() == "run `ralphstate trust`"
    actor.find_with(lambda: {"kind": "agent", "agent": "claude"})
    assert "ralphstate trust" not in trust_step()
    assert trust_step().startswith("ask the person")


@pytest.mark.parametrize("args", [["status"], ["verify"]])
def test_what_an_agent_reads_never_suggests_trust(
    project: Path, loop: paths.LoopPaths, args: list[str]
) -> None:
    agent = run_process(args, cwd=project, env=CLAUDE)
    said = (agent.stdout + agent.stderr).decode()
    assert "not trusted" in said.lower()
    assert "ralphstate trust" not in said
    assert "ask the person to trust them (only they can)" in said
    person = run_process(args, cwd=project)
    assert "run `ralphstate trust`" in (person.stdout + person.stderr).decode()


def test_review_approve_takes_the_same_approval(project: Path, loop: paths.LoopPaths) -> None:
    done = run_process(["review", "--approve"], cwd=project, env=CLAUDE)
    assert done.returncode == 1
    assert "so only the person may run it" in done.stderr.decode()
    token = asked(loop)
    done = run_process(["review", "--approve"], cwd=project, env={**CLAUDE, APPROVAL_ENV: token})
    assert done.returncode == 0, done.stderr
    lines = (project / ".loop" / "history.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert events[-1]["actor"]["via"] == "permission prompt"
