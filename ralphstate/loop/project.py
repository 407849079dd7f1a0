"""Where a command runs: the project a directory belongs to, the loop found from it,
which loop the hooks see, and the agent session the command runs in."""

from __future__ import annotations

import os
from pathlib import Path

from ralphstate.core import actor
from ralphstate.core.actor import Actor
from ralphstate.core.errors import NoLoop
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.system.paths import LoopPaths, find, git_top, within


def current_session() -> tuple[str | None, str | None]:
    """(agent, session id) of the agent session this command runs in, read from the
    variables each agent gives its shell commands (`agents.table.session_from_env`)."""
    from ralphstate.agents.table import session_from_env

    return session_from_env(os.environ)


def current_actor() -> Actor:
    """Who runs this command: the person, an agent session, or a `ralphstate run`
    iteration (`core.actor`). The agents' modules are imported only when some variable
    looks like an agent's."""
    if not actor.maybe_agent(os.environ):
        return dict(actor.PERSON)
    return actor.from_env(os.environ, current_session())


def claude_pid() -> str | None:
    """The Claude Code process this command runs under (its Bash tool), if any."""
    from ralphstate.agents.table import get

    return get("claude").process_id(os.environ)


def project_root(start: str | os.PathLike[str]) -> Path:
    """The project a directory belongs to: where `init` puts a loop, where `install`
    writes the project's hook files, what `doctor` checks, and where `hooks_view` takes
    the hooks to start. It is the project directory an agent names in the environment
    (`CLAUDE_PROJECT_DIR`, ...) when `start` is in it, else the top of the git work tree
    holding `start` (the nearest `.git`), else `start` itself. An agent reads its project
    files (`.claude/settings.local.json`, ...) in the directory it runs in, and its hooks
    look for the loop from there: so a `.loop/` or a `.claude/` below the git top does
    not move the project (`hooks_view` says when a loop there goes unseen), and the
    `.claude/` every home directory holds marks no project."""
    from ralphstate.agents.table import every

    for agent in every().values():
        named = agent.project_dir(os.environ)
        if named and within(start, named):
            return Path(named).absolute()
    top = git_top(start)
    return Path(top) if top else Path(start).absolute()


def hooks_view(start: str | os.PathLike[str]) -> tuple[bool, str] | None:
    """In a subdirectory of the project, which loop the hooks see: (they see the loop
    found from `start`, one sentence); None at the project root or with no loop here."""
    here = find(start)
    root = project_root(start)
    if here is None or Path(start).absolute() == root:
        return None
    seen = find(root)
    said = f"hooks: they start at the project root {root} and see"
    if seen is not None and os.path.realpath(seen.dir) == os.path.realpath(here.dir):
        return True, f"{said} this loop."
    if seen is None:
        return False, (
            f"{said} no loop there or above, so this one is not enforced; start the loop at"
            " the root (`ralphstate init` without --here), or the agent in"
            f" {here.root}."
        )
    return False, f"{said} the loop at {seen.dir}, not this one."


def locate(start: str | os.PathLike[str] | None = None) -> Store:
    """The store of the loop at or above `start` (default: the current directory)."""
    loop = find(start if start is not None else Path.cwd())
    if loop is None:
        raise NoLoop(
            "no loop here: no .loop/ in this directory or above (start one with `ralphstate init`)."
        )
    store = Store(loop)
    if not store.exists():
        raise NoLoop(
            f"no loop here: {loop.display(loop.state)} does not exist"
            f"{_deleted(loop)} (start one with `ralphstate init`)."
        )
    return store


def _deleted(loop: LoopPaths) -> str:
    """ ", deleted outside ralphstate while its loop ran: it ended NOT verified" when the
    ledger last knew a loop here not over; "" otherwise."""
    from ralphstate.storage.peruser import ledger

    entry = ledger.read(loop) or {}
    if entry.get("status") in ("in_progress", "paused", "deleted"):
        return (
            ": it was deleted outside ralphstate while its loop was not over, so that loop"
            " ended NOT verified"
        )
    return ""
