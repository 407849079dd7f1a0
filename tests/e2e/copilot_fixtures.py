"""Running the real GitHub Copilot CLI offline, through its Anthropic provider, against
the scripted Messages API (fake_api).

The client is the one pinned in `copilot/package.json` (`npm ci` in
`tests/e2e/copilot` installs it): the native binary of the platform package;
`RALPHSTATE_COPILOT_BIN` names another binary instead. Each run gets a fresh `HOME` and
an environment built from nothing. The binary unpacks its JavaScript into
`$XDG_CACHE_HOME/copilot/pkg` at its first start (some 5 s): the tests share one cache
directory, so that happens once per test session.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e_support import client_env, find_native, pinned, run_client

PINNED = pinned("copilot", "@github/copilot")


def find_copilot() -> tuple[Path | None, str]:
    """The Copilot CLI binary and where it came from, or None and why not."""
    return find_native(
        "Copilot CLI",
        "RALPHSTATE_COPILOT_BIN",
        "copilot",
        PINNED,
        lambda package, name: Path("@github") / f"copilot-{package}" / name,
    )


def base_env(tmp: Path, cache: Path, base_url: str) -> dict[str, str]:
    return client_env(
        tmp / "home",
        XDG_CACHE_HOME=str(cache),
        COPILOT_OFFLINE="true",
        COPILOT_AUTO_UPDATE="false",
        COPILOT_PROVIDER_TYPE="anthropic",
        COPILOT_PROVIDER_BASE_URL=base_url,
        COPILOT_PROVIDER_API_KEY="test-key",
        COPILOT_MODEL="claude-sonnet-4.5",
    )


@dataclass
class CopilotRun:
    process: subprocess.CompletedProcess[str]
    events: list[dict[str, Any]]  # the JSON lines it printed

    @property
    def session_id(self) -> str | None:
        found = [e.get("sessionId") for e in self.events if e.get("type") == "result"]
        return found[-1] if found else None


def run_copilot(
    binary: Path,
    project: Path,
    prompt: str,
    env: dict[str, str],
    *,
    trust: bool = True,
    timeout: float = 60,
) -> CopilotRun:
    """`copilot -p PROMPT --allow-all-tools --allow-all-paths --output-format json
    [--trust-folder]` (the hooks run `ralphstate` from outside the project: without
    `--allow-all-paths` its bash tool refuses them)."""
    command = [str(binary), "-p", prompt, "--allow-all-tools", "--allow-all-paths"]
    command += ["--output-format", "json"]
    if trust:
        command.append("--trust-folder")
    done = run_client(command, project, env, timeout)
    events = []
    for line in done.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return CopilotRun(done, events)
