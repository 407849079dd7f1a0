"""The one domain exception. Its message is a sentence a person can act on."""

from __future__ import annotations


class RalphstateError(Exception):
    """A user-facing failure: the CLI prints it on one line and exits 1."""


class NoLoop(RalphstateError):
    """There is no `.loop/state.json` here or above."""


class CorruptState(RalphstateError):
    """`state.json` exists but cannot be used; it must never be overwritten."""
