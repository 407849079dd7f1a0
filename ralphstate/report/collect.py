"""Reading what a report tells: the state, the newest history lines, and the tree the
work tree holds now (to tell stale evidence), each read once and bounded."""

from __future__ import annotations

from ralphstate.core import limits
from ralphstate.report.story import Story, gather
from ralphstate.storage import git
from ralphstate.storage.store import Store, of_loop


def story(store: Store) -> Story:
    state = store.load()
    history = store.history(limits.MAX_REPORT_HISTORY_LINES + 1)
    cut = len(history) > limits.MAX_REPORT_HISTORY_LINES
    if cut:
        # Cut only when what was left out is this loop's (a loop without an id: unknown).
        cut = bool(of_loop(history[:1], state["loopId"])) or not state["loopId"]
        history = history[1:]
    history = of_loop(history, state["loopId"])  # an earlier loop here is not this story
    tree = None
    if any(e.get("tree") for e in state["evidence"].values()):
        code = git.snapshot(store.paths)
        tree = code.tree if code else None
    return gather(state, history, str(store.paths.root), tree, cut)
