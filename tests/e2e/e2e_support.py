"""Finding the pinned Claude Code client, and the files a test sets up around it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

E2E_DIR = Path(__file__).resolve().parent
PINNED_VERSION: str = json.loads((E2E_DIR / "package.json").read_text())["dependencies"][
    "@anthropic-ai/claude-code"
]
# run_claude(project, prompt, *args, timeout=30, env=None) -> (process, JSON result)
RunClaude = Callable[..., tuple[subprocess.CompletedProcess[str], dict[str, Any]]]

INSTALL_HINT = "run `npm ci` in tests/e2e, or set RALPHSTATE_CLAUDE_BIN to a claude binary"

# Keeps the client from reaching anything but ANTHROPIC_BASE_URL. Without them it
# looks up telemetry hosts in DNS and probes the base URL with `HEAD /api/hello`.
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}


def candidates() -> list[Path]:
    """Where `npm ci` puts the client, best first.

    The native binary in the platform package (`claude-code-linux-x64/claude`, ...)
    runs whether or not npm ran the wrapper's postinstall; `node_modules/.bin/claude`
    is that binary only after the postinstall, and a stub that exits 1 without it.
    """
    modules = E2E_DIR / "node_modules" / "@anthropic-ai"
    native = sorted(modules.glob("claude-code-*/claude"))
    native += sorted(modules.glob("claude-code-*/claude.exe"))
    return [*native, E2E_DIR / "node_modules" / ".bin" / "claude"]


def version_of(binary: Path) -> str | None:
    """`2.1.330` for a binary that answers `--version` like Claude Code, else None."""
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", ""), **QUIET_ENV},
        )
    except OSError:
        return None
    if done.returncode != 0 or "Claude Code" not in done.stdout:
        return None
    return done.stdout.split()[0]


@cache
def find_claude() -> tuple[Path | None, str]:
    """The client and its version, or None and the reason there is none."""
    override = os.environ.get("RALPHSTATE_CLAUDE_BIN")
    if override:
        binary = Path(override)
        version = version_of(binary)
        if version is None:
            return None, f"RALPHSTATE_CLAUDE_BIN={override} is not a working claude binary"
        return binary, version
    for binary in candidates():
        if binary.is_file():
            version = version_of(binary)
            if version is not None:
                return binary, version
    return None, f"Claude Code {PINNED_VERSION} is not installed: {INSTALL_HINT}"


def misfit(binary: Path, version: str) -> str | None:
    """Why an installed client is not the pinned one, or None when it is.

    A client named by RALPHSTATE_CLAUDE_BIN may be any version.
    """
    if os.environ.get("RALPHSTATE_CLAUDE_BIN") or version == PINNED_VERSION:
        return None
    return (
        f"{binary} is Claude Code {version} but package.json pins {PINNED_VERSION}: "
        "run `npm ci` in tests/e2e"
    )


def write_hooks(project: Path, hooks: dict[str, str]) -> Path:
    """Write the project's `.claude/settings.local.json` (where `ralphstate install`
    writes by default), one command per hook event."""
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": command}]}]
            for event, command in hooks.items()
        }
    }
    settings.write_text(json.dumps(config, indent=2) + "\n")
    return settings


def transcript_dir(home: Path, project: Path) -> Path:
    """Where the client writes a project's transcripts (`<session id>.jsonl`).

    The folder name is the absolute project path with every character that is not an
    ASCII letter or digit replaced by `-`.
    """
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(project))
    return home / ".claude" / "projects" / name


PROBE_SCRIPT = r'''
"""Hook probe: records what a hook receives, then answers as the test told it to."""
import json, os, sys
from pathlib import Path

event, folder = sys.argv[1], Path(sys.argv[2])
raw = sys.stdin.read()


def chain():
    """(pid, command line) from this process up to the first process we cannot read."""
    found, pid = [], os.getpid()
    while pid > 1:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        found.append([pid, [a.decode(errors="replace") for a in argv if a]])
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return found


n = len(list(folder.glob(f"{event}.call-*.json")))
record = {"stdin": raw, "env": dict(os.environ), "pid": os.getpid(),
          "ppid": os.getppid(), "chain": chain(), "cwd": os.getcwd()}
(folder / f"{event}.call-{n}.json").write_text(json.dumps(record))
for name in (f"{event}.reply-{n}.json", f"{event}.reply.json"):
    reply = folder / name
    if reply.exists():
        answer = json.loads(reply.read_text())
        sys.stdout.write(answer["stdout"])
        sys.stderr.write(answer["stderr"])
        sys.exit(answer["exit"])
'''


@dataclass
class ProbeCall:
    """One run of a probed hook."""

    input: dict[str, Any]
    env: dict[str, str]
    pid: int
    ppid: int
    chain: list[tuple[int, list[str]]]
    cwd: str


class HookProbe:
    """A hook command that records its input, environment and parent processes.

    `command(event)` is the shell command to put in a settings file: the absolute path
    of this interpreter running a script written into `folder`, both quoted.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.script = folder / "hook_probe.py"
        self.script.write_text(PROBE_SCRIPT)

    def command(self, event: str) -> str:
        parts = [sys.executable, str(self.script), event, str(self.folder)]
        return " ".join(shlex.quote(part) for part in parts)

    def reply(
        self,
        event: str,
        output: dict[str, Any] | str = "",
        *,
        call: int | None = None,
        exit_code: int = 0,
        stderr: str = "",
    ) -> None:
        """Answer call number `call` of `event` (every call when None) like this."""
        stdout = output if isinstance(output, str) else json.dumps(output)
        name = f"{event}.reply.json" if call is None else f"{event}.reply-{call}.json"
        answer = {"stdout": stdout, "stderr": stderr, "exit": exit_code}
        (self.folder / name).write_text(json.dumps(answer))

    def calls(self, event: str) -> list[ProbeCall]:
        found = []
        for n in range(len(list(self.folder.glob(f"{event}.call-*.json")))):
            record = json.loads((self.folder / f"{event}.call-{n}.json").read_text())
            record["input"] = json.loads(record.pop("stdin"))
            record["chain"] = [(pid, argv) for pid, argv in record["chain"]]
            found.append(ProbeCall(**record))
        return found


class LoopbackServer:
    """An HTTP server on a free loopback port, served from a daemon thread; the scripted
    API stand-ins start one each."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
