"""The loop under the real Codex CLI, offline: `ralphstate install --agent codex`
writes `.codex/hooks.json`, `codex exec` talks to a scripted Responses API, and the
Stop hook's block reaches the model as `<hook_prompt ...>`.

Skipped, with the reason printed, only when the Codex binary is not installed
(`cd tests/e2e/codex && npm ci`).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from codex_fixtures import base_env, find_codex, run_codex, write_config
from e2e_support import (
    Prompts,
    claude_owned_loop,
    installed,
    installed_project,
    read_state,
    rs,
    rs_command,
    serving,
)
from fake_responses import FakeResponsesAPI, message, shell, texts, user_texts

from ralphstate.core import state as st

pytestmark = pytest.mark.e2e
HOOK_PROMPT = re.compile(r'^<hook_prompt hook_run_id="[^"]+">(.*)</hook_prompt>$', re.DOTALL)


@pytest.fixture(scope="module")
def codex_bin() -> Path:
    binary = installed(find_codex(), "Codex CLI")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    assert version.returncode == 0, version.stderr
    return binary


@pytest.fixture
def responses() -> Iterator[FakeResponsesAPI]:
    yield from serving(FakeResponsesAPI())


@pytest.fixture
def codex_project(tmp_path: Path, responses: FakeResponsesAPI) -> tuple[Path, dict[str, str]]:
    """A fresh project with ralphstate's Codex hooks, and the client's environment."""
    codex_home = tmp_path / "codex-home"
    write_config(codex_home, responses, tmp_path / "my project")
    env = base_env(tmp_path, codex_home)
    return installed_project(tmp_path, env, "codex", ".codex/hooks.json")


def test_a_block_reaches_the_model_and_completion_ends_the_run(
    codex_bin: Path, codex_project: tuple[Path, dict[str, str]], responses: FakeResponsesAPI
) -> None:
    project, env = codex_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass")
    record = rs_command("criteria", "set", "tests pass")
    prompts = Prompts(lambda body: user_texts(body)[-1])
    responses.script = [
        [message("I think I am done.")],
        prompts.after([shell(f"{record} true")]),
        [message("The tests pass now. <loop-complete>")],
    ]
    run = run_codex(codex_bin, project, "Build the parser.", env)

    assert run.process.returncode == 0, run.process.stderr
    assert run.process.stdout.strip() == "The tests pass now. <loop-complete>"
    assert len(responses.requests) == 3, "one block, one tool call, then the run ended"
    # SessionStart restored the loop into the model's context.
    restored = texts(responses.requests[0], "developer")
    assert any(t.startswith("A ralphstate loop is active in this project") for t in restored)
    # The Stop hook's reason reached the model as Codex's hook prompt.
    found = HOOK_PROMPT.match(prompts[0])
    assert found, prompts[0]
    assert found.group(1).startswith(
        "ralphstate loop, iteration 1 of 20: 1 of 1 criterion not verified yet:\n- tests pass\n"
    )
    state = read_state(project)
    assert state["status"] == "complete"
    assert state["iteration"] == 1
    assert state["criteriaStatus"] == {"tests pass": True}
    assert (state["sessionId"], state["ownerAgent"]) == (run.session_id, "codex")


def test_a_loop_owned_by_a_claude_session_is_announced_not_taken(
    codex_bin: Path, codex_project: tuple[Path, dict[str, str]], responses: FakeResponsesAPI
) -> None:
    project, env = codex_project
    before = claude_owned_loop(project, env)
    responses.script = [[message("Nothing to do here.")]]
    run = run_codex(codex_bin, project, "Say hello.", env)

    assert run.process.returncode == 0, run.process.stderr
    assert len(responses.requests) == 1, "the Stop hook did not hold the run"
    announced = texts(responses.requests[0], "developer")
    assert any(
        t.startswith("A ralphstate loop in this project belongs to another") for t in announced
    )
    assert (project / ".loop" / "state.json").read_bytes() == before
    assert st.parse(before)["ownerAgent"] == "claude"


def test_a_run_that_ends_hands_its_loop_to_the_next_session(
    codex_bin: Path, codex_project: tuple[Path, dict[str, str]], responses: FakeResponsesAPI
) -> None:
    """Codex's SessionEnd releases the loop of the session that ends; the next `codex
    exec` takes it at its SessionStart and is held by it."""
    project, env = codex_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass", "--max-iterations", "1")
    responses.script = [[message("Reading the parser.")], [message("Still reading.")]]
    first = run_codex(codex_bin, project, "Build the parser.", env)

    assert first.process.returncode == 0, first.process.stderr
    state = read_state(project)
    assert (state["status"], state["pauseReason"]) == ("paused", "max_iterations")
    assert (state["sessionId"], state["ownerAgent"]) == (None, None)

    rs(project, env, "resume", "--more", "5")
    record = rs_command("criteria", "set", "tests pass")
    responses.script += [[shell(f"{record} true")], [message("Done. <loop-complete>")]]
    second = run_codex(codex_bin, project, "Carry on.", env)

    assert second.process.returncode == 0, second.process.stderr
    assert second.session_id != first.session_id
    restored = texts(responses.requests[-2], "developer")
    assert any(t.startswith("A ralphstate loop is active in this project") for t in restored)
    state = read_state(project)
    assert (state["status"], state["sessionId"]) == ("complete", second.session_id)


def test_hooks_not_yet_trusted_are_skipped_without_a_word(
    codex_bin: Path, codex_project: tuple[Path, dict[str, str]], responses: FakeResponsesAPI
) -> None:
    """Why `install --agent codex` says Codex runs new hooks only once trusted: in a
    trusted project, `codex exec` without the bypass runs none of them and says nothing
    the person would see as a failure, and the loop is not enforced."""
    project, env = codex_project
    rs(project, env, "init", "Build the parser", "-c", "tests pass")
    responses.script = [[message("I think I am done.")]]
    run = run_codex(codex_bin, project, "Build the parser.", env, bypass_hook_trust=False)

    assert run.process.returncode == 0, run.process.stderr
    assert run.process.stdout.strip() == "I think I am done."
    assert len(responses.requests) == 1, "no Stop hook held the run"
    restored = texts(responses.requests[0], "developer")
    assert not any("ralphstate loop" in t for t in restored)
    assert read_state(project)["iteration"] == 0
    said = (run.process.stdout + run.process.stderr).replace(str(project.parent), "")
    assert "hook" not in said.lower()
