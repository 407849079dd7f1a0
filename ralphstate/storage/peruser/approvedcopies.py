"""ralphstate's own copies of the guarded files as a person approved them
(docs/explanation/proof.md, "Clean-room verification"): each file's content kept in the
per-user data directory under the id git gives it (`approved-files/ID[:2]/ID[2:]`),
hashed as it is written and again as it is read.

    approvedcopies.keep(data, blob_id)   # True: kept (or already there)
    approvedcopies.read(blob_id)         # its content, or None

git does not check an object against its id as it reads it: an approved test's object
rewritten under its old id in `.git/objects` is checked out as the new content. A clean
room (storage/repo/roomfiles.py) whose file is not what its id says takes it from here
instead, where its content was hashed when the person approved it.

Bounded: a file larger than `MAX_COPY_BYTES` is not kept (the room still hashes it
against its id, and refuses it when they differ), and a copy read back is at most that.
A copy is content-addressed, so one kept for one loop serves every loop with that
content; they are never removed by ralphstate (a few files per approval).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from pathlib import Path

from ralphstate.storage.peruser import home
from ralphstate.storage.system import fsio

# The directory of the copies in the per-user data directory.
DIR_NAME = "approved-files"
# The largest file a copy is kept of: a test module or a configuration file is far less.
MAX_COPY_BYTES = 1024 * 1024
_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def blob_id(data: bytes, like: str) -> str:
    """The id git gives `data` as a blob, in the object format of the id `like`."""
    digest = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def _path(blob: str) -> Path | None:
    if not _ID.fullmatch(blob):
        return None
    try:
        return home.data_dir() / DIR_NAME / blob[:2] / blob[2:]
    except home.NoHome:
        return None


def keep(data: bytes, blob: str) -> bool:
    """Keep `data` as the content of the blob `blob`: only when it hashes to that id and
    is at most `MAX_COPY_BYTES`. True when a copy is there now."""
    path = _path(blob)
    if path is None or len(data) > MAX_COPY_BYTES or blob_id(data, blob) != blob:
        return False
    if read(blob) is not None:
        return True
    where = path
    try:
        where.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fsio.atomic_write(where, data, mode=0o600)
    except OSError:
        return False
    return True


def read(blob: str) -> bytes | None:
    """The kept content of the blob `blob`, once it is seen to hash to that id; None
    when there is no copy, or it is not what its name says."""
    path = _path(blob)
    if path is None:
        return None
    with contextlib.suppress(OSError):
        data = fsio.read_regular(path, MAX_COPY_BYTES)
        if len(data) <= MAX_COPY_BYTES and blob_id(data, blob) == blob:
            return data
    return None
