"""How the newest `ralphstate run` confined its agent, for `status`: read from the
history alone, so that `status` imports no sandbox (nor `subprocess`)."""

from __future__ import annotations

from ralphstate.core import limits
from ralphstate.core.text import visible
from ralphstate.storage.store import Store


def last_run(store: Store) -> str | None:
    """How the newest `ralphstate run` in the loop's recent history confined its agent;
    None when no run there was given a sandbox mode."""
    for entry in reversed(store.history(limits.MAX_LOG_LINES)):
        if entry.get("event") == "run_started":
            how = entry.get("sandbox")
            return how.splitlines()[0][:80] if isinstance(how, str) and how.strip() else None
    return None


def fields(store: Store) -> dict[str, str]:
    """What `status --json` adds: `lastRunSandbox`, when the last run had a sandbox mode."""
    how = last_run(store)
    return {} if how is None else {"lastRunSandbox": how}


def lines(fields: dict[str, str]) -> list[str]:
    """What `status` says of it, from `fields`."""
    how = fields.get("lastRunSandbox")
    return [] if how is None else [f"sandbox of the last run: {visible(how)}"]
