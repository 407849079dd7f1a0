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
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fake_gemini import FakeGeminiAPI

HERE = Path(__file__).resolve().parent
PINNED = json.loads((HERE / "gemini" / "package.json").read_text())["dependencies"][
    "@google/gemini-cli"
]
INSTALL_HINT = "install it with `cd tests/e2e/gemini && npm ci`"


def find_gemini() -> tuple[list[str] | None, str]:
    """The command that starts the client, or None and why not."""
    node = shutil.which("node")
    if node is None:
        return None, "Gemini CLI needs node, and there is none on PATH"
    named = os.environ.get("RALPHSTATE_GEMINI_JS")
    script = (
        Path(named)
        if named
        else HERE / "gemini" / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    )
    if not script.is_file():
        return None, f"Gemini CLI {PINNED} is not installed; {INSTALL_HINT}"
    return [node, str(script)], "RALPHSTATE_GEMINI_JS" if named else f"pinned {PINNED}"


def base_env(tmp: Path, api: FakeGeminiAPI) -> dict[str, str]:
    home = tmp / "home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(auth), encoding="utf-8")
    env = {
        # This interpreter's directory first, so the hooks' Python is this one.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "HOME": str(home),
        "USERPROFILE": str(home),
        "LANG": "C.UTF-8",
        "GOOGLE_GEMINI_BASE_URL": api.base_url,
        "GEMINI_API_KEY": "test-key",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "RALPHSTATE_HOME": os.environ["RALPHSTATE_HOME"],
    }
    for name in ("SYSTEMROOT", "TEMP", "TMP"):  # Windows needs these to start anything
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


@dataclass
class GeminiRun:
    process: subprocess.CompletedProcess[str]
    result: dict[str, Any]


def run_gemini(
    command: list[str], project: Path, prompt: str, env: dict[str, str], timeout: float = 60
) -> GeminiRun:
    """`gemini -p PROMPT --output-format json --approval-mode yolo` in `project` (without
    yolo, headless mode offers no shell tool)."""
    done = subprocess.run(
        [*command, "-p", prompt, "--output-format", "json", "--approval-mode", "yolo"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        raise AssertionError(
            f"gemini exited {done.returncode} without a JSON result\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        )
    return GeminiRun(done, result)
