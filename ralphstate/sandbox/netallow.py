"""Which hosts a confined agent's network reaches: the run's allowlist, which the
proxy of sandbox/netproxy.py carries.

On it, with nothing given: the model APIs of the run's agent programs (`API_HOSTS`,
port 443), and each endpoint the person points the agent's client at through a
variable the agent gets whose name ends in `_BASE_URL` (`ANTHROPIC_BASE_URL`,
`OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`, ...), at its own host and port: a person
who sets such a variable has chosen that host. An endpoint on the host's loopback
(`127.0.0.1`, `localhost`, `::1`) is carried from the same address and port inside the
sandbox (`forwards`), so the client needs no proxy for it, in plain HTTP or TLS alike;
another `https` one is reached by `CONNECT`, another `http` one by a plain request
through the proxy. Then each `--allow-host HOST` (`CONNECT HOST:443`), and
`NAME=ADDRESS:PORT` sends `NAME` to the address of the person's choosing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ralphstate.core.errors import RalphstateError

# Each agent program's model API, allowed without being named.
API_HOSTS: dict[str, tuple[str, ...]] = {
    "claude": ("api.anthropic.com",),
    "codex": ("api.openai.com", "chatgpt.com"),
    "gemini": ("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com"),
    "copilot": ("api.githubcopilot.com", "api.github.com"),
    "opencode": ("api.anthropic.com", "api.openai.com"),
    "aider": ("api.anthropic.com", "api.openai.com"),
}
# A variable whose name ends so names the endpoint of the agent's model API.
BASE_URL_SUFFIX = "_BASE_URL"

Address = tuple[str, int]


@dataclass
class Allowlist:
    """Where the agent's connections may go: `tunnels` (`CONNECT name:port`) and
    `plain` (a plain HTTP request for `http://name:port/`), each to the address the
    proxy connects to; `forwards`, loopback endpoints carried from inside as they are."""

    tunnels: dict[Address, Address] = field(default_factory=dict)
    plain: dict[Address, Address] = field(default_factory=dict)
    forwards: list[Address] = field(default_factory=list)

    def names(self) -> list[str]:
        """What the summary says the network goes through."""
        shown = {_shown(a) for a in [*self.tunnels, *self.plain, *self.forwards]}
        return sorted(shown)


def _shown(address: Address) -> str:
    host, port = address
    host = f"[{host}]" if ":" in host else host
    return host if port == 443 else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def base_urls(env: Mapping[str, str]) -> list[tuple[str, str, int]]:
    """The endpoints the `_BASE_URL` variables of `env` name: (scheme, host, port)."""
    found: list[tuple[str, str, int]] = []
    for name, value in sorted(env.items()):
        if not name.endswith(BASE_URL_SUFFIX):
            continue
        try:
            url = urlsplit(value.strip())
            port = url.port
        except ValueError:
            continue
        if url.scheme not in ("http", "https") or not url.hostname:
            continue
        found.append((url.scheme, url.hostname.lower(), port or _default_port(url.scheme)))
    return found


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def parse(
    entries: Iterable[str], chain: Iterable[list[str]], env: Mapping[str, str] | None = None
) -> Allowlist:
    """The run's allowlist: the model APIs of the agents `chain`, the endpoints of the
    `_BASE_URL` variables of `env` (those the agent gets), then the person's `entries`.
    RalphstateError, one sentence, for a bad entry."""
    allowed = Allowlist()
    for argv in chain:
        name = Path(argv[0]).name.lower().removesuffix(".exe") if argv else ""
        for host in API_HOSTS.get(name, ()):
            allowed.tunnels[(host, 443)] = (host, 443)
    for scheme, host, port in base_urls(env or {}):
        if is_loopback(host):
            if (host, port) not in allowed.forwards:
                allowed.forwards.append((host, port))
        elif scheme == "https":
            allowed.tunnels[(host, port)] = (host, port)
        else:
            allowed.plain[(host, port)] = (host, port)
    for entry in entries:
        name, _, target = entry.partition("=")
        name = name.strip().lower()
        address, _, digits = target.rpartition(":") if target else (name, "", "443")
        if not name or not address or not digits.isdigit() or not 0 < int(digits) < 65536:
            raise RalphstateError(
                f"--allow-host {entry!r} is neither a host name nor NAME=ADDRESS:PORT."
            )
        allowed.tunnels[(name, 443)] = (address.strip("[]"), int(digits))
    return allowed
