"""Only the person trusts and approves (docs/explanation/proof.md, "Only a person approves").

`ralphstate trust`, `review --approve` and `--revert`, `criteria check --env` and the
library functions behind them (`loop.proofreview.approve` and `revert`) decide what
proves a loop done, so they must be the person's act, never the agent's. Every one of
them calls `require_person`, which lets the act go on in two cases only:

- at a terminal: the person reads, at the process's controlling terminal (never stdin,
  `storage.system.terminal`), what is approved (the loop, its checks, the contract's
  hash) and types CONFIRM_WORD. A process with no terminal cannot approve, whatever its
  environment says; nor can one that descends from an agent client or an iteration of
  `ralphstate run`, or whose terminal's session leader does (a pty the agent made
  itself): `storage.system.ancestry` walks the parents;
- at Claude Code's permission prompt: the command carries the one-time approval
  (`storage.approvals`) that the PreToolUse hook gave the command the person let run.

Either way the process's actor says how the person was there (`PRESENT`), and only such
an approval is said to be "by you" (`core.provenance.approver`). A command run in an
agent session or a run iteration without an approval is refused with one sentence
telling the agent to ask the person.
"""

from __future__ import annotations

import os

from ralphstate.core import actor
from ralphstate.core.approving import APPROVAL_ENV
from ralphstate.core.errors import RalphstateError
from ralphstate.core.state import State
from ralphstate.loop.project import current_actor
from ralphstate.storage.peruser import approvals
from ralphstate.storage.system.paths import LoopPaths

# What the person did, when a command runs as theirs through an approval.
APPROVED_AT_PROMPT = "permission prompt"
# How the person's presence was shown, in the actor's "present" (core/actor.py).
AT_TERMINAL = "terminal"
AT_PROMPT = "prompt"
# `ralphstate ci`: the workflow's author, in a job no agent started (`require_ci`).
IN_CI = "ci"
PRESENT = (AT_TERMINAL, AT_PROMPT, IN_CI)
# What the person types at the terminal to approve.
CONFIRM_WORD = "yes"
# What a person-only command does, as its refusal says it (most approve the proof).
APPROVES = "approves what proves this loop done"
# The loops (their directories) the person approved for in this process; CI_ANY_LOOP
# after `require_ci`.
_confirmed: list[str] = []
CI_ANY_LOOP = "(ci)"


def present(found: object) -> bool:
    """Whether `found`, an actor, is the person shown present (terminal or prompt)."""
    return actor.is_person(found) and isinstance(found, dict) and found.get("present") in PRESENT


def require_person(paths: LoopPaths, what: str, does: str = APPROVES) -> None:
    """Let `what` (the command, as the person would type it: "`ralphstate trust`") go
    on for the loop at `paths` only when the person is there: confirmed at their own
    terminal, or approved at Claude Code's permission prompt (then this process's
    changes are recorded as the person's). Else RalphstateError, one sentence, saying
    what the command `does` (by default: it approves what proves the loop done)."""
    if str(paths.dir) in _confirmed or CI_ANY_LOOP in _confirmed:
        return  # confirmed once in this process: `trust`, then the library call it makes
    found = current_actor()
    if actor.is_person(found):
        _at_terminal(paths, what, does)
        return
    token = os.environ.get(APPROVAL_ENV)
    if token and found.get("kind") == "agent":
        why = approvals.consume(token, paths, found.get("session"), asked_at_prompt)
        if why is None:
            person = {**actor.PERSON, "via": APPROVED_AT_PROMPT, "present": AT_PROMPT}
            if found.get("session"):
                person["session"] = found["session"]
            actor.set_current(person)
            _confirmed.append(str(paths.dir))
            return
        if why == approvals.UNASKED:
            raise RalphstateError(
                f"{what} carries an approval Claude Code never asked the person for, or"
                " one they already answered, so it counts as none: ask them again."
            )
        if why == approvals.EXPIRED:
            minutes = approvals.TTL_SECONDS // 60
            raise RalphstateError(
                f"the person's approval of {what} expired ({minutes} minutes after Claude"
                " Code asked them): ask them again."
            )
    raise RalphstateError(refusal(what, found, does))


def require_ci(what: str) -> None:
    """`ralphstate ci` approves the contract of the trusted base commit for the person
    who wrote the workflow, in a job with no terminal: it goes on only where no agent
    session, run iteration or agent client started this process (its environment and
    its parents'); else RalphstateError, one sentence."""
    found = current_actor()
    if not actor.is_person(found):
        raise RalphstateError(refusal(what, found))
    agent = agent_above()
    if agent is not None:
        raise RalphstateError(
            f"{what} approves what proves this loop done for the workflow's author, and"
            f" this process was started by {agent}: only a CI job may run it."
        )
    actor.set_current({**actor.PERSON, "via": "ci", "present": IN_CI})
    _confirmed.append(CI_ANY_LOOP)


def require_not_agent(
    what: str, widens: str = "lets an agent run with all of your user's rights"
) -> None:
    """Let `what`, an act that widens what an agent may reach without approving any
    proof (`ralphstate run --no-sandbox`), go on only where no agent session, run
    iteration or agent client started this process (its environment and its parents',
    as `require_ci` asks); no terminal is needed, so the person's scripts and CI jobs
    run it. Else RalphstateError, one sentence."""
    found = current_actor()
    lead = f"{what} {widens}, so only the person may"
    if not actor.is_person(found):
        raise RalphstateError(f"{lead} ask for it, never {actor.describe(found)}.")
    agent = agent_above()
    if agent is not None:
        raise RalphstateError(f"{lead} ask for it, and this process was started by {agent}.")


def refusal(what: str, found: actor.Actor, does: str = APPROVES) -> str:
    """Why `what` does not run for `found`, an agent or a run, and what to do instead:
    one sentence, read by the agent."""
    lead = f"{what} {does}, so only the person may run it"
    if found.get("kind") == "run":
        return f"{lead}, never an iteration of `ralphstate run`: tell them it waits for them."
    if found.get("agent") == "claude":
        return (
            f"{lead}: ask them to run it in their own terminal, or to approve it when"
            " Claude Code asks them."
        )
    return f"{lead}: ask them to run it in their own terminal."


def _at_terminal(paths: LoopPaths, what: str, does: str = "") -> None:
    """The person confirms `what` at this process's controlling terminal; else
    RalphstateError, one sentence."""
    from ralphstate.storage.system import terminal

    lead = f"{what} {does or APPROVES}, so only the person may run it"
    agent = agent_above()
    if agent is not None:
        raise RalphstateError(
            f"{lead}, and this process was started by {agent}: ask them to run it in"
            " their own terminal."
        )
    answer = terminal.ask(
        naming(paths, what), f"Type {CONFIRM_WORD} to approve, anything else to stop: "
    )
    if answer is terminal.NO_TERMINAL:
        raise RalphstateError(
            f"{lead}, at a terminal, and this process has none (a pipe, a script, an"
            " agent's tool), so nobody confirmed it: run it in your own terminal."
        )
    if answer.strip().lower() != CONFIRM_WORD:
        raise RalphstateError(f"{what} was not confirmed at the terminal: nothing was approved.")
    actor.set_current({**actor.PERSON, "present": AT_TERMINAL})
    _confirmed.append(str(paths.dir))


def confirm_first_checks(paths: LoopPaths, before: dict[str, str], state: State, what: str) -> bool:
    """Before ralphstate carries trust over a person's change to a loop's checks
    (`truststore.carry`): to the loop's first checks (`before` empty), the person at a
    terminal with no agent above is asked once, as `init --check` asks; a change to
    checks already trusted goes on only where a terminal is (the person could have been
    asked). False (the checks then wait for `ralphstate trust`) when they said anything
    but yes, when an agent is above, and with no terminal: a process with none (a
    script, one an agent started outside its own tree) shows no person. True, and
    nothing asked, when nothing would be carried (no checks, an agent's change: `carry`
    keeps nothing) or the person was shown present already."""
    from ralphstate.storage.peruser import truststore
    from ralphstate.storage.system import terminal

    found = actor.current()
    if not truststore.armed(state) or not actor.is_person(found) or present(found):
        return True
    if agent_above() is not None:
        return False  # an agent's `env -i`: its checks wait for the person
    if before:
        return terminal.available()
    answer = terminal.ask(
        naming_state(paths, state, what),
        f"Type {CONFIRM_WORD} to trust these checks, anything else to stop: ",
    )
    if answer is terminal.NO_TERMINAL or answer.strip().lower() != CONFIRM_WORD:
        return False
    actor.set_current({**actor.PERSON, "present": AT_TERMINAL})
    return True


def naming(paths: LoopPaths, what: str) -> list[str]:
    """What the person is asked to confirm: the act, the loop, its checks and the hash
    of what proves it done as it now stands."""
    import contextlib

    from ralphstate.storage.loopdir.store import Store

    with contextlib.suppress(RalphstateError, OSError, ValueError, KeyError):
        return naming_state(paths, Store(paths).load(), what)
    return [
        f"ralphstate: {what} for the loop in {paths.root}",
        "Only you may approve this; an agent must never answer for you.",
    ]


def naming_state(paths: LoopPaths, state: State, what: str) -> list[str]:
    """`naming` for the loop's state `state` (init's, before anything reads it back)."""
    import hashlib

    import orjson

    from ralphstate.core import proof
    from ralphstate.core.text import visible
    from ralphstate.storage.peruser import truststore

    lines = [f"ralphstate: {what} for the loop in {visible(str(paths.root))}"]
    lines.append(f"  goal: {visible(str(state['spec']))[:200]}")
    armed = truststore.armed(state)
    for name, command in armed.items():
        lines.append(f"  check {visible(name)}: {visible(command)}")
    if not armed:
        lines.append("  no checks")
    contract = orjson.dumps(proof.contract_of(state), option=orjson.OPT_SORT_KEYS)
    lines.append(f"  what proves it done: sha256 {hashlib.sha256(contract).hexdigest()[:16]}")
    lines.append("Only you may approve this; an agent must never answer for you.")
    return lines


def agent_above() -> str | None:
    """The agent client or `ralphstate run` iteration this process descends from, or
    its terminal's session leader does, in a few words; None when neither does (or the
    system does not say: Windows)."""
    from ralphstate.agents import table
    from ralphstate.storage.system import ancestry

    chains = [ancestry.chain(os.getpid())]
    leader = ancestry.session_leader()
    if leader is not None and leader != os.getpid():
        chains.append(ancestry.chain(leader))
    for chain in chains:
        for proc in chain:
            name = proc.name.lower().removesuffix(".exe")
            if name in ancestry.CLIENTS:
                return f"the agent client {name} (pid {proc.pid})"
            if proc.environ is None:
                continue
            found = actor.from_env(proc.environ, table.session_from_env(proc.environ))
            if not actor.is_person(found):
                return f"{actor.describe(found)} (pid {proc.pid})"
    return None


def unmask() -> None:
    """Take this process for the agent's when it looks like the person's (no agent
    variable, no presence shown) but an agent client or a run iteration is among its
    parents (`agent_above`): `env -i` strips variables, not ancestry. A `verify` or
    `init` run so records its results as the agent's (core/provenance.py), which never
    count. Only the commands that produce results call it: the walk up the process
    tree costs a few milliseconds."""
    from ralphstate.core import actor

    now = actor.current()
    if actor.is_person(now) and "present" not in now and agent_above() is not None:
        actor.set_current({"kind": "agent", "agent": "unknown"})


# The longest transcript read for the call an approval was made for.
_MAX_TRANSCRIPT = 64 * 1024 * 1024


def asked_at_prompt(entry: dict[str, object]) -> bool:
    """Whether the client itself asked the person about the tool call the approval
    `entry` was made for, and the call is still waiting on that answer: the session's
    transcript (the file named after the session) holds the call, a command that
    approves, and no result for it yet. A call the person declined has its result
    already: its approval dies. A token the agent made by running the PreToolUse hook
    by hand names a call the client never made, or one whose command approves nothing
    (the client asked the person of neither)."""
    import contextlib
    from pathlib import Path

    import orjson

    from ralphstate.core import approving

    call, where, session = entry.get("call"), entry.get("transcript"), entry.get("session")
    if not isinstance(call, str) or not call or not isinstance(where, str) or not where:
        return False
    path = Path(where)
    if session and path.stem != session:
        return False
    try:
        if path.stat().st_size > _MAX_TRANSCRIPT:
            return False
        lines = path.read_bytes().splitlines()
    except OSError:
        return False
    made = False
    for line in lines:
        if call.encode() not in line:
            continue
        with contextlib.suppress(orjson.JSONDecodeError):
            message = orjson.loads(line).get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result" and block.get("tool_use_id") == call:
                    return False  # answered already: declined, or it ran
                if block.get("type") == "tool_use" and block.get("id") == call:
                    command = (block.get("input") or {}).get("command")
                    made = isinstance(command, str) and approving.approving(command) is not None
    return made
