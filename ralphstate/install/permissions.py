"""The `permissions.allow` rules `ralphstate install` adds to a Claude Code settings
file, so that the agent's own ralphstate commands run without a permission prompt:
`claude -p` refuses a command that would ask, and the interactive client waits at
"Do you want to proceed?" for a person who is asleep.

One rule for each command the agent is told to run, in the block reasons, the
SessionStart context, `ralphstate run`'s prompt, the skill and the plugin's commands:
reading the loop, recording progress, running the checks, proposing a check (a check
the agent sets runs only once the person trusts it, and one it changes waits for the
person's review) and pausing for a person. Never one for a command only the person
may run: approving what proves the loop done (`trust`, `review`), ending or taking
over the loop (`cancel`, `resume`, `adopt`), its settings (`config`), starting one
(`init`, which the person approves in `/ralphstate:start`), or the hooks themselves.
The rules use Claude Code's prefix form, `Bash(ralphstate step done:*)`, which matches
the command with any arguments and, in a compound command, only its own part.

What install added is recorded (`storage.installed`): a rule the person wrote
already is neither added again nor removed by `--uninstall`, which removes exactly the
rules install added, and the `allow` list and `permissions` object when install made
them and nothing else is left in them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralphstate.core.errors import RalphstateError
from ralphstate.storage.peruser.installed import Added

# The commands the agent runs on its own, as it is told to.
AGENT_COMMANDS = (
    "status",
    "show",
    "log",
    "verify",
    "criteria list",
    "criteria set",
    "criteria add",
    "criteria check",
    "step add",
    "step done",
    "step undo",
    "pause",
)
# The commands no rule allows: those only the person may run, and those the agent is
# never told to run (tests hold the two lists to every command there is).
PERSON_COMMANDS = (
    "trust",
    "review",
    "cancel",
    "resume",
    "adopt",
    "config",
    "init",
    "install",
    "uninstall",
    "run",
    "ci",
    "prove",
    "ci-summary",
    "heldout add",
    "heldout list",
    "heldout remove",
    "heldout show",
    "criteria remove",
    "criteria rubric",
    "demo",
    "doctor",
    "list",
    "report",
    "watch",
    "worktree add",
    "worktree remove",
)
RULES = tuple(f"Bash(ralphstate {command}:*)" for command in AGENT_COMMANDS)


def add(data: dict[str, Any], path: Path, before: Added) -> tuple[list[str], Added]:
    """Add the RULES `data`'s `permissions.allow` lacks: (what was done, what install
    has added to the file now, its `env` as `before` has it)."""
    permissions = data.get("permissions")
    if permissions is not None and not isinstance(permissions, dict):
        raise RalphstateError(f'"permissions" in {path} is not an object; nothing was changed.')
    made_permissions = before.made_permissions or permissions is None
    permissions = data.setdefault("permissions", {})
    allow = permissions.get("allow")
    if allow is not None and not isinstance(allow, list):
        raise RalphstateError(f'"permissions.allow" in {path} is not a list; nothing was changed.')
    made_allow = before.made_allow or allow is None
    allow = permissions.setdefault("allow", [])
    new = [rule for rule in RULES if rule not in allow]
    allow.extend(new)
    rules = [*before.allow, *(rule for rule in new if rule not in before.allow)]
    now = Added(before.env, before.made_env, rules, (made_permissions, made_allow))
    if not new:
        return ["the agent's ralphstate commands are allowed already (permissions.allow)"], now
    said = (
        f"allowed the agent's own ralphstate commands without a prompt (permissions.allow:"
        f" {shown(new)}); trust, review, cancel and install still ask"
    )
    return [said], now


def remove(data: dict[str, Any], before: Added) -> list[str]:
    """Remove the rules install added (one copy of each), and what it made that is
    left empty."""
    permissions = data.get("permissions")
    allow = permissions.get("allow") if isinstance(permissions, dict) else None
    if not before.allow or not isinstance(allow, list):
        return []
    removed = []
    for rule in before.allow:
        if rule in allow:
            allow.remove(rule)
            removed.append(rule)
    assert isinstance(permissions, dict)
    if before.made_allow and not allow:
        del permissions["allow"]
    if before.made_permissions and not permissions:
        del data["permissions"]
    if not removed:
        return []
    rules = "rule" if len(removed) == 1 else "rules"
    return [f"removed the permissions.allow {rules} install added: {shown(removed)}"]


def shown(rules: list[str]) -> str:
    """`status, verify, criteria set` for `Bash(ralphstate status:*)`, ...: the commands."""
    prefix, suffix = "Bash(ralphstate ", ":*)"
    return ", ".join(
        r[len(prefix) : -len(suffix)] if r.startswith(prefix) and r.endswith(suffix) else r
        for r in rules
    )
