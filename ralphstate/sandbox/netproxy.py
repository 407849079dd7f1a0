"""The network through an allowlist of hosts (sandbox/netallow.py), for a bubblewrap
agent: the default of `run` under bubblewrap.

The agent gets a network namespace of its own (`--unshare-net`): no interface but its
own loopback, so the host's loopback servers and abstract sockets are out of reach. It
reaches the world only through a proxy ralphstate runs outside, in the run's own
process, started once for the run: it listens on unix sockets in a private directory
of its own, bound read-only into the sandbox at the same path. Inside, the sandbox's
first process is a small bridge (`BRIDGE`: ralphstate's own Python with `-I -S`, no
import but the interpreter's built-in `_socket` and `_thread`) that listens on the
sandbox's loopback at `PORT`, and at each loopback endpoint the allowlist carries,
passes each connection to its socket, and starts the agent with `HTTPS_PROXY` and
`HTTP_PROXY` pointing at the first.

The proxy allows `CONNECT NAME:PORT` and a plain HTTP request for `http://NAME:PORT/`
(rewritten to its path) where the allowlist has them, nothing else: anything else gets
`403` with one sentence saying the host is not on the allowlist, and is closed.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import socket
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.sandbox.netallow import Address, Allowlist

# The loopback port of the bridge inside the sandbox's own network namespace.
PORT = 3128
SOCKET_NAME = "proxy.sock"
# The longest request head the proxy reads, and how long a target may take to answer.
HEAD_LIMIT = 8192
CONNECT_SECONDS = 15.0

# The bridge, run by ralphstate's own Python as the sandbox's first process: argv is
# [N, then N times HOST PORT SOCKET, "--", agent argv...]; it listens at each HOST:PORT
# before the agent starts, and exits with the agent's code. `_socket` and `_thread`
# only: `socket` and `threading` would cost more than the interpreter's own start.
BRIDGE = r"""
import os, sys, _socket, _thread
a = sys.argv
n = int(a[1])
argv = a[3 + 3 * n:]
def pipe(x, y):
    try:
        while True:
            data = x.recv(65536)
            if not data:
                break
            y.sendall(data)
    except OSError:
        pass
    for s in (x, y):
        try:
            s.shutdown(2)
        except OSError:
            pass
def serve(listener, path):
    while True:
        try:
            inner = _socket.socket(fileno=listener._accept()[0])
        except OSError:
            continue
        outer = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            outer.connect(path)
        except OSError:
            inner.close()
            outer.close()
            continue
        _thread.start_new_thread(pipe, (inner, outer))
        _thread.start_new_thread(pipe, (outer, inner))
for i in range(n):
    host, port, path = a[2 + 3 * i:5 + 3 * i]
    for name in (("127.0.0.1", "::1") if host == "localhost" else (host,)):
        family = _socket.AF_INET6 if ":" in name else _socket.AF_INET
        listener = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            listener.bind((name, int(port)))
            listener.listen(64)
        except OSError as exc:
            listener.close()
            if name != "::1":
                sys.stderr.write(f"ralphstate: cannot listen at {name}:{port}: {exc.strerror}\n")
            continue
        _thread.start_new_thread(serve, (listener, path))
try:  # posix_spawnp, not subprocess: its import alone is most of a start
    pid = os.posix_spawnp(argv[0], argv, os.environ)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
except OSError as exc:
    sys.stderr.write(f"ralphstate: cannot start {argv[0]!r}: {exc.strerror}\n")
    code = 127
sys.stdout.flush()
sys.stderr.flush()
os._exit(code if code >= 0 else 128 - code)
"""


def refusal(wanted: str) -> bytes:
    """The proxy's answer to what the allowlist does not have, in one sentence."""
    words = (
        f"ralphstate: {wanted} is not on this run's network allowlist; the person adds"
        " a host with `ralphstate run --allow-host HOST`.\n"
    ).encode()
    head = f"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {len(words)}"
    return head.encode() + b"\r\nConnection: close\r\n\r\n" + words


def _split(head: bytes) -> tuple[str, str, int, str] | None:
    """A request's method, host, port and the rest of its line (the origin-form of
    a plain request), for `CONNECT host:port` or `METHOD http://host[:port]/path`."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    words = line.split()
    if len(words) != 3 or not words[2].startswith("HTTP/"):
        return None
    method, target, version = words
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit():
            return None
        return method, host.strip("[]").lower(), int(port), ""
    if not target.lower().startswith("http://"):
        return None
    where, slash, path = target[7:].partition("/")
    host, colon, port = where.rpartition(":") if "]" not in where[-1:] else ("", "", "")
    if not colon or not port.isdigit():
        host, port = where, "80"
    if not host:
        return None
    return method, host.strip("[]").lower(), int(port), f"{method} {slash or '/'}{path} {version}"


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    for end in (a, b):
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)


def _both_ways(inner: socket.socket, outer: socket.socket) -> None:
    inner.settimeout(None)
    outer.settimeout(None)
    back = threading.Thread(target=_pipe, args=(outer, inner), daemon=True)
    back.start()
    _pipe(inner, outer)
    back.join()
    inner.close()
    outer.close()


# The longest path a unix socket may have, less a margin (108 bytes on Linux, 104 on
# macOS, the terminating NUL included).
SOCKET_PATH_MAX = 100


def _private_directory(forwards: int) -> Path:
    """A directory of the proxy's own for its sockets, in the system's temporary
    directory; where that is so deep that a socket's path would be too long for the
    system (a TMPDIR several levels down), in `/tmp` instead. RalphstateError, in one
    sentence, where neither gives a path short enough."""
    longest = f"forward-{forwards}.sock" if forwards else SOCKET_NAME
    for where in (None, "/tmp"):
        if where is not None and not Path(where).is_dir():
            continue
        directory = Path(tempfile.mkdtemp(prefix="ralphstate-net-", dir=where))
        if len(str(directory / longest).encode()) <= SOCKET_PATH_MAX:
            return directory
        directory.rmdir()
    raise RalphstateError(
        f"the network allowlist's sockets need a temporary directory whose path is under"
        f" {SOCKET_PATH_MAX - len(longest) - 1} bytes; set TMPDIR to a shorter one, or run"
        " with --network full."
    )


@dataclass
class Proxy:
    """The run's proxy on unix sockets; started once, gone with the process."""

    allowed: Allowlist
    directory: Path | None = None
    refused: list[str] = field(default_factory=list)
    _listeners: list[socket.socket] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return Path(self.start()) / SOCKET_NAME

    def forward_path(self, index: int) -> Path:
        return Path(self.start()) / f"forward-{index}.sock"

    def start(self) -> Path:
        """The private directory holding the proxy's sockets, the proxy listening."""
        if self.directory is not None:
            return self.directory
        directory = _private_directory(len(self.allowed.forwards))
        self.directory = directory
        atexit.register(self.stop)
        self._listen(directory / SOCKET_NAME, None)
        for index, target in enumerate(self.allowed.forwards):
            self._listen(directory / f"forward-{index}.sock", target)
        return directory

    def _listen(self, path: Path, target: Address | None) -> None:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        listener.listen(64)
        self._listeners.append(listener)
        threading.Thread(target=self._serve, args=(listener, target), daemon=True).start()

    def drain(self) -> list[str]:
        """What was refused since the last drain, each once, in order."""
        taken = self.refused[:]
        del self.refused[: len(taken)]
        return list(dict.fromkeys(taken))

    def stop(self) -> None:
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _serve(self, listener: socket.socket, target: Address | None) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            work = self._handle if target is None else self._forward
            threading.Thread(target=work, args=(conn, target), daemon=True).start()

    def _forward(self, conn: socket.socket, target: Address | None) -> None:
        """A connection to a loopback endpoint, carried to the same address outside."""
        try:
            outer = socket.create_connection(target or ("", 0), timeout=CONNECT_SECONDS)
        except OSError:
            conn.close()
            return
        _both_ways(conn, outer)

    def _target(self, wanted: tuple[str, str, int, str] | None) -> Address | None:
        if wanted is None:
            return None
        table = self.allowed.tunnels if wanted[0] == "CONNECT" else self.allowed.plain
        return table.get((wanted[1], wanted[2]))

    def _handle(self, conn: socket.socket, _: Address | None = None) -> None:
        head = b""
        try:
            conn.settimeout(CONNECT_SECONDS)
            while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
                data = conn.recv(HEAD_LIMIT)
                if not data:
                    break
                head += data
            wanted = _split(head)
            target = self._target(wanted)
            if wanted is None or target is None:
                line = head.split(b"\r\n", 1)[0].decode("latin-1")[:200]
                shown = f"{wanted[1]}:{wanted[2]}" if wanted else repr(line[:80])
                self.refused.append(shown)
                conn.sendall(refusal(shown))
                conn.close()
                return
            outer = socket.create_connection(target, timeout=CONNECT_SECONDS)
        except OSError:
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        rest = head.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in head else b""
        if wanted[0] == "CONNECT":
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:  # the request itself, in origin-form, with what followed its line
            rest = wanted[3].encode("latin-1") + b"\r\n" + head.split(b"\r\n", 1)[1]
        if rest:
            outer.sendall(rest)
        _both_ways(conn, outer)


def inside(proxy: Proxy, argv: list[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """bwrap's extra options for `proxy`, `argv` behind the bridge, and the variables
    that point the agent's clients at it."""
    directory = str(proxy.start())
    options = ["--unshare-net", "--ro-bind", directory, directory]
    forwards = proxy.allowed.forwards
    port = PORT
    while any(p == port for _, p in forwards):  # an endpoint of the person's own there
        port += 1
    specs = ["127.0.0.1", str(port), str(proxy.path)]
    for index, (host, at) in enumerate(forwards):
        specs += [host, str(at), str(proxy.forward_path(index))]
    count = str(len(specs) // 3)
    bridged = [sys.executable, "-I", "-S", "-c", BRIDGE, count, *specs, "--"]
    url = f"http://127.0.0.1:{port}"
    env = {name: url for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")}
    # The sandbox's loopback is its own: what the agent asks of it goes straight there.
    near = "localhost,127.0.0.1,::1"
    env.update({"NO_PROXY": near, "no_proxy": near})
    return options, [*bridged, *argv], env
