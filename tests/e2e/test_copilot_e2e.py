"""The loop under the real GitHub Copilot CLI, offline: `ralphstate install --agent
copilot` writes `.github/hooks/ralphstate.json`, `copilot -p` talks to the scripted
Messages API through its Anthropic provider, and the agentStop hook's block reaches the
model as the next user message.

Skipped, with the reason printed, only when the client is not installed
(`cd tests/e2e/copilot && npm ci`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from copilot_fixtures import base_env, find_copilot, run_copilot
from e2e_support import (
    Prompts,
    claude_owned_loop,
    history,
    installed,
    installed_project,
    read_state,
    rs,
    rs_command,
)
from fake_api import FakeAnthropicAPI, bash, text, texts

pytestmark = pytest.mark.e2e
MARK = "<loop-complete>"


@pytest.fixture(scope="module")
def copilot() -> Path:
    return installed(find_copilot(), "Copilot CLI")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the binary unpacks itself, once for all these tests."""
    return tmp_path_factory.mktemp("copilot-cache")


@pytest.fixture
def copilot_project(
    tmp_path: Path, cache: Path, api: FakeAnthropicAPI
) -> tuple[Path, dict[str, str]]:
    """A fresh project with ralphstate's Copilot hooks, and the client's environment."""
    env = base_env(tmp_path, cache, api.base_url)
    return installed_project(tmp_path, env, "copilot", ".github/hooks/ralphstate.json")


# Copilot CLI sends a block's reason as the next user message, the time before it.
DATED = re.compile(r"^<current_datetime>[^<]+</current_datetime>\n\n(.*)$", re.DOTALL)


def last_user_text(body: dict[str, Any]) -> str:
    """The newest user message, without the time Copilot puts before it."""
    last = texts(body, "user")[-1]
    found = DATED.match(last)
    assert found, last
    return found.group(1)


def test_the_loop_ends_only_when_the_newest_reply_says_the_marker(
    copilot: Path, copilot_project: tuple[Path, dict[str, str]], api: FakeAnthropicAPI
) -> None:
    project, env = copilot_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass")
    prompts = Prompts(last_user_text)
    api.script = [
        [text(f"I think I am done. {MARK}")],
        prompts.after([bash(rs_command("criteria", "set", "tests pass", "true"), tool="bash")]),
        [text("The tests pass now.")],
        prompts.after([text(f"The tests pass, and the work is done. {MARK}")]),
    ]
    run = run_copilot(copilot, project, "Build the parser.", env)

    assert run.process.returncode == 0, run.process.stderr
    assert len(api.conversation()) == 4, "two blocks, one tool call, then the run ended"
    assert prompts[0].startswith(
        "ralphstate loop, iteration 1 of 20: 1 of 1 criterion not verified yet:\n- tests pass\n"
    )
    assert prompts[1].startswith("ralphstate loop, iteration 2 of 20: the one criterion")
    state = read_state(project)
    assert state["status"] == "complete"
    assert state["iteration"] == 2
    assert state["criteriaStatus"] == {"tests pass": True}
    assert (state["sessionId"], state["ownerAgent"]) == (run.session_id, "copilot")
    events = [e["event"] for e in history(project)]
    assert [e for e in events if e in ("unmet", "no_marker")] == ["unmet", "no_marker"]


def test_without_a_loop_one_turn_and_nothing_written(
    copilot: Path, copilot_project: tuple[Path, dict[str, str]], api: FakeAnthropicAPI
) -> None:
    project, env = copilot_project
    api.script = [[text("Hello.")]]
    run = run_copilot(copilot, project, "Say hello.", env)

    assert run.process.returncode == 0, run.process.stderr
    assert len(api.conversation()) == 1
    assert not (project / ".loop").exists()


def test_the_loop_is_restored_into_the_first_request(
    copilot: Path, copilot_project: tuple[Path, dict[str, str]], api: FakeAnthropicAPI
) -> None:
    project, env = copilot_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass")
    rs(project, env, "criteria", "set", "tests pass", "true")
    api.script = [[text(f"Done. {MARK}")]]
    run = run_copilot(copilot, project, "Go on.", env)

    assert run.process.returncode == 0, run.process.stderr
    first = "\n".join(texts(api.conversation()[0], "user"))
    assert "A ralphstate loop is active in this project" in first
    assert "Build the parser" in first
    assert "- [x] tests pass" in first
    assert len(api.conversation()) == 1
    assert read_state(project)["status"] == "complete"


def test_a_loop_owned_by_another_agent_is_announced_not_taken(
    copilot: Path, copilot_project: tuple[Path, dict[str, str]], api: FakeAnthropicAPI
) -> None:
    project, env = copilot_project
    before = claude_owned_loop(project, env)
    api.script = [[text("Nothing to do here.")]]
    run = run_copilot(copilot, project, "Say hello.", env)

    assert run.process.returncode == 0, run.process.stderr
    assert len(api.conversation()) == 1, "the agentStop hook did not hold the run"
    first = "\n".join(texts(api.conversation()[0], "user"))
    assert "A ralphstate loop in this project belongs to another" in first
    assert (project / ".loop" / "state.json").read_bytes() == before


def test_repository_hooks_load_in_prompt_mode_only_in_a_trusted_folder(
    copilot: Path, copilot_project: tuple[Path, dict[str, str]], api: FakeAnthropicAPI
) -> None:
    """Without `--trust-folder` (or saved trust, or the opt-in variable) `copilot -p`
    ignores `.github/hooks`: the loop is not enforced, and nothing says so. The hooks
    installed for the user run there all the same."""
    project, env = copilot_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass")
    before = (project / ".loop" / "state.json").read_bytes()
    api.script = [[text(f"Done. {MARK}")]]
    run = run_copilot(copilot, project, "Go on.", env, trust=False)

    assert run.process.returncode == 0, run.process.stderr
    assert len(api.conversation()) == 1
    assert "ralphstate" not in "\n".join(texts(api.conversation()[0], "user"))
    assert (project / ".loop" / "state.json").read_bytes() == before

    # The user-scope hooks (`~/.copilot/hooks/`) run in an untrusted folder too.
    rs(project, env, "install", "--agent", "copilot", "--scope", "user")
    rs(project, env, "criteria", "set", "tests pass", "true")
    api.add_turns([text(f"Done. {MARK}")])
    run = run_copilot(copilot, project, "Go on.", env, trust=False)
    assert run.process.returncode == 0, run.process.stderr
    assert "A ralphstate loop is active" in "\n".join(texts(api.conversation()[1], "user"))
    assert read_state(project)["status"] == "complete"


def test_a_run_that_ends_hands_its_loop_to_the_next_session(
    copilot: Path, copilot_project: tuple[Path, dict[str, str]], api: FakeAnthropicAPI
) -> None:
    """Copilot CLI's sessionEnd releases the loop of the session that ends; the next run
    takes it at its sessionStart and completes it."""
    project, env = copilot_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass", "--max-iterations", "1")
    api.script = [[text("Reading the parser.")], [text("Still reading.")]]
    first = run_copilot(copilot, project, "Build the parser.", env)

    assert first.process.returncode == 0, first.process.stderr
    state = read_state(project)
    assert (state["status"], state["pauseReason"]) == ("paused", "max_iterations")
    assert (state["sessionId"], state["ownerAgent"]) == (None, None)
    [released] = [e for e in history(project) if e["event"] == "released"]
    assert released["session"] == first.session_id

    rs(project, env, "resume", "--more", "5")
    api.script += [
        [bash(rs_command("criteria", "set", "tests pass", "true"), tool="bash")],
        [text(f"Done. {MARK}")],
    ]
    second = run_copilot(copilot, project, "Carry on.", env)

    assert second.process.returncode == 0, second.process.stderr
    state = read_state(project)
    assert (state["status"], state["sessionId"]) == ("complete", second.session_id)
