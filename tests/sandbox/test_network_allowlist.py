"""The agent's network through an allowlist of hosts (`run --sandbox bwrap
--allow-host`): from inside, a server on the host's loopback and an abstract socket
are out of reach, and the only way out is the run's CONNECT proxy, which lets through
`CONNECT NAME:443` for a name on the allowlist alone. The stand-in for an allowed API
is a server on the host's loopback the person directs a name to
(`--allow-host NAME=127.0.0.1:PORT`)."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from ralphstate.run.spawn import join_command
from tests.adversarial.scripted import Person
from tests.sandbox.conftest import needs_bwrap

pytestmark = [
    needs_bwrap,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets"),
]

# The agent: tries each way out and writes what it got into the project.
PROBE = r"""
import json, os, socket, sys
loopback, abstract, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
got = {}
def attempt(key, family, address):
    s = socket.socket(family)
    s.settimeout(3)
    try:
        s.connect(address)
        got[key] = s.recv(100).decode()
    except OSError as exc:
        got[key] = "refused: " + type(exc).__name__
    finally:
        s.close()
attempt("loopback", socket.AF_INET, ("127.0.0.1", loopback))
attempt("abstract", socket.AF_UNIX, "\0" + abstract)
proxy = os.environ.get("HTTPS_PROXY", "")
got["proxy"] = proxy
host, port = proxy.rsplit("/", 1)[-1].rsplit(":", 1)
def through(target):
    s = socket.create_connection((host, int(port)), timeout=5)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        data = s.recv(4096)
        if not data:
            break
        answer += data
    head, _, rest = answer.partition(b"\r\n\r\n")
    status = head.split(b"\r\n")[0].decode()
    if " 200 " in status and not rest:
        rest = s.recv(100)
    s.close()
    return status + " | " + rest.decode()
got["allowed"] = through(name + ":443")
got["other port"] = through(name + ":80")
got["host loopback"] = through(f"127.0.0.1:{loopback}")
got["unlisted"] = through("example.com:443")
open("net.json", "w").write(json.dumps(got))
"""


def test_the_network_goes_only_through_the_allowlist(
    calc: Path, person: Person, tmp_path: Path, servers: tuple[int, str, int]
) -> None:
    loopback, abstract, api = servers
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    name = "api.stand-in.test"
    command = join_command([sys.executable, str(script), str(loopback), abstract, name])
    done = person.rs(
        "run", "--sandbox", "bwrap", "--allow-host", f"{name}=127.0.0.1:{api}",
        "--agent", command, "--max", "1", "--json", ok=False,
    )  # fmt: skip
    assert orjson.loads(done.stdout)["runs"][0]["exit"] == 0, done.stderr
    got = orjson.loads((calc / "net.json").read_bytes())
    assert got["loopback"].startswith("refused"), got
    assert got["abstract"].startswith("refused"), got
    assert got["allowed"].startswith("HTTP/1.1 200") and got["allowed"].endswith("api"), got
    for refused in ("other port", "host loopback", "unlisted"):
        assert got[refused].startswith("HTTP/1.1 403"), (refused, got)
    assert f"sandbox: bubblewrap; network: through {name} only" in done.stderr, done.stderr


def test_a_malformed_allowed_host_is_one_sentence(person: Person) -> None:
    done = person.rs("run", "--sandbox", "bwrap", "--allow-host", "a=b:x", "--agent", "true",
                     ok=False)  # fmt: skip
    assert done.returncode != 0
    assert "--allow-host 'a=b:x' is neither a host name nor NAME=ADDRESS:PORT." in done.stderr
    assert "Traceback" not in done.stderr
