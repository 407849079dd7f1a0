"""`ralphstate trust`: what it trusts, said. Who may trust, and what trust allows, are
tested with the trust store (tests/storage/test_trust.py) and loop/person.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_a_loop_without_checks_has_nothing_to_trust(loop: Path, rs: Any) -> None:
    result = rs("trust")
    assert (result.code, result.err) == (0, "")
    assert result.out == "this loop has no checks; there is nothing to trust\n"


def test_the_checks_trusted_are_listed(loop: Path, rs: Any) -> None:
    assert rs("criteria", "check", "tests pass", "true").code == 0
    result = rs("trust")
    assert (result.code, result.err) == (0, "")
    assert result.out == (f"  tests pass: true\ntrusted this check in {loop} on this machine\n")
