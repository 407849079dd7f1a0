"""The network through an allowlist of hosts, for a bubblewrap agent (`run --allow-host`).

The agent gets a network namespace of its own (`--unshare-net`): no interface but its
own loopback, so the host's loopback servers and abstract sockets are out of reach. It
reaches the world only through a CONNECT proxy ralphstate runs outside, in the run's
own process: the proxy listens on a unix socket in a private directory of its own,
bound read-only into the sandbox at the same path. Inside, the sandbox's first process
is a small bridge (ralphstate's own Python, `BRIDGE`) that listens on the sandbox's
loopback at `PORT`, carries each connection to that socket, and starts the agent with
`HTTPS_PROXY` and `HTTP_PROXY` pointing at it.

The proxy allows one thing: `CONNECT HOST:443` for a host on the allowlist (the model
APIs of the run's agents, `API_HOSTS`, and the names the person gives). Anything else
gets `403` and is closed. A name may be directed by the person to an address of their
choosing (`--allow-host NAME=ADDRESS:PORT`): for a private mirror, and for the tests'
stand-in server on loopback.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ralphstate.core.errors import RalphstateError

# The loopback port of the bridge inside the sandbox's own network namespace.
PORT = 3128
SOCKET_NAME = "proxy.sock"
# The longest request head the proxy reads, and how long a target may take to answer.
HEAD_LIMIT = 8192
CONNECT_SECONDS = 15.0
# Each agent program's model API, allowed without being named.
API_HOSTS: dict[str, tuple[str, ...]] = {
    "claude": ("api.anthropic.com",),
    "codex": ("api.openai.com", "chatgpt.com"),
    "gemini": ("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com"),
    "copilot": ("api.githubcopilot.com", "api.github.com"),
    "opencode": ("api.anthropic.com", "api.openai.com"),
    "aider": ("api.anthropic.com", "api.openai.com"),
}

# The bridge, run by ralphstate's own Python as the sandbox's first process:
# argv is [socket path, port, "--", agent argv...]; it exits with the agent's code.
BRIDGE = r"""
import os, socket, sys, threading
path, port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def serve(listener):
    while True:
        inner, _ = listener.accept()
        outer = socket.socket(socket.AF_UNIX)
        try:
            outer.connect(path)
        except OSError:
            inner.close()
            continue
        for a, b in ((inner, outer), (outer, inner)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(64)
threading.Thread(target=serve, args=(listener,), daemon=True).start()
try:  # posix_spawnp, not subprocess: its import alone is most of a start
    pid = os.posix_spawnp(argv[0], argv, os.environ)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
except OSError as exc:
    sys.stderr.write(f"ralphstate: cannot start {argv[0]!r}: {exc.strerror}\n")
    code = 127
sys.exit(code if code >= 0 else 128 - code)
"""


def parse(entries: Iterable[str], chain: Iterable[list[str]]) -> dict[str, tuple[str, int]]:
    """The allowlist: each host name and where the proxy connects for it; the model
    APIs of the agents `chain` first. RalphstateError, one sentence, for a bad entry."""
    allowed: dict[str, tuple[str, int]] = {}
    for argv in chain:
        name = Path(argv[0]).name.lower().removesuffix(".exe") if argv else ""
        for host in API_HOSTS.get(name, ()):
            allowed[host] = (host, 443)
    for entry in entries:
        host, _, target = entry.partition("=")
        host = host.strip().lower()
        address, _, port = target.rpartition(":") if target else (host, "", "443")
        if not host or not address or not port.isdigit() or not 0 < int(port) < 65536:
            raise RalphstateError(
                f"--allow-host {entry!r} is neither a host name nor NAME=ADDRESS:PORT."
            )
        allowed[host] = (address.strip("[]"), int(port))
    return allowed


def _split(head: bytes) -> tuple[str, int] | None:
    """The host and port of a `CONNECT host:port HTTP/1.x` request, else None."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    words = line.split()
    if len(words) != 3 or words[0] != "CONNECT" or not words[2].startswith("HTTP/"):
        return None
    host, _, port = words[1].rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]").lower(), int(port)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    for end in (a, b):
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)


@dataclass
class Proxy:
    """The run's CONNECT proxy on a unix socket; started once, gone with the process."""

    allowed: dict[str, tuple[str, int]]
    directory: Path | None = None
    refused: list[str] = field(default_factory=list)
    _listener: socket.socket | None = None

    @property
    def path(self) -> Path:
        return Path(self.start()) / SOCKET_NAME

    def start(self) -> Path:
        """The private directory holding the proxy's socket, the proxy listening."""
        if self.directory is not None:
            return self.directory
        directory = Path(tempfile.mkdtemp(prefix="ralphstate-net-"))
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(directory / SOCKET_NAME))
        listener.listen(64)
        self.directory, self._listener = directory, listener
        atexit.register(self.stop)
        threading.Thread(target=self._serve, daemon=True).start()
        return directory

    def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _serve(self) -> None:
        while self._listener is not None:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        head = b""
        try:
            conn.settimeout(CONNECT_SECONDS)
            while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
                data = conn.recv(HEAD_LIMIT)
                if not data:
                    break
                head += data
            wanted = _split(head)
            target = self.allowed.get(wanted[0]) if wanted and wanted[1] == 443 else None
            if wanted is None or target is None:
                self.refused.append(head.split(b"\r\n", 1)[0].decode("latin-1")[:200])
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                conn.close()
                return
            outer = socket.create_connection(target, timeout=CONNECT_SECONDS)
        except OSError:
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        conn.settimeout(None)
        outer.settimeout(None)
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        rest = head.split(b"\r\n\r\n", 1)[1]
        if rest:
            outer.sendall(rest)
        threading.Thread(target=_pipe, args=(outer, conn), daemon=True).start()
        _pipe(conn, outer)


def inside(proxy: Proxy, argv: list[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """bwrap's extra options for `proxy`, `argv` behind the bridge, and the variables
    that point the agent's clients at it."""
    directory = str(proxy.start())
    options = ["--unshare-net", "--ro-bind", directory, directory]
    bridged = [sys.executable, "-I", "-S", "-c", BRIDGE, str(proxy.path), str(PORT), "--"]
    url = f"http://127.0.0.1:{PORT}"
    env = {name: url for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")}
    env.update({"NO_PROXY": "", "no_proxy": ""})
    return options, [*bridged, *argv], env
