"""`ralphstate show`: the state file as it is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.mark.parametrize(
    "data",
    [
        b'{"spec":"x","criteria":["a"],"odd":   [1,2]}',
        b'{\n    "spec": "\xc3\xbcnicode",\n    "zzz": true\n}\n',
    ],
)
def test_show_prints_the_file_as_stored(project: Path, rs: Any, data: bytes) -> None:
    (project / ".loop").mkdir()
    (project / ".loop" / "state.json").write_bytes(data)
    result = rs("show")
    assert (result.code, result.err) == (0, "")
    expected = data.decode()
    assert result.out == (expected if expected.endswith("\n") else expected + "\n")
