"""`ralphstate status`: the loop, as a person reads it."""

from __future__ import annotations

from pathlib import Path

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import views
from ralphstate.loop import proofreview, statusfacts
from ralphstate.loop.project import locate


@click.command(context_settings=SETTINGS)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the normalised state as JSON, with knownHere, proof and staleEvidence.",
)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="List every criterion, check, step and task (by default each list shows 100).",
)
def status(as_json: bool, every: bool) -> None:
    """Show the loop: spec, criteria, steps, iteration, owner.

    \b
    Example:
      ralphstate status
      ralphstate status --all
      ralphstate status --json | jq .criteriaStatus
    """
    state, facts = statusfacts.gather(locate(), Path.cwd(), view=not as_json)
    if as_json:
        output.json(statusfacts.as_json(state, facts))
        return
    said = proofreview.headline(facts.proof) if facts.proof else None
    if said:  # the loop's headline: nothing else completes it
        output.text(output.style(said, fg="red", bold=True))
    output.text(views.status(state, facts, output.style, every))
    for line in views.status_notes(state, facts, output.style):
        output.text(line)
