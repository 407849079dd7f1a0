"""`ralphstate run` with the real Codex CLI and Gemini CLI as its agent, offline, while
the scripted API answers with a rate limit: the run recognises what the client really
prints (not only the recorded fixtures in tests/fixtures/outputs/) and, with
`--on-limit pause`, pauses the loop on it.

The clients' own retries are off (Codex `request_max_retries = 0`, Gemini CLI
`general.maxAttempts = 1`), as in tests/e2e/record_outputs.py. Skipped, saying how to
install it, when a client is not installed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from codex_fixtures import base_env as codex_env
from codex_fixtures import find_codex, write_config
from e2e_support import history, ralphstate, read_state
from fake_gemini import FakeGeminiAPI
from fake_gemini import api_error as gemini_error
from fake_responses import FakeResponsesAPI, response_failed
from fake_responses import api_error as responses_error
from gemini_fixtures import base_env as gemini_env
from gemini_fixtures import find_gemini
from record_outputs import OPENAI_OVERLOADED, OPENAI_RATE, google_quota

from ralphstate.run.spawn import join_command

pytestmark = pytest.mark.e2e


def run_paused_on_a_limit(project: Path, env: dict[str, str], agent: str) -> dict[str, Any]:
    done = ralphstate(project, env, "init", "Build the parser", "-c", "tests pass")
    assert done.returncode == 0, done.stderr
    done = ralphstate(
        project, env, "run", "--no-sandbox", "--agent", agent, "--prompt-mode", "arg",
        "--on-limit", "pause",
        "--json", timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    assert (out["outcome"], out["reason"]) == ("paused", "limit")
    assert [r["decision"] for r in out["runs"]] == ["limit"]
    loop = read_state(project)
    assert (loop["status"], loop["pauseReason"], loop["iteration"]) == ("paused", "limit", 0)
    return out


CODEX_ANSWERS = {
    "rate_limit": (
        responses_error(429, OPENAI_RATE, {"retry-after": "2"}),
        "rate limit: exceeded retry limit, last status: 429 Too Many Requests",
    ),
    "overloaded": (
        response_failed(OPENAI_OVERLOADED),
        "overloaded: Selected model is at capacity. Please try a different model.",
    ),
}


@pytest.mark.parametrize("kind", sorted(CODEX_ANSWERS))
def test_codex_on_a_limit_pauses_the_run(kind: str, tmp_path: Path) -> None:
    binary, detail = find_codex()
    if binary is None:
        pytest.skip(detail)
    answer, said = CODEX_ANSWERS[kind]
    api = FakeResponsesAPI([[answer]]).start()
    try:
        project = tmp_path / "project"
        project.mkdir()
        codex_home = tmp_path / "codex-home"
        write_config(codex_home, api, project, retries=False)
        env = codex_env(tmp_path, codex_home)
        agent = join_command([str(binary), "exec", "--json", "--skip-git-repo-check"])
        out = run_paused_on_a_limit(project, env, agent)
    finally:
        api.stop()
    assert len(api.requests) == 1
    assert out["detail"] == said
    [limit] = [e for e in history(project) if e["event"] == "limit"]
    assert (limit["kind"], limit.get("resetsAt")) == (kind, None)


GEMINI_ANSWERS = {
    "rate_limit": (
        google_quota("Minute", 10, "39.033478657s"),
        "rate limit: You exceeded your current quota",
        True,
    ),
    "usage_limit": (
        google_quota("Day", 250, "24.545235313s"),
        "usage limit: You have exhausted your daily quota on this model.",
        False,
    ),
}


@pytest.mark.parametrize("kind", sorted(GEMINI_ANSWERS))
def test_gemini_over_its_quota_pauses_the_run(kind: str, tmp_path: Path) -> None:
    command, detail = find_gemini()
    if command is None:
        pytest.skip(detail)
    quota, said, resets = GEMINI_ANSWERS[kind]
    api = FakeGeminiAPI([[gemini_error(429, quota)]]).start()
    try:
        project = tmp_path / "project"
        project.mkdir()
        env = gemini_env(tmp_path, api, retries=False)
        agent = join_command([*command, "--output-format", "json", "-p"])
        out = run_paused_on_a_limit(project, env, agent)
    finally:
        api.stop()
    assert len(api.requests) == 1
    assert out["detail"].startswith(said)
    assert out["runs"][0]["exit"] == 173  # 429, as the client exits with it
    [limit] = [e for e in history(project) if e["event"] == "limit"]
    assert limit["kind"] == kind and (limit.get("resetsAt") is not None) == resets
