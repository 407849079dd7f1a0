"""`ralphstate pause`, `resume`, `adopt`, `cancel`: the loop's status and its owner."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS, positive
from ralphstate.core import budgets, queries
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
    from ralphstate.core import render

    new, changed = control.resume(locate(), more)
    already = "" if changed else "already "
    line = f"{already}in progress: iteration {new['iteration']}/{new['maxIterations']}"
    over = budgets.over_budget(new)
    if over:  # the next stop (or run) would pause it again at once
        line += (
            f"; its budget is still reached ({over}), so the next stop pauses it again:"
            f" raise it first ({render.raise_budget(over)})"
        )
    output.text(line)


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


@click.command(context_settings=SETTINGS)
def cancel() -> None:
    """Cancel the loop; the state stays on disk for reference.

    \b
    Example:
      ralphstate cancel
    """
    _new, changed = control.cancel(locate())
    output.text("cancelled" if changed else "already cancelled")
