"""Where the checks run: in the project root, or in a clean room, a temporary worktree
of the files git tracks (`storage/repo/cleanroom.py`; docs/explanation/proof.md,
"Clean-room verification"), and what a failure there says about the files it left out.

    room = isolation.room(paths, state, clean=None, restore=None, deadline=None)
    ...                           # the checks run in room.cwd, or the root when None
    isolation.close(room)
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ralphstate.core import limits, queries
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.storage.repo import cleanroom, roomfiles, testfiles
from ralphstate.storage.repo.cleanroom import Room
from ralphstate.storage.system.paths import LoopPaths

__all__ = ["NOTHING", "UNTRACKED_NAMED", "Room", "close", "left_out", "room", "tampered"]

# How many untracked files a failure in a clean room names.
UNTRACKED_NAMED = 3
# A `restore` that puts nothing back: the guarded files were compared already, and none
# differs from the approval.
NOTHING: tuple[str, list[str]] = ("", [])


def room(
    paths: LoopPaths,
    state: st.State,
    clean: bool | None,
    restore: tuple[str, list[str]] | None = None,
    deadline: float | None = None,
) -> Room | None:
    """The clean room the checks run in, or None: in the project root.

    `clean` True asks for one (RalphstateError outside a git repository); None takes
    one where the loop is in a git repository and its `cleanVerify` is not false;
    False never. `restore` (a tree id, pathspecs) puts those paths back as that tree
    holds them (the pipeline's gather compared the guarded files: `approved_guards`).
    Making it takes at most `limits.CLEAN_ROOM_SECONDS`, and never past
    `deadline` (a `time.monotonic()` value): CleanRoomError."""
    if clean is False or (clean is None and not queries.clean_verify(state)):
        return None
    budget = limits.CLEAN_ROOM_SECONDS
    if deadline is not None:
        budget = min(budget, deadline - time.monotonic())
    from ralphstate.storage.peruser import approvedcopies

    made = cleanroom.open_room(
        paths, budget=budget, restore=restore, copies=approvedcopies.read, keep=True
    )
    if made is not None:
        made.guarded = _guarded(made, paths, state)
    if made is None and clean:
        raise RalphstateError(
            f"{paths.root} is not in a git repository; a clean room is a worktree of the"
            " files git tracks, so here the checks can only run in the project itself"
            " (`ralphstate verify` without --clean)."
        )
    return made


def approved_guards(
    paths: LoopPaths, state: st.State, entry: Mapping[str, Any] | None
) -> tuple[str, list[str]] | None:
    """What a clean room puts back as the person approved it: the guarded files changed
    or deleted since the approval, and new test configuration taken out (its tree does
    not hold it). New test files stay: adding tests is the easy path. None when the loop
    guards nothing or has no approved tree here. `entry`: the loop's ledger entry, as
    read (None: it has none)."""
    from ralphstate.storage.repo import guarded

    guards = state.get("guards")
    tree = (entry or {}).get("guardTree")
    if not guards or not isinstance(tree, str):
        return None
    found = guarded.compare(paths, tree, list(guards))
    if found is None:
        return None
    back = [*found.changed, *found.deleted, *found.new_config]
    return (tree, back) if back else None


def _guarded(made: Room, paths: LoopPaths, state: st.State) -> list[str]:
    """The files of the room that its checks must leave as they are: the guarded files
    and the test configuration anywhere (every file of the room when git cannot say)."""
    specs = [*(state.get("guards") or [])]
    specs += [testfiles.anywhere(name) for name in testfiles.NEW_CONFIG_FILES]
    specs += testfiles.shadows(paths.root)
    found = roomfiles.named(made.cwd, specs, limits.GIT_TIMEOUT)
    return list(made.manifest) if found is None else found


def tampered(made: Room) -> str | None:
    """After a check ran in the room: one sentence naming its guarded files that are no
    longer what ralphstate put there (a process left running rewrote a test while the
    check ran), or None when they all are."""
    listed = {name: made.manifest[name] for name in made.guarded if name in made.manifest}
    problems = roomfiles.differences(made.top, listed, others=False)
    # A new file that changes how tests run (a conftest.py) is no output of a check.
    added = roomfiles.extra(made.top, made.manifest)
    problems += [f"{name} (not put there)" for name in added if testfiles.is_config(name)]
    if not problems:
        return None
    return (
        "ralphstate: the clean room's guarded files changed while the check ran, so its"
        f" result proves nothing: {roomfiles.said(problems)}."
    )


def close(made: Room) -> None:
    """Remove the room, whatever its checks left in it."""
    cleanroom.close(made)


def left_out(paths: LoopPaths) -> str | None:
    """After a check failed in a clean room: when the project has untracked files that
    git does not ignore, one sentence saying they were not in the room, naming a few;
    None when it has none."""
    found = cleanroom.untracked(paths)
    if not found:
        return None
    named = ", ".join(visible(name) for name in found[:UNTRACKED_NAMED])
    more = len(found) - UNTRACKED_NAMED
    named += f" and {more} more" if more > 0 else ""
    return (
        "ralphstate: this check ran in a clean room, which holds only the files git"
        f" tracks; untracked files ({named}) are not in it: `git add` puts them in."
    )
