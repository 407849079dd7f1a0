"""`ralphstate list`."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ralphstate.storage.peruser import registry


def test_list_when_nothing_was_recorded(project: Path, rs: Any) -> None:
    assert rs("list").out == "no loops recorded on this machine\n"
    assert rs("list", "--json").out == "[]\n"


def test_list_and_prune(tmp_path: Path, rs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    for root, spec in ((kept, "Keep me"), (gone, "Delete me")):
        root.mkdir()
        monkeypatch.chdir(root)
        assert rs("init", spec, "-c", "a", "-c", "b").code == 0
    monkeypatch.chdir(kept)
    rs("criteria", "set", "a", "true")
    shutil.rmtree(gone)
    kept_path, gone_path = os.path.realpath(kept), os.path.realpath(gone)

    result = rs("list")
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        f"gone         0/2    {gone_path}  Delete me\nin_progress  1/2    {kept_path}  Keep me\n"
    )
    rows = json.loads(rs("list", "--json").out)
    assert [(r["path"], r["status"], r["exists"], r["criteriaMet"]) for r in rows] == [
        (gone_path, "gone", False, 0),
        (kept_path, "in_progress", True, 1),
    ]
    assert rows[1]["spec"] == "Keep me" and rows[1]["criteriaTotal"] == 2

    assert rs("list", "--prune").out == f"in_progress  1/2    {kept_path}  Keep me\n"
    assert list(registry.read()) == [str(Path(kept_path) / ".loop")]
    assert rs("list").out == f"in_progress  1/2    {kept_path}  Keep me\n"


def test_list_shows_an_unreadable_loop(loop: Path, rs: Any) -> None:
    (loop / ".loop" / "state.json").write_bytes(b"{oops")
    rows = json.loads(rs("list", "--json").out)
    assert [r["status"] for r in rows] == ["unreadable"]
    assert "line 1, column 2" in rows[0]["problem"]
