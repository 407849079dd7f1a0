"""Everything the command line prints goes through here: text, JSON, one-line errors.

orjson is imported only when JSON is printed.
"""

from __future__ import annotations

from typing import IO, Any

import click

style = click.style


def text(
    message: str = "", *, nl: bool = True, err: bool = False, file: IO[str] | None = None
) -> None:
    """A line for people, on stdout (stderr with `err`, or `file`)."""
    click.echo(message, nl=nl, err=err, file=file)


def json(data: Any, *, compact: bool = False) -> None:
    """`data` as JSON on stdout: indented by two spaces, or on one line with `compact`."""
    import orjson

    option = 0 if compact else orjson.OPT_INDENT_2
    click.echo(orjson.dumps(data, option=option).decode())


def error(message: str) -> None:
    """One line on stderr: `ralphstate: <message>`."""
    click.echo(f"ralphstate: {message}", err=True)
