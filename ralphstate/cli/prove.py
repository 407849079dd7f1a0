"""`ralphstate prove`: the required check of a pull request, its loop proved by the base
branch's contract on the merge commit (ci/gate.py)."""

from __future__ import annotations

import os
from pathlib import Path

import click
import orjson

from ralphstate.ci import gate, github
from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS


@click.command("prove", context_settings={**SETTINGS, "auto_envvar_prefix": "RALPHSTATE_CI"})
@click.option(
    "--trusted-branch",
    default=None,
    help="The branch whose loop proves it.  [default: the repository's default branch on"
    " GitHub Actions; elsewhere this checkout's own commit]",
)
@click.option("--remote", default="origin", show_default=True, help="Where the branch is read.")
@click.option("--note/--no-note", default=True, help="Note the outcome on the commit (git notes).")
@click.option("--push-note", is_flag=True, help="Push the note to the remote too.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
def prove_command(
    trusted_branch: str | None, remote: str, note: bool, push_note: bool, as_json: bool
) -> None:
    """Prove this checkout's loop by the trusted branch's contract: the gate of a merge.

    For a pull request's required check, on its merge commit: the criteria, checks
    and guarded tests come from the trusted branch as the remote holds it, never from
    the pull request. A pull request that changes what proves its loop fails (change
    it on the base first); otherwise the trusted checks run in a clean room, with the
    guarded tests as the base holds them, and each must pass. The outcome goes to the
    job's summary and, with --note, into a git note on the commit
    (refs/notes/ralphstate) with the contract's hash and the tree's.

    Exit 0 when the loop is proven (or there is no loop anywhere), 1 when it is not.

    \b
    Example:
      ralphstate prove --trusted-branch main
    """
    trusted_branch = trusted_branch or github.default_branch(os.environ)
    found = gate.prove(Path.cwd(), remote, trusted_branch)
    said = (
        gate.write_note(Path.cwd(), found, remote if push_note else None)
        if note and found.commit
        else "The outcome is not noted."
    )
    github.add_summary(gate.summary(found, said), os.environ)
    if as_json:
        output.text(orjson.dumps(found.note()).decode())
    else:
        head = "proven" if found.proven else "NOT proven"
        output.text(f"ralphstate prove: {head} by {found.source}")
        for problem in found.problems:
            output.text(f"  - {problem}")
        output.text(said)
    if not found.proven:
        raise SystemExit(1)
