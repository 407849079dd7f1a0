"""Running the real Codex CLI offline against the scripted Responses API.

The client is the one pinned in `codex/package.json` (`npm ci` in `tests/e2e/codex`
installs it); `RALPHSTATE_CODEX_BIN` names another binary instead. Each run gets a
fresh `CODEX_HOME` whose `config.toml` points a mock model provider at the local
server, a fresh `HOME`, and an environment built from nothing.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from fake_responses import FakeResponsesAPI

HERE = Path(__file__).resolve().parent
PINNED = "0.169.0"
INSTALL_HINT = "install it with `cd tests/e2e/codex && npm ci`"
_TRIPLES = {
    ("Linux", "x86_64"): ("linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64"): ("linux-arm64", "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64"): ("darwin-x64", "x86_64-apple-darwin"),
    ("Darwin", "arm64"): ("darwin-arm64", "aarch64-apple-darwin"),
    ("Windows", "AMD64"): ("win32-x64", "x86_64-pc-windows-msvc"),
    ("Windows", "ARM64"): ("win32-arm64", "aarch64-pc-windows-msvc"),
}


def find_codex() -> tuple[Path | None, str]:
    """The Codex binary and where it came from, or None and why not."""
    named = os.environ.get("RALPHSTATE_CODEX_BIN")
    if named:
        return Path(named), "RALPHSTATE_CODEX_BIN"
    found = _TRIPLES.get((platform.system(), platform.machine()))
    if found is None:
        return None, f"no Codex CLI build for {platform.system()} {platform.machine()}"
    package, triple = found
    name = "codex.exe" if os.name == "nt" else "codex"
    binary = (
        (HERE / "codex" / "node_modules" / "@openai" / f"codex-{package}" / "vendor" / triple)
        / "bin"
        / name
    )
    if not binary.is_file():
        return None, f"Codex CLI {PINNED} is not installed; {INSTALL_HINT}"
    return binary, f"pinned {PINNED}"


@dataclass
class CodexRun:
    process: subprocess.CompletedProcess[str]
    session_id: str | None


def write_config(codex_home: Path, api: FakeResponsesAPI, project: Path) -> None:
    """A mock provider at the scripted server, and trust for the project."""
    codex_home.mkdir(parents=True, exist_ok=True)
    project_key = str(project).replace("\\", "\\\\").replace('"', '\\"')
    (codex_home / "config.toml").write_text(
        'model = "gpt-test"\n'
        'model_provider = "mock"\n'
        "\n"
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{api.base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "MOCK_API_KEY"\n'
        "\n"
        f'[projects."{project_key}"]\n'
        'trust_level = "trusted"\n',
        encoding="utf-8",
    )


def base_env(tmp: Path, codex_home: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "HOME": str(home),
        "USERPROFILE": str(home),
        "CODEX_HOME": str(codex_home),
        "MOCK_API_KEY": "test-key",
        "LANG": "C.UTF-8",
        "RALPHSTATE_HOME": os.environ["RALPHSTATE_HOME"],
    }
    for name in ("SYSTEMROOT", "TEMP", "TMP"):  # Windows needs these to start anything
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


def run_codex(
    binary: Path, project: Path, prompt: str, env: dict[str, str], timeout: float = 60
) -> CodexRun:
    """`codex exec PROMPT` in `project`, hooks run without the trust review."""
    command = [
        str(binary),
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-hook-trust",
        "--dangerously-bypass-approvals-and-sandbox",
        prompt,
    ]
    done = subprocess.run(
        command,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    found = re.search(r"^session id: (\S+)$", done.stderr, re.MULTILINE)
    return CodexRun(done, found.group(1) if found else None)
