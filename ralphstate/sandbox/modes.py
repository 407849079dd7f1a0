"""Choosing the sandbox of a run, refusing one that cannot start, and wrapping each
iteration's command in it.

`auto`, the default, takes the best this machine has (bubblewrap on Linux, sandbox-exec
on macOS) and refuses when there is none; `off` (`--no-sandbox`, the person's alone)
runs the agent unconfined and says so. A chosen
sandbox that cannot start stops the run before its first iteration, in one sentence:
a run never falls back to an unconfined agent.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.sandbox import bubblewrap, ccsettings, envlist, netallow, netproxy, seatbelt
from ralphstate.sandbox.reach import Reach, reach
from ralphstate.storage.system.paths import LoopPaths

MODES = ("auto", "bwrap", "claude", "sandbox-exec", "off")
UNCONFINED = "off"
# Why `--network full` is the person's alone (loop/person.py's `require_not_agent`).
FULL_NETWORK = "opens the host's whole network to the agent (its loopback servers and sockets)"
# The person's default mode for `run`, from their shell (else `auto`).
DEFAULT_ENV = "RALPHSTATE_RUN_SANDBOX"
# What each mode is, in the words of the run's summary, `status` and the report.
HOW = {
    "bwrap": "bubblewrap",
    "claude": "Claude Code's sandbox",
    "sandbox-exec": "sandbox-exec",
    "off": "unconfined",
}


@dataclass
class Box:
    """The sandbox every iteration of a run gets."""

    mode: str
    where: Reach | None = None
    program: str | None = None
    offline: bool = False
    settings: Path | None = None
    userns: bool = False
    # The agent commands of the run and the variables the person named (`--env`): what
    # of the environment reaches the agent (sandbox/envlist.py).
    chain: list[list[str]] = field(default_factory=list)
    named: list[str] = field(default_factory=list)
    # The network through an allowlist of hosts (bwrap's default), or the host's whole
    # network (`run --network full`, the person's alone).
    proxy: netproxy.Proxy | None = None
    full: bool = False

    @property
    def how(self) -> str:
        """The mode, and its network where it is not the mode's default."""
        if self.mode == "off":
            return HOW["off"]
        if self.offline:
            return HOW[self.mode] + ", no network"
        return HOW[self.mode] + (", the host's whole network" if self.full else "")

    @property
    def network(self) -> str:
        """What the agent's network is, in the words of the run's first lines."""
        if self.mode == "off" or self.full:
            return "the host's, whole (its loopback servers and sockets too)"
        if self.offline:
            return "none"
        if self.proxy is not None:
            names = self.proxy.allowed.names()
            return "through " + (", ".join(names) or "no host") + " only"
        if self.mode == "claude":
            return "Claude Code's sandbox's own rules"
        return "the host's, whole (sandbox-exec cannot filter it by host)"

    def refused(self) -> list[str]:
        """The hosts the proxy refused since last asked, one sentence each."""
        if self.proxy is None:
            return []
        return [
            f"network: refused {shown}, not on the allowlist (--allow-host HOST adds one)"
            for shown in self.proxy.drain()
        ]

    def wrap(self, argv: list[str], env: dict[str, str]) -> list[str]:
        """`argv` as it runs in the sandbox; `env` gets the sandbox's variables."""
        if self.mode == "off" or self.where is None:
            return argv
        kept = envlist.allowed(env, [*self.chain, argv], self.named)
        env.clear()
        env.update(kept)
        if self.mode == "bwrap":
            env.update(bubblewrap.INSIDE)
            program = str(self.program)
            if self.proxy is None:
                return bubblewrap.command(program, self.where, self.offline, argv, self.userns)
            options, bridged, variables = netproxy.inside(self.proxy, argv)
            env.update(variables)
            wrapped = bubblewrap.command(program, self.where, False, argv, self.userns)
            at = len(wrapped) - len(argv) - 1  # the `--` before the agent's command
            return [*wrapped[:at], *options, "--", *bridged]
        if self.mode == "sandbox-exec":
            env.update(seatbelt.INSIDE)
            return seatbelt.command(self.where, self.offline, argv)
        env["RALPHSTATE_SANDBOX"] = "claude"
        return ccsettings.command(argv, self.settings or Path())


def chosen(mode: str | None, unconfined: bool) -> str:
    """The run's mode: `off` for `--no-sandbox`, else the one chosen, else the person's
    default from their shell (`DEFAULT_ENV`), else `auto`; RalphstateError for both at
    once or a default that is no mode. `off`, however chosen, is the person's alone
    (run/runner.py asks `require_person`)."""
    if unconfined and mode not in (None, UNCONFINED):
        raise RalphstateError(f"--no-sandbox and --sandbox {mode} contradict each other.")
    if unconfined:
        return UNCONFINED
    default = os.environ.get(DEFAULT_ENV) or "auto"
    if mode is None and default not in MODES:
        raise RalphstateError(
            f"{DEFAULT_ENV}={default!r} is no sandbox mode; choose one of {', '.join(MODES)}."
        )
    return mode or default


def default() -> str:
    """What `auto` means on this platform."""
    if sys.platform.startswith("linux"):
        return "bwrap"
    if sys.platform == "darwin":
        return "sandbox-exec"
    return ""


def prepare(
    mode: str, paths: LoopPaths, guards: list[str], chain: list[list[str]], offline: bool
) -> Box:
    """The run's sandbox, started once on trial; RalphstateError, one sentence, when it
    cannot be had."""
    if mode == UNCONFINED:
        return Box("off")
    chosen = default() if mode == "auto" else mode
    if not chosen:
        raise RalphstateError(
            f"no sandbox works on {sys.platform} (ralphstate confines agents with bubblewrap"
            " on Linux and sandbox-exec on macOS); give --no-sandbox to run the agent"
            " unconfined, with all your user's rights."
        )
    where = reach(paths, guards, chain)
    if chosen == "bwrap":
        program, userns = bubblewrap.ready(where, offline)
        return Box(chosen, where, program, offline, userns=userns)
    if chosen == "sandbox-exec":
        return Box(chosen, where, seatbelt.ready(), offline)
    return _claude(where, chain, offline)


def network(
    box: Box,
    choice: str | None,
    entries: list[str],
    chain: list[list[str]],
    env: dict[str, str],
) -> None:
    """The network of `box`: under bwrap, through an allowlist by default (the model
    APIs of the agents `chain`, the `_BASE_URL` endpoints of what of `env` the agent
    gets, the hosts the person named with `run --allow-host`); the host's whole network
    for `--network full`. RalphstateError, one sentence, for what contradicts itself
    or what the mode cannot have."""
    if choice == "full" and entries:
        raise RalphstateError("--allow-host and --network full contradict each other.")
    if box.offline and (entries or choice == "full"):
        given = "--allow-host" if entries else "--network full"
        raise RalphstateError(f"{given} and --no-network contradict each other.")
    if (entries or choice == "allowlist") and box.mode != "bwrap":
        given = "--allow-host" if entries else "--network allowlist"
        raise RalphstateError(
            f"{given} needs --sandbox bwrap (the {HOW[box.mode]} mode cannot filter"
            " the network by host)."
        )
    if choice == "full":
        box.full = box.mode != "off"
        return
    if box.mode == "bwrap" and not box.offline:
        agent_env = envlist.allowed(env, chain, box.named)
        box.proxy = netproxy.Proxy(netallow.parse(entries, chain, agent_env))


def _claude(where: Reach, chain: list[list[str]], offline: bool) -> Box:
    others = [argv[0] for argv in chain if not ccsettings.is_claude(argv)]
    if others:
        raise RalphstateError(
            f"--sandbox claude confines Claude Code only, and {others[0]!r} is not Claude"
            " Code; choose --sandbox bwrap for any agent."
        )
    if offline:
        raise RalphstateError(
            "--sandbox claude keeps the network on (the client's sandbox has its own"
            " network rules); choose --sandbox bwrap to cut it."
        )
    lacking = ccsettings.missing()
    if lacking is not None:
        raise RalphstateError(
            f"Claude Code's sandbox cannot start here: {lacking}; the run does not go on"
            " unconfined."
        )
    try:
        path = ccsettings.write(where)
    except OSError as exc:
        raise RalphstateError(
            f"could not write the run's Claude Code settings: {exc.strerror or exc}."
        ) from None
    return Box("claude", where, offline=offline, settings=path)


def report() -> list[tuple[str, bool, str]]:
    """Each mode this machine could give a run: (mode, works, what or why not), each
    sandbox started once to tell."""
    found: list[tuple[str, bool, str]] = []
    started: tuple[bool, str] | None = None
    if sys.platform.startswith("linux"):
        started = ok, why = bubblewrap.works()
        found.append(("bwrap", ok, f"bubblewrap starts ({why})" if ok else why))
    elif sys.platform == "darwin":
        started = ok, why = seatbelt.works()
        found.append(("sandbox-exec", ok, f"sandbox-exec starts ({why})" if ok else why))
    lacking = ccsettings.missing()
    if lacking is None and started is not None and not started[0]:
        # Claude Code's sandbox runs these: found is not enough, they must start.
        runs = "bubblewrap" if sys.platform.startswith("linux") else "sandbox-exec"
        lacking = f"{runs}, which it runs, cannot start ({started[1]})"
    if lacking is None and sys.platform.startswith("linux"):
        lacking = _claude_on_linux()
    works = "bwrap starts with the network unshared, socat starts"
    if sys.platform == "darwin":
        works = "sandbox-exec starts"
    found.append(("claude", lacking is None, lacking or works))
    return found


def _claude_on_linux() -> str | None:
    """Why Claude Code's sandbox would not start here though bubblewrap does: it runs
    bubblewrap with the network unshared, bridged out by socat, so both are started once
    as it starts them; None when they start."""
    ok, why = bubblewrap.works(offline=True)
    if not ok:
        return f"bubblewrap cannot start with the network unshared, as it runs it ({why})"
    import shutil

    from ralphstate.storage.system import children

    socat = shutil.which("socat") or "socat"
    try:
        done = children.run([socat, "-V"], timeout=bubblewrap.PROBE_SECONDS, limit=4096)
    except OSError as exc:
        return f"socat, which it runs, cannot start ({exc.strerror or type(exc).__name__})"
    if done.code != 0:
        words = done.err.decode("utf-8", "replace").strip().splitlines()
        said = words[-1] if words else f"it exited with {done.code}"
        return f"socat, which it runs, cannot start ({said})"
    return None
