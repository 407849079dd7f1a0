"""What every command shares: click's context settings and the check of a count."""

from __future__ import annotations

import click

SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def positive(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    """A count of at least 1: there is no unlimited."""
    if value is not None and value < 1:
        raise click.BadParameter("must be at least 1 (there is no unlimited).")
    return value
