"""Running the real opencode server offline against the scripted Messages API (fake_api).

The client is the one pinned in `opencode/package.json` (`npm ci` in
`tests/e2e/opencode` installs it): the native binary of the platform package;
`RALPHSTATE_OPENCODE_BIN` names another binary instead. `opencode serve` runs in the
project with an `opencode.json` that points its Anthropic provider at the scripted
server; the test drives it over its HTTP API (`POST /session`, `POST
/session/ID/prompt_async`) and waits for the session to rest. Each server gets a fresh
`HOME` and XDG directories, and an environment built from nothing.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from e2e_support import PLATFORMS, client_env, find_native, pinned

PINNED = pinned("opencode", "opencode-ai")
# opencode's platform packages say `windows`, not `win32`.
_PLATFORMS = {key: name.replace("win32", "windows") for key, name in PLATFORMS.items()}


def find_opencode() -> tuple[Path | None, str]:
    """The opencode binary and where it came from, or None and why not."""
    return find_native(
        "opencode",
        "RALPHSTATE_OPENCODE_BIN",
        "opencode",
        PINNED,
        lambda package, name: Path(f"opencode-{package}") / "bin" / name,
        _PLATFORMS,
    )


def write_config(project: Path, base_url: str) -> None:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "anthropic/claude-sonnet-4-5",
        "small_model": "anthropic/claude-sonnet-4-5",
        "provider": {"anthropic": {"options": {"baseURL": f"{base_url}/v1", "apiKey": "x"}}},
        "permission": {"bash": "allow", "edit": "allow", "external_directory": "allow"},
    }
    (project / "opencode.json").write_text(json.dumps(config, indent=2), encoding="utf-8")


def base_env(tmp: Path, project: Path, cache: Path) -> dict[str, str]:
    home = tmp / "home"
    return client_env(
        home,
        PWD=str(project),  # opencode finds the project from PWD
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(cache),
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_SHARE="1",
        # Nothing but the scripted API is reachable: a package fetch fails at once.
        npm_config_registry="http://127.0.0.1:9/",
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class OpencodeServer:
    """`opencode serve` in a project, and the few calls of its HTTP API a test needs."""

    def __init__(self, binary: Path, project: Path, env: dict[str, str], log: Path) -> None:
        self.port = _free_port()
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            [str(binary), "serve", "--hostname", "127.0.0.1", "--port", str(self.port)],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def call(self, method: str, path: str, body: object = None, timeout: float = 30) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            method=method,
            data=data,
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            raw = answer.read()
        return json.loads(raw) if raw else None

    def wait_up(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"opencode serve exited {self.process.returncode}")
            try:
                self.call("GET", "/session", timeout=5)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def prompt(self, text: str) -> str:
        """A new session prompted with `text`; its id."""
        session = self.call("POST", "/session", {})
        parts = [{"type": "text", "text": text}]
        self.call("POST", f"/session/{session['id']}/prompt_async", {"parts": parts})
        return str(session["id"])

    def busy(self) -> bool:
        status = self.call("GET", "/session/status") or {}
        return any(s.get("type") != "idle" for s in status.values())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
