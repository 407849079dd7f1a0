"""The loop under the real Gemini CLI, offline: `ralphstate install --agent gemini`
writes `.gemini/settings.json`, `gemini -p` talks to a scripted Gemini API, and the
AfterAgent hook's `deny` reaches the model as the next user message.

Skipped, with the reason printed, only when the client is not installed
(`cd tests/e2e/gemini && npm ci`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import (
    Prompts,
    claude_owned_loop,
    history,
    installed,
    installed_project,
    read_state,
    rs,
    rs_command,
    serving,
)
from fake_gemini import FakeGeminiAPI, shell, text, user_texts
from gemini_fixtures import base_env, find_gemini, run_gemini

pytestmark = pytest.mark.e2e
MARK = "<loop-complete>"


@pytest.fixture(scope="module")
def gemini() -> list[str]:
    return installed(find_gemini(), "Gemini CLI")


@pytest.fixture
def api() -> Iterator[FakeGeminiAPI]:
    yield from serving(FakeGeminiAPI())


@pytest.fixture
def gemini_project(tmp_path: Path, api: FakeGeminiAPI) -> tuple[Path, dict[str, str]]:
    """A fresh project with ralphstate's Gemini hooks, and the client's environment."""
    env = base_env(tmp_path, api)
    return installed_project(tmp_path, env, "gemini", ".gemini/settings.json")


def test_the_loop_ends_only_when_the_newest_reply_says_the_marker(
    gemini: list[str], gemini_project: tuple[Path, dict[str, str]], api: FakeGeminiAPI
) -> None:
    """`prompt_response` still holds the first reply's marker when the criteria are met;
    the reply after that does not say it, so the loop goes on until one that does."""
    project, env = gemini_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass")
    prompts = Prompts(lambda body: user_texts(body)[-1])
    api.script = [
        [text(f"I think I am done. {MARK}")],
        prompts.after([shell(rs_command("criteria", "set", "tests pass", "true"))]),
        [text("The tests pass now.")],
        prompts.after([text(f"The tests pass, and the work is done. {MARK}")]),
    ]
    run = run_gemini(gemini, project, "Build the parser.", env)

    assert run.process.returncode == 0, run.process.stderr
    assert run.result["response"].endswith(f"The tests pass, and the work is done. {MARK}")
    assert len(api.requests) == 4, "two blocks, one tool call, then the run ended"
    assert prompts[0].startswith(
        "ralphstate loop, iteration 1 of 20: 1 of 1 criterion not verified yet:\n- tests pass\n"
    )
    assert prompts[1].startswith("ralphstate loop, iteration 2 of 20: the one criterion")
    assert MARK in prompts[1]
    state = read_state(project)
    assert state["status"] == "complete"
    assert state["iteration"] == 2
    assert state["criteriaStatus"] == {"tests pass": True}
    assert state["ownerAgent"] == "gemini"
    # The AfterAgent hook counted every reply from the session file, once each, as the
    # scripted API reported it (`usageMetadata.totalTokenCount`: 15).
    assert state["usage"]["tokens"] == 15 * len(api.requests) == 60
    events = [e["event"] for e in history(project)]
    assert [e for e in events if e in ("unmet", "no_marker")] == ["unmet", "no_marker"]
    # PreCompress fired (`auto`) before each model call, without compressing anything:
    # the pre-compact hook is installed for `/compress` only, so it never ran.
    assert "checkpoint" not in events


def test_without_a_loop_one_turn_and_nothing_written(
    gemini: list[str], gemini_project: tuple[Path, dict[str, str]], api: FakeGeminiAPI
) -> None:
    project, env = gemini_project
    api.script = [[text("Hello.")]]
    run = run_gemini(gemini, project, "Say hello.", env)

    assert run.process.returncode == 0, run.process.stderr
    assert run.result["response"] == "Hello."
    assert len(api.requests) == 1
    assert not (project / ".loop").exists()
    assert not run.result.get("warnings"), run.result.get("warnings")


def test_the_loop_is_restored_into_the_first_request(
    gemini: list[str], gemini_project: tuple[Path, dict[str, str]], api: FakeGeminiAPI
) -> None:
    project, env = gemini_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass")
    rs(project, env, "criteria", "set", "tests pass", "true")
    api.script = [[text(f"Done. {MARK}")]]
    run = run_gemini(gemini, project, "Go on.", env)

    assert run.process.returncode == 0, run.process.stderr
    first = "\n".join(user_texts(api.requests[0]))
    # SessionStart's context is prepended to the prompt, `<` escaped as `&lt;`.
    assert "<hook_context>A ralphstate loop is active in this project" in first
    assert "Build the parser" in first
    assert "- [x] tests pass" in first
    assert len(api.requests) == 1
    assert read_state(project)["status"] == "complete"


def test_a_loop_owned_by_another_agent_is_announced_not_taken(
    gemini: list[str], gemini_project: tuple[Path, dict[str, str]], api: FakeGeminiAPI
) -> None:
    project, env = gemini_project
    before = claude_owned_loop(project, env)
    api.script = [[text("Nothing to do here.")]]
    run = run_gemini(gemini, project, "Say hello.", env)

    assert run.process.returncode == 0, run.process.stderr
    assert len(api.requests) == 1, "the AfterAgent hook did not hold the run"
    first = "\n".join(user_texts(api.requests[0]))
    assert "A ralphstate loop in this project belongs to another" in first
    assert (project / ".loop" / "state.json").read_bytes() == before


def test_a_run_that_ends_hands_its_loop_to_the_next_session(
    gemini: list[str], gemini_project: tuple[Path, dict[str, str]], api: FakeGeminiAPI
) -> None:
    """Gemini CLI's SessionEnd (`exit`) releases the loop of the session that ends; the
    next run takes it at its SessionStart and completes it."""
    project, env = gemini_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass", "--max-iterations", "1")
    api.script = [[text("Reading the parser.")], [text("Still reading.")]]
    first = run_gemini(gemini, project, "Build the parser.", env)

    assert first.process.returncode == 0, first.process.stderr
    state = read_state(project)
    assert (state["status"], state["pauseReason"]) == ("paused", "max_iterations")
    assert (state["sessionId"], state["ownerAgent"]) == (None, None)
    [released] = [e for e in history(project) if e["event"] == "released"]
    assert (released["agent"], released["reason"]) == ("gemini", "exit")

    rs(project, env, "resume", "--more", "5")
    api.script += [
        [shell(rs_command("criteria", "set", "tests pass", "true"))],
        [text(f"Done. {MARK}")],
    ]
    second = run_gemini(gemini, project, "Carry on.", env)

    assert second.process.returncode == 0, second.process.stderr
    state = read_state(project)
    assert (state["status"], state["ownerAgent"]) == ("complete", "gemini")
    assert state["sessionId"] not in (None, released["session"])


def test_a_turn_that_ends_in_text_only_is_gated(
    gemini: list[str], gemini_project: tuple[Path, dict[str, str]], api: FakeGeminiAPI
) -> None:
    """gemini-cli #18514 (and #15712): AfterAgent may not fire after a turn whose last
    reply is text only, with no tool call. With the pinned client it does, in headless
    mode: the text-only first turn is blocked, and its reason is the next user message."""
    project, env = gemini_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass")
    prompts = Prompts(lambda body: user_texts(body)[-1])
    api.script = [
        [text("All done here.")],  # text only, no tool call, no marker
        prompts.after([shell(rs_command("criteria", "set", "tests pass", "true"))]),
        [text(f"The tests pass. {MARK}")],
    ]
    run = run_gemini(gemini, project, "Build the parser.", env)

    assert run.process.returncode == 0, run.process.stderr
    assert len(api.requests) == 3, "the text-only turn was blocked, not let stop"
    assert prompts[0].startswith("ralphstate loop, iteration 1 of 20:")
    assert read_state(project)["status"] == "complete"
