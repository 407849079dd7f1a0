"""A click group whose subcommands are imported only when one of them is asked for.

`ralphstate criteria set`, run dozens of times in a loop, then imports the module of
`criteria` and nothing of `run`, `verify` or `install`. Help lists every command, so
it imports them all; so does a mistyped name, for click's "Did you mean" suggestion.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import click

# The longest summary a command's help shows in its group's list: a first sentence fits.
SUMMARY_LIMIT = 300


class LazyGroup(click.Group):
    """`lazy` maps a subcommand's name to `"module:attribute"` of its click command."""

    def __init__(
        self,
        *args: Any,
        lazy: Mapping[str, str] | None = None,
        meant: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        # A word a person may try for a command (`start`) -> what to run instead: said in
        # place of click's guess by spelling (`status`).
        self.meant = dict(meant or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The lazy commands in the order `lazy` gives them (a group's own order: the
        order a person uses them in), then any added by name."""
        return [*self.lazy, *sorted(set(self.commands) - set(self.lazy))]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command with the whole first sentence of its help, wrapped, never cut
        mid-phrase with `...` as click's default 45 characters would."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=SUMMARY_LIMIT)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self._load(cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in self.meant and self.get_command(ctx, args[0]) is None:
            raise click.UsageError(f"No such command '{args[0]}': {self.meant[args[0]]}", ctx)
        if args and self.get_command(ctx, args[0]) is None:
            self.load_all()  # an unknown name: click suggests the close ones it knows
        return super().resolve_command(ctx, args)

    def load_all(self) -> None:
        """Import every subcommand, in nested lazy groups too (for tools that walk
        `commands`)."""
        for name in self.lazy:
            if name not in self.commands:
                self._load(name)
            command = self.commands[name]
            if isinstance(command, LazyGroup):
                command.load_all()

    def _load(self, name: str) -> None:
        module, _, attribute = self.lazy[name].partition(":")
        __import__(module)  # the import statement's own path: `python -X importtime` shows it
        command = getattr(sys.modules[module], attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy[name]} is not a click command")
        self.add_command(command, name)
