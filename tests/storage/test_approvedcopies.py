"""ralphstate's own copies of approved files (storage/peruser/approvedcopies.py), and
a room that takes one in place of an object rewritten under its id."""

from __future__ import annotations

import zlib
from pathlib import Path

from ralphstate.storage.peruser import approvedcopies
from ralphstate.storage.repo import roomfiles
from tests.helpers.gitrepo import git


def test_a_copy_is_kept_only_for_content_that_hashes_to_its_id(isolated: Path) -> None:
    data = b"def test_mul():\n    assert mul(3, 4) == 12\n"
    blob = approvedcopies.blob_id(data, "0" * 40)
    assert not approvedcopies.keep(b"assert True\n", blob)  # not what the id says
    assert approvedcopies.read(blob) is None
    assert approvedcopies.keep(data, blob)
    assert approvedcopies.read(blob) == data
    big = b"x" * (approvedcopies.MAX_COPY_BYTES + 1)
    assert not approvedcopies.keep(big, approvedcopies.blob_id(big, blob))
    # A copy changed on disk is not what its name says: never used.
    kept = next((isolated / "data" / approvedcopies.DIR_NAME).rglob(blob[2:]))
    kept.chmod(0o600)
    kept.write_bytes(b"assert True\n")
    assert approvedcopies.read(blob) is None


def test_a_room_file_whose_object_was_rewritten_comes_from_the_copy(
    tmp_path: Path, isolated: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    good = b"assert 2 * 3 == 6\n"
    (repo / "t.py").write_bytes(good)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    blob = approvedcopies.blob_id(good, "0" * 40)
    manifest = {"t.py": roomfiles.Entry("100644", blob, len(good))}
    for kept_id, data in roomfiles.contents(repo, manifest, 10, approvedcopies.MAX_COPY_BYTES):
        assert approvedcopies.keep(data, kept_id)
    weak = b"assert True\n"
    loose = repo / ".git" / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"blob %d\0" % len(weak) + weak))
    room = repo  # its work tree, as git checks the rewritten object out
    (room / "t.py").write_bytes(weak)
    manifest = {"t.py": roomfiles.Entry("100644", blob, len(weak))}  # git's size: the new
    mended: list[str] = []
    copies = approvedcopies.read
    assert roomfiles.differences(room, dict(manifest), others=False) != []
    found = roomfiles.differences(room, manifest, others=False, copies=copies, mended=mended)
    assert found == [] and (room / "t.py").read_bytes() == good
    assert len(mended) == 1 and "t.py" in mended[0] and "does not match its id" in mended[0]
    assert manifest["t.py"].size == len(good)
