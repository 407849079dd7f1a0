"""Running the real Gemini CLI offline against the scripted Gemini API (fake_gemini).

The client is the one pinned in `gemini/package.json` (`npm ci` in `tests/e2e/gemini`
installs it), run by this machine's `node`; `RALPHSTATE_GEMINI_JS` names another
`gemini.js` instead. Each run gets a fresh `HOME` whose `~/.gemini/settings.json`
selects API-key auth (without it headless mode picks another auth type and exits 41),
and an environment built from nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e_support import E2E_DIR, client_env, install_hint, json_result, pinned, run_client
from fake_gemini import FakeGeminiAPI

PINNED = pinned("gemini", "@google/gemini-cli")


def find_gemini() -> tuple[list[str] | None, str]:
    """The command that starts the client, or None and why not."""
    node = shutil.which("node")
    if node is None:
        return None, "Gemini CLI needs node, and there is none on PATH"
    named = os.environ.get("RALPHSTATE_GEMINI_JS")
    script = (
        Path(named)
        if named
        else E2E_DIR / "gemini" / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    )
    if not script.is_file():
        return None, f"Gemini CLI {PINNED} is not installed; {install_hint('gemini')}"
    return [node, str(script)], "RALPHSTATE_GEMINI_JS" if named else f"pinned {PINNED}"


def base_env(tmp: Path, api: FakeGeminiAPI, *, retries: bool = True) -> dict[str, str]:
    """The client's environment, and `~/.gemini/settings.json` choosing API-key auth
    (and without `retries`, one attempt per request, so an error ends the run at once)."""
    home = tmp / "home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    if not retries:
        settings["general"] = {"maxAttempts": 1}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return client_env(
        home,
        GOOGLE_GEMINI_BASE_URL=api.base_url,
        GEMINI_API_KEY="test-key",
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )


@dataclass
class GeminiRun:
    process: subprocess.CompletedProcess[str]
    result: dict[str, Any]


def run_gemini(
    command: list[str], project: Path, prompt: str, env: dict[str, str], timeout: float = 60
) -> GeminiRun:
    """`gemini -p PROMPT --output-format json --approval-mode yolo` in `project` (without
    yolo, headless mode offers no shell tool)."""
    argv = [*command, "-p", prompt, "--output-format", "json", "--approval-mode", "yolo"]
    done = run_client(argv, project, env, timeout)
    return GeminiRun(done, json_result(done, "gemini"))
