"""`ralphstate uninstall`: what `install` added, removed."""

from __future__ import annotations

from typing import Any

import click

from ralphstate.cli.install import setup, setup_options
from ralphstate.cli.options import SETTINGS


@click.command(
    "uninstall",
    context_settings=SETTINGS,
    short_help="Remove what `ralphstate install` added, and nothing else.",
)
@setup_options
def uninstall_(**options: Any) -> None:
    """Remove what `ralphstate install` added, with the same options: its hooks, the
    permission rules it added (--no-allow keeps them; --allow-only removes them alone),
    the task tools' switch it turned on, and nothing else. The same as `ralphstate
    install --uninstall`.

    \b
    Example:
      ralphstate uninstall
      ralphstate uninstall --scope project
      ralphstate uninstall --agent codex
      ralphstate uninstall --statusline
    """
    setup(**options, uninstall=True)
