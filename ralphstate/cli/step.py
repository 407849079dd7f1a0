"""`ralphstate step add|done|undo`: the plan."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core.text import visible
from ralphstate.loop import checklist
from ralphstate.loop.project import locate


@click.group(context_settings=SETTINGS)
def step() -> None:
    """Add steps to the plan and mark them done or not done.

    \b
    Example:
      ralphstate step done "write the exporter"
      ralphstate step done 2
    """


@step.command("add", context_settings=SETTINGS)
@click.argument("text")
def step_add(text: str) -> None:
    """Add a step at the end of the plan.

    \b
    Example:
      ralphstate step add "update the changelog"
    """
    checklist.step_add(locate(), text)
    output.text(f"added step '{visible(text)}'")


@step.command("done", context_settings=SETTINGS)
@click.argument("step")
def step_done(step: str) -> None:
    """Mark a step done. STEP is its text or its 1-based number.

    \b
    Example:
      ralphstate step done "write the exporter"
    """
    found = checklist.step_mark(locate(), step, True)
    output.text(f"done: {visible(found)}")


@step.command("undo", context_settings=SETTINGS)
@click.argument("step")
def step_undo(step: str) -> None:
    """Mark a done step as not done again. STEP is its text or its 1-based number.

    \b
    Example:
      ralphstate step undo 1
    """
    found = checklist.step_mark(locate(), step, False)
    output.text(f"not done: {visible(found)}")
