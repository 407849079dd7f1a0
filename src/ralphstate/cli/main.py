"""The whole command tree, every command imported: for tools and tests that walk
`cli.commands`. The `ralphstate` program itself runs `app.run_cli`, which imports
only the module of the command it is given."""

from __future__ import annotations

from ralphstate.cli.app import cli, main, run_cli

cli.load_all()

__all__ = ["cli", "main", "run_cli"]
