"""`ralphstate show`: .loop/state.json as it is stored."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.loop.project import locate


@click.command(context_settings=SETTINGS)
def show() -> None:
    """Print .loop/state.json exactly as it is stored.

    \b
    Example:
      ralphstate show
    """
    store = locate()
    data = store.read_bytes()
    output.text(data.decode("utf-8", "replace"), nl=not data.endswith(b"\n"))
