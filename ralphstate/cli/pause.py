"""`ralphstate pause`: the loop stops holding the agent."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import queries
from ralphstate.core.text import visible
from ralphstate.loop import control
from ralphstate.loop.project import locate


@click.command(context_settings=SETTINGS)
@click.option("--reason", default="user", show_default=True, help="Recorded as pauseReason.")
@click.option(
    "--blocked",
    metavar="TEXT",
    default=None,
    help="Blocked on a person: what they must do. Recorded as pauseReason"
    ' "blocked: TEXT"; `ralphstate run` then ends with exit 4.',
)
def pause(reason: str, blocked: str | None) -> None:
    """Pause the loop: the Stop hook lets the agent stop until you resume.

    \b
    Example:
      ralphstate pause --reason "waiting for API keys"
      ralphstate pause --blocked "needs the staging database password"
    """
    if blocked is not None:
        if not blocked.strip():
            raise click.BadParameter("say what the person must do.", param_hint="--blocked")
        reason = queries.blocked_reason(blocked)
    new, changed = control.pause(locate(), reason)
    already = "" if changed else f"already paused ({visible(new['pauseReason'] or 'user')})"
    output.text(f"{already or 'paused'}; continue with `ralphstate resume`")
