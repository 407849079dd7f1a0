"""`ralphstate resume`: a paused loop goes on."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS, positive
from ralphstate.core import budgets, render
from ralphstate.loop import control, proofreview
from ralphstate.loop.project import locate


@click.command(context_settings=SETTINGS)
@click.option(
    "--more",
    type=int,
    default=None,
    callback=positive,
    help="Allow N more iterations (10 when the cap was reached and N is not given).",
)
def resume(more: int | None) -> None:
    """Resume a paused loop.

    \b
    Example:
      ralphstate resume --more 10
    """
    store = locate()
    new, changed = control.resume(store, more)
    already = "" if changed else "already "
    line = f"{already}in progress: iteration {new['iteration']}/{new['maxIterations']}"
    over = budgets.over_budget(new)
    if over:  # the next stop (or run) would pause it again at once
        line += (
            f"; its budget is still reached ({over}), so the next stop pauses it again:"
            f" raise it first ({render.raise_budget(over)})"
        )
    output.text(line)
    said = proofreview.headline(proofreview.summary(store, new))
    if said:  # resuming does not approve: the loop still cannot complete
        output.text(output.style(said, fg="red", bold=True))
