"""The agent's network under `run`'s default confinement (bubblewrap): through the
run's allowlist, with nothing given on the command line. The agent is a program named
`claude`, so it gets `ANTHROPIC_BASE_URL` (the env allowlist passes its client's
variables): the model API's stand-in, a server on the host's loopback that variable
names, is reached at the same address from inside; another server on the host's
loopback and an abstract socket are not, and the proxy refuses any other host in
words that say so. `--network full` gives the host's whole network back, and only the
person may ask for it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import orjson
import pytest

from ralphstate.run.spawn import join_command
from tests.adversarial.scripted import Agent, Person, person_env
from tests.sandbox.conftest import needs_bwrap

pytestmark = [
    needs_bwrap,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets"),
]

# The agent: tries each way out and writes what it got into the project.
PROBE = r"""
import json, os, socket, sys
sys.stdin.read()
wanted = json.loads(sys.argv[1])
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
api = os.environ["ANTHROPIC_BASE_URL"].rsplit(":", 1)[1]
attempt("api", socket.AF_INET, ("127.0.0.1", int(api)))
attempt("loopback", socket.AF_INET, ("127.0.0.1", wanted["loopback"]))
attempt("abstract", socket.AF_UNIX, "\0" + wanted["abstract"])
proxy = os.environ.get("HTTPS_PROXY", "")
got["proxy"] = proxy
def through(line):
    if not proxy:
        return "no proxy"
    host, port = proxy.rsplit("/", 1)[-1].rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=5)
    except OSError as exc:
        return "no proxy: " + type(exc).__name__
    s.sendall(line.encode() + b"\r\nHost: x\r\n\r\n")
    answer = b""
    while True:
        data = s.recv(4096)
        if not data:
            break
        answer += data
    s.close()
    return answer.decode()
got["unlisted"] = through("CONNECT example.com:443 HTTP/1.1")
got["plain loopback"] = through(f"GET http://127.0.0.1:{wanted['loopback']}/ HTTP/1.1")
open("net.json", "w").write(json.dumps(got))
"""


def _claude(tmp_path: Path, servers: tuple[int, str, int]) -> str:
    """The probe as a program named `claude`, and its command line."""
    loopback, abstract, _ = servers
    program = tmp_path / "agent" / "claude"
    program.parent.mkdir()
    program.write_text(f"#!{sys.executable}\n{PROBE}")
    program.chmod(0o755)
    return join_command([str(program), json.dumps({"loopback": loopback, "abstract": abstract})])


def _env(api: int) -> dict[str, str]:
    env = {k: v for k, v in person_env().items() if k != "RALPHSTATE_RUN_SANDBOX"}
    return {**env, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{api}"}


def test_by_default_the_agent_reaches_its_api_and_nothing_else_of_the_host(
    calc: Path, tmp_path: Path, servers: tuple[int, str, int]
) -> None:
    command = _claude(tmp_path, servers)
    api = servers[2]
    done = Person(calc, _env(api)).rs("run", "--agent", command, "--max", "1", "--json", ok=False)
    out = orjson.loads(done.stdout)
    assert out["sandbox"] == "bubblewrap" and out["runs"][0]["exit"] == 0, done.stderr
    got = orjson.loads((calc / "net.json").read_bytes())
    assert got["api"] == "api", got
    assert got["loopback"].startswith("refused"), got
    assert got["abstract"].startswith("refused"), got
    for refused, wanted in (("unlisted", "example.com:443"), ("plain loopback", "127.0.0.1:")):
        assert got[refused].startswith("HTTP/1.1 403 Forbidden"), (refused, got)
        assert f"ralphstate: {wanted}" in got[refused], got
        assert "is not on this run's network allowlist" in got[refused], got
    assert (
        f"sandbox: bubblewrap; network: through 127.0.0.1:{api}, api.anthropic.com only"
        in done.stderr
    ), done.stderr
    assert (
        "  network: refused example.com:443, not on the allowlist (--allow-host HOST adds one)"
        in done.stderr.splitlines()
    ), done.stderr


def test_network_full_is_the_persons_alone_and_gives_the_hosts_network(
    calc: Path, tmp_path: Path, servers: tuple[int, str, int]
) -> None:
    command = _claude(tmp_path, servers)
    env = _env(servers[2])
    args = ("run", "--network", "full", "--agent", command, "--max", "1", "--json")
    done = Agent(calc).rs(*args, RALPHSTATE_RUN_SANDBOX="auto")
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        "ralphstate: `ralphstate run --network full` opens the host's whole network to the"
        " agent (its loopback servers and sockets), so only the person may ask for it, never"
    ), lines
    assert not (calc / "net.json").exists()

    done = Person(calc, env).rs(*args, ok=False)
    assert orjson.loads(done.stdout)["sandbox"] == "bubblewrap, the host's whole network", done
    got = orjson.loads((calc / "net.json").read_bytes())
    assert got["loopback"] == "host secret", got
    assert "network: the host's, whole" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["--network", "full", "--no-network"], "--network full and --no-network contradict"),
        (["--network", "full", "--allow-host", "a.test"], "--allow-host and --network full"),
        (
            ["--no-sandbox", "--network", "allowlist"],
            "--network allowlist needs --sandbox bwrap (the unconfined mode cannot filter",
        ),
    ],
)
def test_network_settings_that_contradict_are_one_sentence(
    calc: Path, args: list[str], sentence: str
) -> None:
    env = {k: v for k, v in person_env().items() if k != "RALPHSTATE_RUN_SANDBOX"}
    done = Person(calc, env).rs("run", *args, "--agent", "true", "--max", "1", ok=False)
    assert done.returncode == 1, done
    assert sentence in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
