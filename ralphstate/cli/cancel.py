"""`ralphstate cancel`: the loop ends, its state kept."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.loop import control
from ralphstate.loop.project import locate


@click.command(context_settings=SETTINGS)
def cancel() -> None:
    """Cancel the loop; the state stays on disk for reference.

    \b
    Example:
      ralphstate cancel
    """
    _new, changed = control.cancel(locate())
    output.text("cancelled" if changed else "already cancelled")
