"""`ralphstate doctor`: the hooks, the loop and the limits checked, one line each."""

from __future__ import annotations

from pathlib import Path

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core.text import visible
from ralphstate.install import checkup


@click.command("doctor", context_settings=SETTINGS)
def doctor_command() -> None:
    """Check the hooks, the loop and the limits; one line each. Exits 1 on a failure.

    Each line is `ok` (as it should be), `note` (advice, or worth knowing), `warn` (may
    not work) or `fail` (does not work). In a subdirectory, the project is that of the
    loop found from here, as for `install`.

    \b
    Example:
      ralphstate doctor
    """
    findings = checkup.run(Path.cwd())
    colours = {"ok": "green", "note": "cyan", "warn": "yellow", "fail": "red"}
    for level, text in findings:
        output.text(f"{output.style(f'{level:<4}', fg=colours[level])} {visible(text)}")
    if any(level == "fail" for level, _ in findings):
        raise SystemExit(1)
