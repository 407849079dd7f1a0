"""At each approval of the guarded files (a loop's start, a person's `trust` or
`review approve`), ralphstate's own copy of each of them in the per-user store
(storage/peruser/approvedcopies.py), so that a clean room is built from content
ralphstate hashed, not from what git's store holds under an id
(docs/explanation/proof.md, "Clean-room verification").

    approvedfiles.keep(paths, tree)   # the files of `tree` too large to keep, by name
"""

from __future__ import annotations

from ralphstate.core import limits
from ralphstate.storage.peruser import approvedcopies
from ralphstate.storage.repo import roomfiles
from ralphstate.storage.system.paths import LoopPaths


def keep(paths: LoopPaths, tree: str | None) -> list[str]:
    """Keep a copy of every file of the approved `tree` (the guarded files and the test
    configuration), each hashed against its id first: content git's store holds under
    an id it does not hash to is not kept. The names of the files over
    `approvedcopies.MAX_COPY_BYTES`, which a room checks by their id only."""
    if not tree:
        return []
    largest = approvedcopies.MAX_COPY_BYTES
    manifest = roomfiles.listing(paths.root, tree, limits.GIT_TIMEOUT) or {}
    for blob, data in roomfiles.contents(paths.root, manifest, limits.GIT_TIMEOUT, largest):
        approvedcopies.keep(data, blob)
    return sorted(name for name, entry in manifest.items() if entry.size > largest)
