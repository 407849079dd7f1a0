"""Before every iteration, the agent's hook files as the run found them
(docs/explanation/proof.md, "The gate switched off").

The agent `ralphstate run` starts reads its hooks from the project's and the user's
files as they are when it starts: an iteration's agent that removed ralphstate's hooks
from them, or set Claude Code's `disableAllHooks`, would start the next one without
them (no PreToolUse asking the person, no SessionStart restoring the loop). The run
notes at its start which hook files run ralphstate's hooks (`loop.enforcement`), and
before each iteration looks again: a file whose size and modification time did not
change is not read; one that no longer runs them, or a `disableAllHooks` that was not
there, stops the run with one sentence. A run in a project with no hooks of
ralphstate's (the run alone enforces the loop) watches nothing.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from ralphstate.core.text import visible
from ralphstate.loop import enforcement
from ralphstate.storage.system.paths import LoopPaths, git_top

Stamp = tuple[int, int]


class HookWatch:
    """The hook files that ran ralphstate's hooks when the run started, by path (with
    their agent and their size and modification time), and whether Claude Code's hooks
    were switched off then."""

    def __init__(self, paths: LoopPaths) -> None:
        root = str(paths.root)
        self.roots = [root, git_top(root) or root]
        self.held: dict[str, tuple[str, Stamp | None]] = {}
        for agent, _scope, path in enforcement.hook_files(self.roots):
            if enforcement.holds_hooks(agent, path):
                self.held[path] = (agent, _stamp(path))
        self.off_at_start = enforcement.hooks_switched_off(self.roots) is not None

    def broken(self) -> str | None:
        """The sentence that stops the run when a file that ran ralphstate's hooks no
        longer does, or Claude Code's hooks were switched off since the run started;
        None while they hold (and always when the run found none)."""
        if not self.held:
            return None
        for path, (agent, stamp) in self.held.items():
            now = _stamp(path)
            if now is not None and now == stamp:
                continue  # unchanged: not read again
            if not enforcement.holds_hooks(agent, path):
                return _said(path, now, "no longer runs ralphstate's hooks")
            self.held[path] = (agent, now)
        if not self.off_at_start and any(a == "claude" for a, _ in self.held.values()):
            off = enforcement.hooks_switched_off(self.roots)
            if off is not None:
                return _said(off, _stamp(off), "sets `disableAllHooks`")
        return None


def _said(path: str, stamp: Stamp | None, what: str) -> str:
    when = ""
    if stamp is not None:
        at = dt.datetime.fromtimestamp(stamp[1] / 1e9, tz=dt.timezone.utc).astimezone()
        when = f" (changed {at:%Y-%m-%d %H:%M:%S}, not by ralphstate)"
    return (
        f"{visible(path)} {what}{when}, so the agent the next iteration would start would"
        " not be held by them; `ralphstate install` puts them back, then `ralphstate run`"
        " goes on"
    )


def _stamp(path: str) -> Stamp | None:
    try:
        found = Path(path).stat()
    except OSError:
        return None
    return found.st_size, found.st_mtime_ns
