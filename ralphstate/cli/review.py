"""`ralphstate review`: what changed in the loop's proof since the person approved it,
and their answer: approve it or go back (docs/explanation/proof.md)."""

from __future__ import annotations

from typing import Any

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import actor, proof, provenance
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.loop import proofreview
from ralphstate.loop.person import require_person
from ralphstate.loop.project import locate
from ralphstate.storage.peruser import ledger


@click.command(context_settings=SETTINGS)
@click.option("--approve", is_flag=True, help="Approve the loop's proof as it is now.")
@click.option("--revert", is_flag=True, help="Put back the proof you last approved.")
@click.option("--json", "as_json", is_flag=True, help="Print the review as JSON.")
def review_command(approve: bool, revert: bool, as_json: bool) -> None:
    """Review what changed in what proves the loop done since you approved it.

    The criteria, their checks and timeouts, verify-on-stop, noCriteria, the guarded
    files and clean-room verification are yours: a change an agent (or a hand edit of
    state.json) makes that weakens them does not count until you approve it here, and
    a claimed completion pauses for it meanwhile. Without an option, it shows the
    difference and who made it; --approve accepts it (and trusts the checks on this
    machine, as `ralphstate trust` does); --revert puts back what you approved. Only
    a person may approve or revert: an agent session is refused.

    \\b
    Example:
      ralphstate review
      ralphstate review --approve
    """
    if approve and revert:
        raise RalphstateError("--approve and --revert go one at a time.")
    store = locate()
    if approve or revert:
        _person_only(store, "review --approve" if approve else "review --revert")
        state = (
            proofreview.approve(store, actor.current()) if approve else proofreview.revert(store)
        )
        done = "approved" if approve else "reverted to what you approved"
        output.text(f"ralphstate: the loop's proof is {done}; the loop is {state['status']}.")
        return
    state = store.load()
    shown = _shown(store, state)
    if as_json:
        output.json(shown)
        return
    for line in _lines(shown):
        output.text(line)


def _person_only(store: Any, what: str) -> None:
    """Refuse an approval from an agent session or a run (loop/person.py)."""
    require_person(store.paths, f"ralphstate {what}")


def _shown(store: Any, state: Any) -> dict[str, Any]:
    entry = ledger.of_loop(store.paths, state) or {}
    pending = proofreview.pending(store, state)
    approved = entry.get("approved") if isinstance(entry.get("approved"), dict) else None
    current = proof.contract_of(state)
    return {
        "approvedBy": actor.describe(entry.get("approvedBy")) if entry else None,
        "approvedAs": provenance.approval(entry.get("approvedBy")) if entry else None,
        "approvedAt": entry.get("approvedAt"),
        "author": actor.describe(entry.get("author")) if entry else None,
        "changes": pending.changes,
        "by": pending.by,
        "newTests": pending.new_tests,
        "difference": proof.differences(approved, current) if approved else [],
        "diff": proofreview.files_diff(store, state, pending.files) if pending.files else "",
    }


def _lines(shown: dict[str, Any]) -> list[str]:
    when = f" at {shown['approvedAt']}" if shown["approvedAt"] else ""
    who = shown["approvedAs"]
    lines = [f"approved {who if shown['approvedBy'] else 'by nobody yet'}{when}"]
    if not shown["changes"] and not shown["difference"] and not shown["newTests"]:
        return [*lines, "Nothing to review: the loop's proof is as approved."]
    if shown["changes"]:
        lines.append(f"needs your review (by {', '.join(shown['by']) or 'someone unknown'}):")
        lines += [f"  - {c}" for c in shown["changes"]]
    if shown["difference"]:
        lines += ["contract, approved (-) and now (+):", *[f"  {d}" for d in shown["difference"]]]
    if shown["newTests"]:
        lines.append("new test files (no review needed):")
        lines += [f"  + {visible(t)}" for t in shown["newTests"]]
    if shown["diff"]:
        lines += ["guarded files, approved to now:", shown["diff"].rstrip("\n")]
    if shown["changes"]:
        lines.append(
            "Approve with `ralphstate review --approve`, or go back with"
            " `ralphstate review --revert`."
        )
    return lines
