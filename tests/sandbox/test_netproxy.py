"""The run's proxy and its allowlist, in this process against real servers on the
loopback: which endpoints the `_BASE_URL` variables put on the allowlist, a plain HTTP
request carried in origin-form to an allowed `http` endpoint, a loopback endpoint
carried as it is, and the refusal of anything else in one sentence."""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralphstate.sandbox import netallow, netproxy

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="unix sockets")


def test_the_base_url_variables_put_their_endpoints_on_the_allowlist() -> None:
    env = {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:8080",
        "OPENAI_BASE_URL": "https://llm.example.test:8443/v1",
        "GOOGLE_GEMINI_BASE_URL": "http://mirror.example.test/",
        "COPILOT_PROVIDER_BASE_URL": "http://localhost:9000",
        "SOME_OTHER_URL": "https://ignored.example.test",
        "BROKEN_BASE_URL": "http://[bad",
    }
    allowed = netallow.parse(["x.example.test"], [["/usr/bin/claude", "-p"]], env)
    assert allowed.forwards == [("127.0.0.1", 8080), ("localhost", 9000)]
    assert allowed.tunnels == {
        ("api.anthropic.com", 443): ("api.anthropic.com", 443),
        ("llm.example.test", 8443): ("llm.example.test", 8443),
        ("x.example.test", 443): ("x.example.test", 443),
    }
    assert allowed.plain == {("mirror.example.test", 80): ("mirror.example.test", 80)}
    assert "llm.example.test:8443" in allowed.names()


@pytest.fixture
def server() -> Iterator[tuple[int, list[bytes]]]:
    """An HTTP server on the loopback that answers `ok` and keeps each request's head."""
    listener = socket.create_server(("127.0.0.1", 0))
    heads: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(4096)
                if not data:
                    break
                head += data
            heads.append(head)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1], heads
    finally:
        listener.close()


def _ask(path: str, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(10)
        conn.connect(path)
        conn.sendall(request)
        answer = b""
        while data := conn.recv(4096):
            answer += data
    return answer


def test_the_proxy_carries_allowed_plain_http_and_refuses_the_rest(
    server: tuple[int, list[bytes]],
) -> None:
    port, heads = server
    allowed = netallow.Allowlist(
        plain={("api.stand-in.test", 80): ("127.0.0.1", port)},
        forwards=[("127.0.0.1", port)],
    )
    proxy = netproxy.Proxy(allowed)
    try:
        path = str(proxy.path)
        request = b"POST http://api.stand-in.test/v1/messages HTTP/1.1\r\nHost: api\r\n\r\n"
        assert _ask(path, request).endswith(b"\r\n\r\nok")
        assert heads[-1].startswith(b"POST /v1/messages HTTP/1.1\r\nHost: api\r\n")

        direct = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
        assert _ask(str(proxy.forward_path(0)), direct).endswith(b"ok")
        assert heads[-1].startswith(b"GET /v1/models HTTP/1.1")

        for asked, shown in (
            (b"GET http://elsewhere.test:80/ HTTP/1.1\r\n\r\n", "elsewhere.test:80"),
            (f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode(), f"127.0.0.1:{port}"),
            (b"GET / HTTP/1.1\r\n\r\n", "'GET / HTTP/1.1'"),
        ):
            answer = _ask(path, asked)
            assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n"), answer
            words = answer.split(b"\r\n\r\n", 1)[1].decode()
            assert words == (
                f"ralphstate: {shown} is not on this run's network allowlist; the person"
                " adds a host with `ralphstate run --allow-host HOST`.\n"
            )
        assert len(heads) == 2, heads
    finally:
        proxy.stop()


def test_under_a_deep_tmpdir_the_proxy_s_sockets_are_made_where_they_fit(
    server: tuple[int, list[bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TMPDIR so deep that a socket's path would pass the system's limit (108 bytes on
    Linux): the proxy makes its directory in /tmp instead, and carries what it must."""
    port, _heads = server
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)
    proxy = netproxy.Proxy(netallow.Allowlist(forwards=[("127.0.0.1", port)]))
    try:
        path = proxy.forward_path(0)
        assert len(str(path).encode()) <= netproxy.SOCKET_PATH_MAX
        assert deep not in path.parents
        direct = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
        assert _ask(str(path), direct).endswith(b"ok")
    finally:
        proxy.stop()
