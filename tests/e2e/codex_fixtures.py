"""Running the real Codex CLI offline against the scripted Responses API.

The client is the one pinned in `codex/package.json` (`npm ci` in `tests/e2e/codex`
installs it); `RALPHSTATE_CODEX_BIN` names another binary instead. Each run gets a
fresh `CODEX_HOME` whose `config.toml` points a mock model provider at the local
server, a fresh `HOME`, and an environment built from nothing.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from e2e_support import client_env, find_native, pinned, run_client
from fake_responses import FakeResponsesAPI

PINNED = pinned("codex", "@openai/codex")
# The Rust target triple of each platform package's binary.
_TRIPLES = {
    "linux-x64": "x86_64-unknown-linux-musl",
    "linux-arm64": "aarch64-unknown-linux-musl",
    "darwin-x64": "x86_64-apple-darwin",
    "darwin-arm64": "aarch64-apple-darwin",
    "win32-x64": "x86_64-pc-windows-msvc",
    "win32-arm64": "aarch64-pc-windows-msvc",
}


def find_codex() -> tuple[Path | None, str]:
    """The Codex binary and where it came from, or None and why not."""
    return find_native(
        "Codex CLI",
        "RALPHSTATE_CODEX_BIN",
        "codex",
        PINNED,
        lambda package, name: (
            Path("@openai") / f"codex-{package}" / "vendor" / _TRIPLES[package] / "bin" / name
        ),
    )


@dataclass
class CodexRun:
    process: subprocess.CompletedProcess[str]
    session_id: str | None


def write_config(
    codex_home: Path, api: FakeResponsesAPI, project: Path, *, retries: bool = True
) -> None:
    """A mock provider at the scripted server, and trust for the project. Without
    `retries` the client does not retry a failed request or stream, so an error ends
    the run at once."""
    codex_home.mkdir(parents=True, exist_ok=True)
    project_key = str(project).replace("\\", "\\\\").replace('"', '\\"')
    no_retries = "" if retries else "request_max_retries = 0\nstream_max_retries = 0\n"
    (codex_home / "config.toml").write_text(
        'model = "gpt-test"\n'
        'model_provider = "mock"\n'
        "\n"
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{api.base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "MOCK_API_KEY"\n'
        f"{no_retries}"
        "\n"
        f'[projects."{project_key}"]\n'
        'trust_level = "trusted"\n',
        encoding="utf-8",
    )


def base_env(tmp: Path, codex_home: Path) -> dict[str, str]:
    return client_env(tmp / "home", CODEX_HOME=str(codex_home), MOCK_API_KEY="test-key")


def run_codex(
    binary: Path,
    project: Path,
    prompt: str,
    env: dict[str, str],
    timeout: float = 60,
    *,
    bypass_hook_trust: bool = True,
) -> CodexRun:
    """`codex exec PROMPT` in `project`, hooks run without the trust review (unless
    `bypass_hook_trust` is False: then as a person's run, whose hooks must be trusted)."""
    bypass = ["--dangerously-bypass-hook-trust"] if bypass_hook_trust else []
    command = [
        str(binary),
        "exec",
        "--skip-git-repo-check",
        *bypass,
        "--dangerously-bypass-approvals-and-sandbox",
        prompt,
    ]
    done = run_client(command, project, env, timeout)
    found = re.search(r"^session id: (\S+)$", done.stderr, re.MULTILINE)
    return CodexRun(done, found.group(1) if found else None)
