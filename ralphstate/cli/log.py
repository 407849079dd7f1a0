"""`ralphstate log`: the loop's history."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS, positive
from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.loop.project import locate
from ralphstate.run import logline
from ralphstate.storage.loopdir.store import of_loop


@click.command(
    context_settings=SETTINGS,
    short_help="Show the loop's history (.loop/history.jsonl), newest last.",
)
@click.option(
    "-n",
    "lines",
    type=int,
    default=20,
    show_default=True,
    callback=positive,
    help="How many of the newest entries.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line.")
@click.option("--all", "every_loop", is_flag=True, help="Also the entries of earlier loops here.")
def log(lines: int, as_json: bool, every_loop: bool) -> None:
    """Show the loop's history (.loop/history.jsonl), newest last: the current loop's
    entries, or with --all those of earlier loops in this directory too.

    \b
    Example:
      ralphstate log -n 50
    """
    store = locate()
    entries = store.history(limits.MAX_LOG_LINES)
    if not every_loop:
        try:
            loop_id = store.load()["loopId"]
        except RalphstateError as exc:  # the history stays readable: the newest loop's
            loop_id = next((str(e["loop"]) for e in reversed(entries) if e.get("loop")), None)
            output.error(
                f"the state file cannot be read ({str(exc).rstrip('.')}); the history below"
                " is that of the newest loop in it"
            )
        entries = of_loop(entries, loop_id)
    for entry in entries[-min(lines, limits.MAX_LOG_LINES) :]:
        if as_json:
            output.json(entry, compact=True)
        else:
            output.text(logline.line(entry))
