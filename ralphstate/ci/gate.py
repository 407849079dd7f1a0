"""The proof that gates a merge (`ralphstate prove`): a pull request's loop proved by the
base branch's contract, on the commit the pull request would make.

A required check for pull requests runs it on the merge commit. The contract (criteria,
checks, guarded tests) comes from the trusted branch as the remote holds it, never from
the pull request; the pull request's loop must hold the same contract (a change to what
proves it is unreviewed, and fails the check: change it on the base first); then the
trusted checks run in a clean room, with the guarded tests as the base holds them, on
the pull request's code. Every check must pass. The outcome is kept where anyone can
check it again later: a git note (`refs/notes/ralphstate`) on the commit, with the
contract's hash and the tree's (docs/how-to/github-action.md, "The proof that gates a
merge").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ralphstate.ci import pushing, trusted
from ralphstate.core import proof
from ralphstate.core.text import visible

NOTES_REF = "refs/notes/ralphstate"


@dataclass
class Proven:
    """What `prove` found: its problems (none: proven), each check's result, and what
    the proof was made against."""

    source: str
    contract_hash: str
    tree: str
    commit: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    loop_status: str | None = None

    @property
    def proven(self) -> bool:
        return not self.problems

    def note(self) -> dict[str, Any]:
        """The git note's body: enough to run the same proof again and compare."""
        return {
            "proven": self.proven,
            "contract": self.contract_hash,
            "tree": self.tree,
            "source": self.source,
            "checks": self.checks,
            "problems": self.problems,
        }


def contract_hash(contract: Any) -> str:
    import hashlib

    return hashlib.sha256(orjson.dumps(contract, option=orjson.OPT_SORT_KEYS)).hexdigest()


def prove(root: Path, remote: str, trusted_branch: str | None) -> Proven:
    """Prove the loop of the checkout at `root` by the contract of `trusted_branch` (as
    `remote` holds it; None: HEAD's own, outside CI)."""
    from ralphstate.loop.project import locate

    base = pushing.trusted_commit(root, remote, trusted_branch, None)
    contract = trusted.from_commit(root, base)
    where = f" on {visible(trusted_branch)}" if trusted_branch else ""
    source = f"{trusted.STATE_PATH}{where} at {base[:10]}"
    head = pushing.stdout(pushing.git(root, "rev-parse", "HEAD"))
    tree = pushing.stdout(pushing.git(root, "rev-parse", "HEAD^{tree}"))
    state_file = root / trusted.STATE_PATH
    if contract is None:
        found = Proven(source, "", tree, head)
        if state_file.exists():
            found.problems.append(
                f"{source} holds no loop: nothing a person committed says what proves this"
                " pull request's loop done"
            )
        return found
    found = Proven(source, contract_hash(contract), tree, head)
    if not state_file.exists():
        found.problems.append(f"the pull request has no {trusted.STATE_PATH}: its loop is gone")
        return found
    store = locate(root)
    found.loop_status = store.load()["status"]
    for change in trusted.differences(contract, store.load()):
        found.problems.append(f"the pull request changes what proves the loop: {change}")
    trusted.put_back(store, contract, source)
    trusted.approve(store, base)
    passed, problems = trusted.run_checks(store, proof_criteria(contract), clean=True)
    for name, ok in passed.items():
        found.checks.append({"criterion": name, "check": contract["checks"][name], "passed": ok})
    found.problems += problems
    return found


def proof_criteria(contract: proof.Contract) -> list[str]:
    """The criteria of `contract` that have a check, in its order."""
    return [c for c in contract["criteria"] if c in contract["checks"]]


def write_note(root: Path, found: Proven, remote: str | None) -> str:
    """Add the outcome as a git note on the commit, and push the notes to `remote` when
    given; one sentence of what was done."""
    body = orjson.dumps(found.note(), option=orjson.OPT_INDENT_2).decode()
    added = pushing.git(root, "notes", "--ref", NOTES_REF, "add", "-f", "-m", body, found.commit)
    if added.code != 0:
        return f"The outcome could not be noted on {found.commit[:10]}: {pushing.text(added)}."
    if remote is None:
        return f"The outcome is noted on {found.commit[:10]} ({NOTES_REF})."
    pushed = pushing.git(root, "push", "--quiet", remote, f"{NOTES_REF}:{NOTES_REF}")
    if pushed.code != 0:
        return (
            f"The outcome is noted on {found.commit[:10]} ({NOTES_REF}), but the note could"
            f" not be pushed: {visible(pushing.text(pushed))}."
        )
    return f"The outcome is noted on {found.commit[:10]} and pushed ({NOTES_REF})."


def summary(found: Proven, said: str) -> str:
    """The job's summary: what was proven, by which checks, against which contract."""
    head = "proven" if found.proven else "NOT proven"
    lines = [f"## ralphstate prove: {head}", ""]
    lines.append(f"- Contract: {found.source} (sha256 {found.contract_hash[:16] or '-'})")
    lines.append(f"- Tree: {found.tree[:16]} (commit {found.commit[:10]})")
    if found.loop_status:
        lines.append(f"- The pull request's loop says: {found.loop_status}")
    lines += [f"- Not proven: {p}." for p in found.problems]
    lines.append(f"- {said}")
    if found.checks:
        lines += ["", "| criterion | check | result |", "|---|---|---|"]
        for check in found.checks:
            result = "passed" if check["passed"] else "failed"
            name = visible(check["criterion"]).replace("|", "\\|")
            command = visible(check["check"]).replace("|", "\\|")
            lines.append(f"| {name} | `{command}` | {result} |")
    return "\n".join(lines) + "\n"
