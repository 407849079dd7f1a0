"""`ralphstate ci-summary`: every loop of a matrix in one table, for the workflow's final
job (ci/loops.py)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ralphstate.ci import github, loops
from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS


@click.command("ci-summary", context_settings={**SETTINGS, "auto_envvar_prefix": "RALPHSTATE_CI"})
@click.option(
    "--prefix",
    default="ralphstate/",
    show_default=True,
    help="The loops' branches: every branch of the remote under this prefix.",
)
@click.option(
    "--loops",
    "names",
    default=None,
    help="Only these loops, one a line or separated by spaces (their branch is PREFIX + name).",
)
@click.option("--remote", default="origin", show_default=True, help="Where the branches are read.")
def ci_summary_command(prefix: str, names: str | None, remote: str) -> None:
    """Every loop in one table: each loop's state as its branch on the remote records it.

    For the final job of a workflow that runs many loops (a matrix, `needs:` it): one
    row per loop with its status, iterations, criteria met and cost, written to the
    job's summary on GitHub Actions and printed. It reads the branches; it proves
    nothing itself (each loop's job proved it before pushing `complete`).

    \b
    Example:
      ralphstate ci-summary --prefix ralphstate/ --loops "csv-export faster-search"
    """
    only = (names or "").split()
    found = loops.rows(Path.cwd(), remote, prefix, only)
    said = loops.table(found, remote)
    github.add_summary(said, os.environ)
    output.text(said.rstrip("\n"))
