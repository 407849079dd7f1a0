"""The loops this machine knows, `ralphstate list`: the registry's entries, each
refreshed from the loop's own file while its directory exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ralphstate.core import queries
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import registry
from ralphstate.storage.system.paths import LoopPaths


def loop_summary(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A registry entry refreshed from the loop's own file where it still exists."""
    loop_dir = key
    root = str(Path(loop_dir).parent)
    row: dict[str, Any] = {"path": root, "loopDir": loop_dir, **entry}
    row["exists"] = Path(loop_dir).is_dir()
    if row["exists"]:
        try:
            state = Store(LoopPaths(root, loop_dir)).load()
        except RalphstateError as exc:
            row["status"] = "unreadable"
            row["problem"] = str(exc)
        else:
            row.update(
                spec=state["spec"][:200],
                status=state["status"],
                criteriaMet=len(state["criteria"]) - len(queries.unmet(state)),
                criteriaTotal=len(state["criteria"]),
                updatedAt=state.get("updatedAt"),
                sessionId=state.get("sessionId"),
            )
        from ralphstate.storage.repo import git  # loops side by side: each on its own branch

        row["branch"] = git.head_branch(root)
    else:
        row["status"] = "gone"
    return row


def list_loops(prune: bool = False) -> list[dict[str, Any]]:
    rows = [loop_summary(k, v) for k, v in sorted(registry.read().items())]
    if prune:
        for row in rows:
            if not row["exists"]:
                registry.forget(row["loopDir"])
        rows = [r for r in rows if r["exists"]]
    return rows
