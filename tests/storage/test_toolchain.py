"""The environment and the toolchain a person approved (storage/peruser/checkenv.py,
storage/peruser/toolchain.py): what is recorded, how it is kept small, what a lost
record and a loop trusted before the record read as, and that the fingerprint is
cheap the second time."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO

import pytest

from ralphstate.storage.peruser import checkenv, home, toolcache, toolchain
from ralphstate.storage.system import fsio


def test_the_essentials_pass_and_runner_variables_do_not() -> None:
    caller = {
        "PATH": "/bin",
        "HOME": "/home/me",
        "LC_ALL": "C",
        "PYTEST_ADDOPTS": "-k add",
        "PYTHONPATH": "/tmp/evil",
        "NODE_OPTIONS": "--require x",
        "LD_PRELOAD": "/tmp/x.so",
        "DATABASE_URL": "sqlite://",
    }
    assert checkenv.capture((), caller) == {"PATH": "/bin", "HOME": "/home/me", "LC_ALL": "C"}
    assert checkenv.capture(["DATABASE_URL"], caller)["DATABASE_URL"] == "sqlite://"
    # a loop trusted before the environment was recorded: the caller's essentials only
    assert checkenv.for_check(None, caller) == {"PATH": "/bin", "HOME": "/home/me", "LC_ALL": "C"}
    # a recorded environment is used as it is, whatever the caller has
    assert checkenv.for_check({"PATH": "/usr/bin"}, caller) == {"PATH": "/usr/bin"}
    assert checkenv.bad_names(["OK_1", "no way", "1X"]) == ["no way", "1X"]


def test_a_second_fingerprint_hashes_nothing(isolated: Path, tmp_path: Path) -> None:
    env = checkenv.capture(())
    command = f'"{sys.executable}" -c pass'
    first = toolchain.fingerprint([command], tmp_path, env)
    assert any(what.startswith("python ") for what in first)
    assert any(what.startswith("distribution ") for what in first)
    hashed: list[Path] = []
    real = fsio.open_regular

    def counting(path: Path) -> BinaryIO:
        if path.name != toolcache.CACHE_NAME:
            hashed.append(path)
        return real(path)

    asked: list[list[str]] = []
    real_ask = toolchain._ask

    def ask(argv: list[str], root: Path, env: dict[str, str]) -> str | None:
        asked.append(argv)
        return real_ask(argv, root, env)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fsio, "open_regular", counting)
        patch.setattr(toolchain, "_ask", ask)
        again = toolchain.fingerprint([command], tmp_path, env)
    assert again == first
    assert hashed == [] and asked == []


def test_a_changed_path_file_is_named(isolated: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.pth").write_text("/x\n")
    cache = toolcache.Cache.load()
    before = toolchain._site(str(site), cache)
    (site / "a.pth").write_text("import os\n")
    (site / "plug-1.0.dist-info").mkdir()
    said = toolchain.changes(before, toolchain._site(str(site), cache))
    assert any("changed: path file a.pth" in s for s in said), said
    assert any("new: distribution plug-1.0.dist-info" in s for s in said), said


def test_the_kept_fingerprint_is_its_own_file_and_a_lost_one_is_a_change(isolated: Path) -> None:
    found = {"program python (/usr/bin/python)": "abc"}
    digest = toolchain.keep("/loop", found)
    assert toolchain.kept(digest) == found
    path = home.data_dir() / "toolchains" / f"{digest}.json"
    path.write_bytes(path.read_bytes().replace(b"abc", b"abd"))
    assert toolchain.changes(found, toolchain.kept(digest))  # tampered: a review
    toolchain.forget(digest)
    assert not path.exists()
    assert toolchain.changes(found, toolchain.kept(digest))  # gone: a review


def test_an_entry_points_file_rewritten_with_its_size_and_time_kept_is_named(
    isolated: Path, tmp_path: Path
) -> None:
    """The cached path stats first and hashes on a change: a change time the agent's
    user cannot set back makes it hash again."""
    site = tmp_path / "site"
    points = site / "plug-1.0.dist-info" / "entry_points.txt"
    points.parent.mkdir(parents=True)
    points.write_text("[pytest11]\nplug = plug.a\n")
    cache = toolcache.Cache.load()
    before = toolchain._site(str(site), cache)
    cache.save()
    times = points.stat()
    points.write_text("[pytest11]\nplug = plug.b\n")
    os.utime(points, ns=(times.st_atime_ns, times.st_mtime_ns))
    said = toolchain.changes(before, toolchain._site(str(site), toolcache.Cache.load()))
    assert any("changed: distribution plug-1.0.dist-info" in s for s in said), said
