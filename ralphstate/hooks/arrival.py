"""How a loop nobody owns and this machine does not know came to be here: its state file
was written by the agent of the session that stops, or it came with the repository
(docs/explanation/design.md, "Ownership").

The agent may write `.loop/state.json` itself, as the design notes have it do at a loop's
start, instead of running `ralphstate init`. Such a file is the session's own loop, and
the Stop hook enforces it at once. A file that came with a clone must never hold a
session, so a file counts as the session's own only when all of these hold:

- no loop that ralphstate started here is unfinished (the ledger): a file written over
  one is a replaced loop, which the person reviews (`hooks.outside.replaced`);
- the session did not find the file at its start (SessionStart notes the files it finds,
  `registry.note_present`);
- git's history holds no version of it from elsewhere: the file is in no commit, or only
  in commits made in this repository on this machine (HEAD's reflog records them as
  `commit`; a clone, a pull or a fetch records none); and its content as it is now is
  in no other commit on any ref, at any path (a `.loop/` brought in from another
  branch with `git checkout BRANCH -- .loop`, `git apply` or `git merge --squash`).

Taking it does not trust it: its checks are the agent's, and run only once the person
has read them and run `ralphstate trust` (docs/explanation/proof.md). The person is told
so, once; a file that came with the repository is left alone, and the person is told
that once per session too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ralphstate.agents.contract import Agent
from ralphstate.core import state as st
from ralphstate.core.text import count
from ralphstate.storage.peruser import notices, registry
from ralphstate.storage.system import paths

Output = dict[str, object]

# What git's reflog says of a commit made in this repository (`commit`, `commit
# (initial)`, `commit (amend)`, `commit (merge)`).
LOCAL_COMMIT = "commit"
# How long the look for the state file's content on every ref may take (seconds); a
# look that does not finish in time counts as content from elsewhere.
FIND_TIMEOUT = 10.0


class Known:
    """Whether this machine knows the loop (the registry), or the file is the stopping
    session's own (`own`): the Stop hook's `known_here`. The second is asked once, and
    only for a loop nobody owns that the registry does not know."""

    def __init__(self, loop: paths.LoopPaths, session_id: str | None) -> None:
        self.loop = loop
        self.session_id = session_id
        self.own: bool | None = None  # None: not asked

    def __call__(self, state: st.State) -> bool:
        if registry.knows(self.loop, state):
            return True
        if self.own is None:
            self.own = bool(self.session_id) and own(self.loop, self.session_id or "")
        return self.own


def own(loop: paths.LoopPaths, session_id: str) -> bool:
    """The state file here is the session's own: written during it, on this machine."""
    if _replacing(loop) or registry.present_at_start(loop, session_id):
        return False
    return not _from_elsewhere(loop)


def _replacing(loop: paths.LoopPaths) -> bool:
    """A loop ralphstate started here is not over (or its file was deleted while it was
    not): a state file written over it replaces it, which the person reviews."""
    from ralphstate.storage.peruser import ledger  # hashlib: only for a loop nobody knows

    entry = ledger.read(loop)
    return entry is not None and entry.get("status") in (*st.ACTIVE, "deleted")


def _in_repository(root: Path) -> bool:
    """`root` or a directory above it has a `.git`, or GIT_DIR names a repository."""
    if os.environ.get("GIT_DIR"):
        return True
    here = root.resolve()
    return any((folder / ".git").exists() for folder in (here, *here.parents))


def _from_elsewhere(loop: paths.LoopPaths) -> bool:
    """The repository's history holds a version of the state file that was not
    committed here (a clone, a pull); True too when git cannot be asked. Outside a
    repository git is not started at all."""
    if not _in_repository(loop.root):
        return False
    from ralphstate.storage.repo import git

    path = str(loop.state)
    found = git.run_git(["log", "--format=%H", "--", path], loop.root)
    if found is None:
        return True
    commits = set(found.out.split()) if found.ok else set()
    elsewhere = _commits_holding(loop, git)
    if elsewhere is None:
        return True
    commits |= elsewhere
    if not commits:
        return False  # in no commit: outside a repository, before the first, or untracked
    made = git.run_git(["log", "--walk-reflogs", "--format=%H %gs", "HEAD"], loop.root)
    if made is None or not made.ok:
        return True
    local = {
        line.split(" ", 1)[0]
        for line in made.out.splitlines()
        if line.partition(" ")[2].startswith(LOCAL_COMMIT)
    }
    return not commits <= local


def _commits_holding(loop: paths.LoopPaths, git: Any) -> set[str] | None:
    """The commits on any ref that hold the state file's content as it is now, at any
    path (`git checkout BRANCH -- .loop`, `git apply`, `git merge --squash` bring in a
    version of another branch); None when git cannot tell within `FIND_TIMEOUT`. A
    content git has never stored (a file the agent wrote) costs two cheap lookups. The
    content is looked for as the file holds it and as git would store it (the
    repository's attributes may check its JSON out with other line ends: `eol=crlf`)."""
    commits: set[str] = set()
    for how in ("--no-filters", f"--path={loop.state}"):
        blob = git.run_git(["hash-object", how, "--", str(loop.state)], loop.root)
        if blob is None or not blob.ok:
            return None
        oid = blob.out.strip()
        stored = git.run_git(["cat-file", "-e", oid], loop.root)
        if stored is None:
            return None
        if not stored.ok:
            continue  # not in the object database: in no commit
        args = ["log", "--all", "--format=%H", f"--find-object={oid}"]
        found = git.run_git(args, loop.root, timeout=FIND_TIMEOUT)
        if found is None or not found.ok:
            return None
        commits |= set(found.out.split())
    return commits


def adopted_line(state: st.State) -> str:
    """For the person, at the stop that took the session's own state file."""
    lead = (
        "ralphstate: this session's agent wrote .loop/state.json itself, so the Stop hook"
        " now holds the session to that loop"
    )
    n = len(state["checks"])
    if n:
        return (
            f"{lead}; read its {count(n, 'check')} (`ralphstate status`) and run `ralphstate"
            f" trust`, or {'it' if n == 1 else 'they'} will not run and the loop cannot be"
            " proved done."
        )
    return (
        f"{lead}; its criteria are the agent's claims until you give them checks"
        " (`ralphstate criteria check NAME COMMAND`, then `ralphstate trust`)."
    )


def tell(agent: Agent, out: Output | None, line: str) -> Output | None:
    """`out` with `line` for the person added to its `systemMessage`, for an agent that
    shows one."""
    if not agent.notices:
        return out
    out = dict(out or {})
    said = out.get("systemMessage")
    out["systemMessage"] = f"{said}\n{line}" if said else line
    return out


def clone_line(state: st.State) -> str:
    """For the person: the loop here is not enforced, and why."""
    return (
        f"ralphstate: the loop in .loop/state.json ({count(len(state['criteria']), 'criterion')},"
        f" {state['status'].replace('_', ' ')}) is not enforced, since this machine did not"
        " start it and this session did not write it (it came with the repository or from"
        " another branch, or was here before); run `ralphstate adopt` to enforce it here."
    )


def clone_notice(loop: paths.LoopPaths, state: st.State, session_id: str | None) -> str | None:
    """For the person, once per session: the loop here, which this machine does not know
    (nobody owns it, or a session elsewhere does), is not enforced, and why."""
    if registry.knows(loop, state):
        return None  # another session's here: that session is held by it
    from ralphstate.storage.peruser import ledger

    entry = ledger.read(loop)
    if entry and entry.get("status") in st.ACTIVE and entry.get("loop") != state["loopId"]:
        return None  # a replaced loop: `outside.replaced` says so
    line = clone_line(state)
    if session_id and not notices.first_time(loop, session_id, "arrived with the repository"):
        return None
    return line
