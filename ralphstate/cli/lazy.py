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


class LazyGroup(click.Group):
    """`lazy` maps a subcommand's name to `"module:attribute"` of its click command."""

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self._load(cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
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
