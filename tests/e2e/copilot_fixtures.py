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
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PINNED = json.loads((HERE / "copilot" / "package.json").read_text())["dependencies"][
    "@github/copilot"
]
INSTALL_HINT = "install it with `cd tests/e2e/copilot && npm ci`"
_PLATFORMS = {
    ("Linux", "x86_64"): "linux-x64",
    ("Linux", "aarch64"): "linux-arm64",
    ("Darwin", "x86_64"): "darwin-x64",
    ("Darwin", "arm64"): "darwin-arm64",
    ("Windows", "AMD64"): "win32-x64",
    ("Windows", "ARM64"): "win32-arm64",
}


def find_copilot() -> tuple[Path | None, str]:
    """The Copilot CLI binary and where it came from, or None and why not."""
    named = os.environ.get("RALPHSTATE_COPILOT_BIN")
    if named:
        return Path(named), "RALPHSTATE_COPILOT_BIN"
    package = _PLATFORMS.get((platform.system(), platform.machine()))
    if package is None:
        return None, f"no Copilot CLI build for {platform.system()} {platform.machine()}"
    name = "copilot.exe" if os.name == "nt" else "copilot"
    binary = HERE / "copilot" / "node_modules" / "@github" / f"copilot-{package}" / name
    if not binary.is_file():
        return None, f"Copilot CLI {PINNED} is not installed; {INSTALL_HINT}"
    return binary, f"pinned {PINNED}"


def base_env(tmp: Path, cache: Path, base_url: str) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {
        # This interpreter's directory first, so the hooks' Python is this one.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "HOME": str(home),
        "USERPROFILE": str(home),
        "XDG_CACHE_HOME": str(cache),
        "LANG": "C.UTF-8",
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_TYPE": "anthropic",
        "COPILOT_PROVIDER_BASE_URL": base_url,
        "COPILOT_PROVIDER_API_KEY": "test-key",
        "COPILOT_MODEL": "claude-sonnet-4.5",
        "RALPHSTATE_HOME": os.environ["RALPHSTATE_HOME"],
    }
    for name in ("SYSTEMROOT", "TEMP", "TMP"):  # Windows needs these to start anything
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


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
    done = subprocess.run(
        command,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    events = []
    for line in done.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return CopilotRun(done, events)
