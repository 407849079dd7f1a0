"""`ralphstate watch`: a loop's live state, from another terminal."""

from __future__ import annotations

import sys

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.loop.project import locate


@click.command("watch", context_settings=SETTINGS)
@click.option(
    "--interval",
    type=click.FloatRange(0.05, 60),
    default=limits.WATCH_INTERVAL,
    show_default=True,
    metavar="SECONDS",
    help="How often to look at the state file.",
)
@click.option("--once", is_flag=True, help="Show the state once and exit.")
def watch_command(interval: float, once: bool) -> None:
    """Show a loop's live state, redrawn as .loop/state.json changes; Ctrl-C ends it.

    Works for any loop, run by `ralphstate run` or by the hooks, from another terminal.

    \b
    Example:
      ralphstate watch
      ralphstate watch --once
    """
    from ralphstate.run import liveview

    store = locate()
    if not store.exists():
        raise RalphstateError("no loop here.")
    if once:
        store.load()  # a file that cannot be read is one line and exit 1, as in `status`
    tty = sys.stdout.isatty()
    try:
        liveview.watch(
            store,
            output.text,
            interval=interval,
            once=once,
            clear=click.clear if tty else None,
            style=output.style,
        )
    except KeyboardInterrupt:
        output.text("")
