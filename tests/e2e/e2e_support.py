"""What the end-to-end tests share: finding the pinned clients, the environment built
from nothing that each runs in, the loopback server under the scripted APIs, running
`ralphstate` in a project and reading the loop back, and the files a test sets up
around the Claude Code client. Each client's own recipe stays in its own module
(`codex_fixtures.py`, ...); the fixtures are in conftest.py."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest

E2E_DIR = Path(__file__).resolve().parent
PINNED_VERSION: str = json.loads((E2E_DIR / "package.json").read_text())["dependencies"][
    "@anthropic-ai/claude-code"
]
# run_claude(project, prompt, *args, timeout=90, env=None) -> (process, JSON result)
RunClaude = Callable[..., tuple[subprocess.CompletedProcess[str], dict[str, Any]]]
# cli(*args, ok=True) -> the process of `ralphstate ARGS` in the project
Cli = Callable[..., subprocess.CompletedProcess[str]]

INSTALL_HINT = "run `npm ci` in tests/e2e, or set RALPHSTATE_CLAUDE_BIN to a claude binary"

# Keeps the client from reaching anything but ANTHROPIC_BASE_URL. Without them it
# looks up telemetry hosts in DNS and probes the base URL with `HEAD /api/hello`.
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}


def claude_client_env(path: str, home: Path, scratch: Path, base_url: str) -> dict[str, str]:
    """The whole environment of Claude Code, built from nothing: `scratch` for its
    temporary files, the scripted API at `base_url`, and the switches that keep it
    quiet."""
    return {
        "PATH": path,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TMPDIR": str(scratch),
        "CLAUDE_CODE_TMPDIR": str(scratch),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-key",
        **QUIET_ENV,
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


class ScriptedHandler(BaseHTTPRequestHandler):
    """The request handler the scripted APIs build on: quiet, HTTP/1.1, and `owner`,
    the API object whose script answers."""

    owner: Any
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def read_raw(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def reply(
        self, status: int, payload: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)


Scripted = TypeVar("Scripted", bound="ScriptedAPI")


class ScriptedAPI:
    """What the scripted API stand-ins share: a script of turns, each the answer to one
    request (a list, or a callable that receives the request body and returns one),
    the exceptions callable turns raised, and a loopback server whose handler (the
    class's `handler`) reads the API as its `owner`."""

    handler: type[ScriptedHandler]
    thread_name: str

    def __init__(self, script: list[Any] | None = None) -> None:
        self.script: list[Any] = list(script or [])
        # Exceptions raised by callable turns; the turn is answered with a text naming it.
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._served = 0
        self._http: LoopbackServer | None = None

    def said(self, content: str) -> list[Any]:
        """A turn in which the model says `content` (this API's text item)."""
        raise NotImplementedError

    def start(self: Scripted) -> Scripted:
        handler = type("Handler", (self.handler,), {"owner": self})
        self._http = LoopbackServer(handler, self.thread_name)
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self: Scripted) -> Scripted:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._http is not None, "server not started"
        return self._http.port

    def add_turns(self, *turns: Any) -> None:
        """Append turns to the script (e.g. before a second run of the client)."""
        with self._lock:
            self.script.extend(turns)

    def unused_turns(self) -> int:
        """How many turns of the script have not been asked for yet."""
        with self._lock:
            return len(self.script) - self._served

    def next_turn(self, body: dict[str, Any]) -> list[Any]:
        """The next turn of the script for this request; a plain `done` once it has run
        out, and a text naming the exception when a callable turn raises one."""
        with self._lock:
            if self._served >= len(self.script):
                return self.said("done")
            turn = self.script[self._served]
            self._served += 1
        if not callable(turn):
            return list(turn)
        try:
            return list(turn(body))
        except BaseException as error:  # noqa: BLE001 - reported by the test at teardown
            with self._lock:
                self.errors.append(error)
            return self.said(f"script error: {error!r}")


class Prompts(list[str]):
    """What the client sent the turns made with `after`: `read(body)` of each request
    (the block reason in the newest user message, as that client puts it)."""

    def __init__(self, read: Callable[[dict[str, Any]], str]) -> None:
        super().__init__()
        self.read = read

    def after(self, reply: list[Any]) -> Callable[[dict[str, Any]], list[Any]]:
        """A turn that keeps what the request says, then answers `reply`."""

        def turn(body: dict[str, Any]) -> list[Any]:
            self.append(self.read(body))
            return reply

        return turn


def serving(server: Scripted) -> Iterator[Scripted]:
    """A fixture's body for a scripted API: started, stopped after the test, and the
    first exception a callable turn raised fails the test at teardown."""
    server.start()
    try:
        yield server
    finally:
        server.stop()
    if server.errors:
        raise server.errors[0]


# -- the clients' environment --------------------------------------------------------


def path_with_this_python() -> str:
    """PATH with this interpreter's directory first, so hook commands (and `python` in
    the model's shell commands) find this `ralphstate`."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def client_env(home: Path, **variables: str) -> dict[str, str]:
    """The environment of a client other than Claude Code, built from nothing: `home`
    (made here) as HOME, this test's ralphstate home, and `variables`."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": path_with_this_python(),
        "HOME": str(home),
        "USERPROFILE": str(home),
        "LANG": "C.UTF-8",
        "RALPHSTATE_HOME": os.environ["RALPHSTATE_HOME"],
        **variables,
    }
    for name in ("SYSTEMROOT", "TEMP", "TMP"):  # Windows needs these to start anything
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


# -- finding a pinned client ---------------------------------------------------------

# The npm platform package names, as most clients spell them.
PLATFORMS = {
    ("Linux", "x86_64"): "linux-x64",
    ("Linux", "aarch64"): "linux-arm64",
    ("Darwin", "x86_64"): "darwin-x64",
    ("Darwin", "arm64"): "darwin-arm64",
    ("Windows", "AMD64"): "win32-x64",
    ("Windows", "ARM64"): "win32-arm64",
}


def pinned(folder: str, package: str) -> str:
    """The version of `package` that `tests/e2e/FOLDER/package.json` pins."""
    manifest = json.loads((E2E_DIR / folder / "package.json").read_text())
    return str(manifest["dependencies"][package])


def install_hint(folder: str) -> str:
    return f"install it with `cd tests/e2e/{folder} && npm ci`"


def find_native(
    client: str,
    variable: str,
    folder: str,
    version: str,
    binary: Callable[[str, str], Path],
    platforms: dict[tuple[str, str], str] = PLATFORMS,
) -> tuple[Path | None, str]:
    """A client's native binary and where it came from, or None and why not.

    The binary `variable` names, else `binary(platform package, executable name)`
    under `tests/e2e/FOLDER/node_modules` when it is there (the executable is named
    after the folder).
    """
    named = os.environ.get(variable)
    if named:
        return Path(named), variable
    package = platforms.get((platform.system(), platform.machine()))
    if package is None:
        return None, f"no {client} build for {platform.system()} {platform.machine()}"
    name = folder + (".exe" if os.name == "nt" else "")
    found = E2E_DIR / folder / "node_modules" / binary(package, name)
    if not found.is_file():
        return None, f"{client} {version} is not installed; {install_hint(folder)}"
    return found, f"pinned {version}"


Found = TypeVar("Found")


def installed(found: tuple[Found | None, str], tests: str) -> Found:
    """The client `find_...` found; without one, the module's tests are skipped, and
    the reason is printed."""
    client, detail = found
    if client is None:
        print(f"skipping the {tests} end-to-end tests: {detail}")
        pytest.skip(detail)
    return client


def run_client(
    argv: list[str], project: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """A client run to its end in `project`, with nothing on its stdin."""
    return subprocess.run(
        argv,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def json_result(done: subprocess.CompletedProcess[str], client: str) -> dict[str, Any]:
    """The JSON object a client printed as its result; the test fails without one."""
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        pytest.fail(
            f"{client} exited {done.returncode} without a JSON result\n"
            f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        )
    return result


# -- ralphstate in a project, and the loop it keeps ----------------------------------


def ralphstate(
    project: Path, env: dict[str, str], *args: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """A person running `ralphstate ARGS` in the project, with the client's HOME."""
    return run_client([sys.executable, "-m", "ralphstate", *args], project, env, timeout)


def rs(project: Path, env: dict[str, str], *args: str) -> str:
    """`ralphstate ARGS` in `project`; it must succeed."""
    done = ralphstate(project, env, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def trust_at_terminal(project: Path, env: dict[str, str]) -> None:
    """The person types `ralphstate trust` at their terminal (a real pty), with the
    client's environment: checks a process with no terminal gave wait for it."""
    from tests.helpers.terminal import at_terminal

    typed = at_terminal(["trust"], cwd=project, env=env, inherit=False)
    assert (typed.code, typed.asked) == (0, True), typed.screen


def rs_command(*args: str) -> str:
    """The shell command that runs `ralphstate ARGS` with this interpreter."""
    return shlex.join([sys.executable, "-m", "ralphstate", *args])


def read_state(project: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(
        (project / ".loop" / "state.json").read_text(encoding="utf-8")
    )
    return state


def history(project: Path, event: str | None = None) -> list[dict[str, Any]]:
    """The loop's history, or only its `event` entries."""
    path = project / ".loop" / "history.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line) for line in lines if line]
    return [e for e in entries if event is None or e["event"] == event]


def claude_owned_loop(project: Path, env: dict[str, str]) -> bytes:
    """A loop started in a Claude Code session; its state file as written."""
    rs(
        project,
        {**env, "CLAUDE_CODE_SESSION_ID": "claude-session-1"},
        "init",
        "Build it",
        "-c",
        "x",
    )
    return (project / ".loop" / "state.json").read_bytes()


def installed_project(
    tmp_path: Path, env: dict[str, str], agent: str, hooks: str
) -> tuple[Path, dict[str, str]]:
    """`ralphstate install --agent AGENT` in a fresh project ("my project", a path
    with a space); it must write `hooks`."""
    project = tmp_path / "my project"
    project.mkdir(exist_ok=True)
    rs(project, env, "install", "--agent", agent)
    assert (project / hooks).is_file()
    return project, env
