"""`ralphstate list`: the loops this machine knows."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import views
from ralphstate.loop import listing
from ralphstate.storage.peruser import registry


@click.command("list", context_settings=SETTINGS)
@click.option("--json", "as_json", is_flag=True, help="Print the loops as JSON.")
@click.option("--prune", is_flag=True, help="Forget loops whose directory is gone.")
def list_(as_json: bool, prune: bool) -> None:
    """List every loop created or adopted on this machine.

    \b
    Example:
      ralphstate list
      ralphstate list --prune
    """
    rows = listing.list_loops(prune)
    unusable = registry.problem()
    if unusable:  # never an empty list without a word
        output.error(unusable)
    if as_json:
        output.json(rows)
        return
    if not rows:
        output.text("no loops recorded on this machine")
    for row in rows:
        output.text(views.loop_row(row))
