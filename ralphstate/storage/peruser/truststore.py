"""Which loops' check commands a person allowed to run on this machine.

Check commands are code. A state file that arrives with a repository, or is edited
by hand, must not run anything here until a person says so. The trust store, a small
JSON file under the user data directory, maps each loop directory (its real path) to
the hash of the `checks` a person trusted there: `ralphstate trust` records it, and a
change to `checks` made through ralphstate on this machine carries it forward. Any
other change to `checks` (a hand edit, a pull, a copied file) no longer matches.

Only the checks of criteria are trusted, and hashed: a check keyed to a name that is
not a criterion never runs, is shown as such, and is not part of what a person trusts,
so a later `criteria add` of that name makes the checks untrusted again instead of
arming it. `ralphstate run`'s settings that decide what runs or what is read (the
agent command and the context files, from a configuration file the repository may have
brought) are trusted the same way (`run_trusted`).

A loop with no checks has nothing to run and counts as trusted.

Each record says how a person was shown there when it was written (`PROOF_FIELDS`):
`by`, the actor, whose `present` names a terminal, Claude Code's prompt or the CI job
(loop/person.py); for a record with no such proof, `terminal` (whether the writing
process had a controlling terminal, where the person could have been asked) and
`agentAbove` (whether an agent client was among its parents), kept to say what wrote
it. A record counts only when a person's presence was proven; any other record (an
agent's, a library call's, one written with no terminal and no agent above, which an
agent can start outside its own tree, one without `by`: written by hand or by an
older ralphstate) counts as none, and `status` says so (`unproven`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import orjson

from ralphstate.core import actor, clock
from ralphstate.core.errors import RalphstateError
from ralphstate.core.state import State
from ralphstate.storage.peruser import home, jsonstore
from ralphstate.storage.peruser.jsonstore import Entry
from ralphstate.storage.system.paths import LoopPaths

TRUST_NAME = "trust.json"


def _path() -> Path:
    return home.data_dir() / TRUST_NAME


def checks_hash(checks: dict[str, str]) -> str:
    """The fingerprint of a set of checks: every criterion name and its command."""
    import hashlib  # OpenSSL's module: only a loop with checks needs it

    return hashlib.sha256(orjson.dumps(checks, option=orjson.OPT_SORT_KEYS)).hexdigest()


def armed(state: State) -> dict[str, str]:
    """The checks that may run: those of the loop's criteria, in the criteria's order."""
    checks = state["checks"]
    return {name: checks[name] for name in state["criteria"] if name in checks}


def idle(state: State) -> dict[str, str]:
    """Checks keyed to names that are not criteria: never run, never trusted."""
    criteria = set(state["criteria"])
    return {name: command for name, command in state["checks"].items() if name not in criteria}


def read() -> dict[str, Entry]:
    """Every trust record by loop directory; an unreadable store (or none, without a
    home directory) reads as empty."""
    try:
        return jsonstore.read(_path())
    except home.NoHome:
        return {}


# The fields that say how a record was proven: carried with the trust they prove.
PROOF_FIELDS = ("by", "terminal", "agentAbove")
# How a person's presence is proven (the actor's `present`, loop/person.py), and
# `ralphstate demo`'s own check in its scratch home (cli/demo.py: `DEMO`).
PROVEN = ("terminal", "prompt", "ci", "demo")
# Who trusts the check `ralphstate demo` wrote itself, in the scratch home it made.
DEMO = {"kind": "person", "present": "demo"}


def proven(entry: Entry) -> bool:
    """Whether the record `entry` counts: written for a person shown present (their
    terminal, Claude Code's prompt, the CI job). One written where nobody could have
    been asked (no terminal, no agent client above: an older ralphstate trusted a
    script's `init -c` so) proves nobody, and counts as none."""
    by = entry.get("by")
    return actor.is_person(by) and isinstance(by, dict) and by.get("present") in PROVEN


def unproven(paths: LoopPaths, state: State) -> bool:
    """True when a record matches these checks but counts as none (`proven`): the
    approval was recorded by someone whose presence was not shown."""
    checks = armed(state)
    entry = read().get(jsonstore.key(paths))
    return (
        bool(checks)
        and entry is not None
        and entry.get("checksHash") == checks_hash(checks)
        and not proven(entry)
    )


def proof_of(paths: LoopPaths) -> Entry:
    """How the loop's record was proven (`PROOF_FIELDS`), to carry with its trust."""
    entry = read().get(jsonstore.key(paths), {})
    return {name: entry[name] for name in PROOF_FIELDS if name in entry}


def _proof_here() -> Entry:
    """How this process can prove the person: its actor, and when that shows no
    presence, whether it has a terminal and an agent client among its parents."""
    from ralphstate.storage.system import ancestry, terminal

    by = actor.current()
    if isinstance(by, dict) and by.get("present") in PROVEN:
        return {"by": dict(by)}
    return {
        "by": dict(by),
        "terminal": terminal.available(),
        "agentAbove": ancestry.client_above() is not None,
    }


def _trusts(paths: LoopPaths, checks: dict[str, str]) -> bool:
    if not checks:
        return True
    entry = read().get(jsonstore.key(paths))
    return entry is not None and entry.get("checksHash") == checks_hash(checks) and proven(entry)


def is_trusted(paths: LoopPaths, state: State) -> bool:
    """True when a person trusted exactly these checks for this loop on this machine."""
    return _trusts(paths, armed(state))


def run_hash(settings: dict[str, object]) -> str:
    import hashlib

    return hashlib.sha256(orjson.dumps(settings, option=orjson.OPT_SORT_KEYS)).hexdigest()


# The run settings that say how the agent is confined.
SANDBOX_KEYS = ("sandbox", "offline")


def run_trusted(paths: LoopPaths, settings: dict[str, object]) -> bool:
    """True when a person trusted exactly these run settings (the agent command and the
    context files a configuration file names) for this loop here; none need no trust."""
    if not settings:
        return True
    entry = read().get(jsonstore.key(paths))
    return entry is not None and entry.get("runHash") == run_hash(settings)


def record(
    paths: LoopPaths,
    state: State,
    run: dict[str, object] | None = None,
    env: list[str] | None = None,
    proof: Entry | None = None,
) -> None:
    """Trust the loop's current checks here (and, given, the run settings `run`), with
    the environment of this process as the checks' own (`checkenv`: the essentials and
    the variables named in `env`, else those named before), and the fingerprint of what
    the checks resolve to in it (`toolchain`); RalphstateError if the store cannot be
    written. The record says how the person was shown there (`proven`): `proof`, that
    of the record this one carries forward, else this process's."""
    from ralphstate.storage.peruser import checkenv, toolchain

    checks = armed(state)
    entry: Entry = {
        "checksHash": checks_hash(checks),
        "checks": len(checks),
        "trustedAt": clock.now_iso(),
        **(proof if proof is not None else _proof_here()),
    }
    if run is not None:
        entry["runHash"] = run_hash(run)
        # The confinement the person trusted, by key: a key later gone from the
        # configuration (the agent deleted it) is noticed (`recorded_sandbox`).
        entry["runSandbox"] = {k: run[k] for k in SANDBOX_KEYS if k in run}
    key = jsonstore.key(paths)
    before = read().get(key, {})
    if env is None:
        env = [str(n) for n in (before.get("envNames") or [])]
    entry["envNames"] = sorted(set(env))
    entry["env"] = checkenv.capture(env)
    if checks:
        found = toolchain.fingerprint(list(checks.values()), paths.root, entry["env"])
        entry["toolchain"] = toolchain.keep(jsonstore.key(paths), found)

    def edit(loops: dict[str, Entry]) -> None:
        old = loops.get(key, {})
        kept: dict[str, object] = {
            k: old[k] for k in ("runHash", "runSandbox") if k in old and run is None
        }
        loops[key] = {**kept, **entry}

    jsonstore.change(_path(), "the trust store", edit)
    old = before.get("toolchain")
    if isinstance(old, str) and old != entry.get("toolchain"):
        toolchain.forget(old)


def recorded_sandbox(paths: LoopPaths) -> dict[str, object]:
    """The confinement settings (`SANDBOX_KEYS`) a configuration file gave when the
    person last trusted the loop's run settings here; empty when none."""
    found = read().get(jsonstore.key(paths), {}).get("runSandbox")
    return dict(found) if isinstance(found, dict) else {}


def recorded_env(paths: LoopPaths) -> dict[str, str] | None:
    """The environment recorded for the loop's checks at approval; None for a loop
    trusted before it was recorded (`checkenv.for_check` says what runs then)."""
    env = read().get(jsonstore.key(paths), {}).get("env")
    return env if isinstance(env, dict) else None


def recorded_toolchain(paths: LoopPaths) -> dict[str, str] | None:
    """The fingerprint of the checks' toolchain recorded at approval (`toolchain.keep`:
    its own file, named by its hash here); None when none was."""
    from ralphstate.storage.peruser import toolchain

    digest = read().get(jsonstore.key(paths), {}).get("toolchain")
    return toolchain.kept(digest) if isinstance(digest, str) else None


def carry(paths: LoopPaths, before: dict[str, str], state: State, changed: set[str]) -> None:
    """After ralphstate itself changed the checks of the criteria `changed` (from the
    armed checks `before`, see `armed`): what was trusted stays trusted.

    Only when nothing but those criteria's checks changed: a check that came with the
    file and is armed by the change (`criteria add` of its name) is not carried, and
    leaves the checks untrusted. Nor when an agent session or a run made the change:
    only a person's change keeps the checks trusted. Checks that were not trusted
    before stay untrusted; a failure to write the store only leaves them untrusted
    (status and doctor say so)."""
    after = armed(state)
    if before == after or not _trusts(paths, before):
        return
    if not actor.is_person(actor.current()):
        return  # an agent's change to a check is not the person's: it waits for trust
    from ralphstate.storage.system import ancestry

    if ancestry.client_above() is not None:
        return  # nor is one made under an agent client, whatever its environment says
    for name in set(before) | set(after):
        if name not in changed and before.get(name) != after.get(name):
            return
    with contextlib.suppress(RalphstateError):
        record(paths, state, proof=proof_of(paths) if before else None)


def env_names(paths: LoopPaths) -> list[str]:
    """The variables a person named for the loop's checks (`--env`)."""
    names = read().get(jsonstore.key(paths), {}).get("envNames")
    return [str(n) for n in names] if isinstance(names, list) else []


def name_env(paths: LoopPaths, state: State, names: list[str]) -> None:
    """The person names more variables for the loop's checks (`criteria check --env`):
    trusted checks are recorded again with them; otherwise the names wait for the next
    `trust`, which records their values. RalphstateError if the store cannot be written."""
    every = sorted({*env_names(paths), *names})
    if is_trusted(paths, state):
        record(paths, state, env=every)
        return

    def edit(loops: dict[str, Entry]) -> None:
        key = jsonstore.key(paths)
        loops[key] = {**loops.get(key, {}), "envNames": every}

    jsonstore.change(_path(), "the trust store", edit)
