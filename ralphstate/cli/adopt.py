"""`ralphstate adopt`: this session owns the loop."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.loop import control
from ralphstate.loop.project import locate


@click.command(context_settings=SETTINGS)
def adopt() -> None:
    """Own the loop from this Claude Code session ($CLAUDE_CODE_SESSION_ID).

    Run outside a session, it records the loop as known on this machine (its checks
    still need `ralphstate trust`) and lets the next session that starts here take it.

    \b
    Example:
      ralphstate adopt
    """
    new = control.adopt(locate())
    owner = new["sessionId"]
    output.text(
        f"adopted by session {owner}" if owner else "adopted; the next session here owns it"
    )
