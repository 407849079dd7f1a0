"""One-time approvals (storage/peruser/approvals.py): once, for one loop and one session, for a
few minutes; the file holds no usable token and stays small."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ralphstate.storage.peruser import approvals, home
from ralphstate.storage.system import paths


def loop_at(root: Path, name: str) -> paths.LoopPaths:
    folder = root / name
    (folder / ".loop").mkdir(parents=True)
    return paths.at(str(folder / ".loop"))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1_000_000.0]
    monkeypatch.setattr(approvals, "_now", lambda: now[0])
    return now


def stored() -> dict[str, dict[str, object]]:
    data = orjson.loads((home.data_dir() / approvals.APPROVALS_NAME).read_bytes())
    loops: dict[str, dict[str, object]] = data["loops"]
    return loops


def test_a_token_is_accepted_once(tmp_path: Path, clock: list[float]) -> None:
    loop = loop_at(tmp_path, "a")
    token = approvals.mint(loop, "s1")
    assert approvals.consume(token, loop, "s1") is None
    assert approvals.consume(token, loop, "s1") == approvals.UNKNOWN
    assert stored() == {}


def test_a_token_expires(tmp_path: Path, clock: list[float]) -> None:
    loop = loop_at(tmp_path, "a")
    token = approvals.mint(loop, "s1")
    clock[0] += approvals.TTL_SECONDS + 1
    assert approvals.consume(token, loop, "s1") == approvals.EXPIRED
    assert approvals.consume(token, loop, "s1") == approvals.UNKNOWN


def test_a_token_just_within_its_time_counts(tmp_path: Path, clock: list[float]) -> None:
    loop = loop_at(tmp_path, "a")
    token = approvals.mint(loop, "s1")
    clock[0] += approvals.TTL_SECONDS
    assert approvals.consume(token, loop, "s1") is None


def test_a_token_counts_only_for_its_loop_and_session(tmp_path: Path, clock: list[float]) -> None:
    mine, other = loop_at(tmp_path, "a"), loop_at(tmp_path, "b")
    token = approvals.mint(mine, "s1")
    assert approvals.consume(token, other, "s1") == approvals.ELSEWHERE
    assert approvals.consume(token, mine, "s2") == approvals.ELSEWHERE
    assert approvals.consume(token, mine, None) == approvals.ELSEWHERE
    # Tried elsewhere, it still counts where it was made.
    assert approvals.consume(token, mine, "s1") is None


def test_a_made_up_token_is_unknown_and_writes_nothing(tmp_path: Path, clock: list[float]) -> None:
    loop = loop_at(tmp_path, "a")
    assert approvals.consume("0" * 32, loop, "s1") == approvals.UNKNOWN
    assert not (home.data_dir() / approvals.APPROVALS_NAME).exists()


def test_the_file_holds_the_token_s_digest_not_the_token(
    tmp_path: Path, clock: list[float]
) -> None:
    loop = loop_at(tmp_path, "a")
    token = approvals.mint(loop, "s1")
    raw = (home.data_dir() / approvals.APPROVALS_NAME).read_text()
    assert token not in raw
    [entry] = stored().values()
    assert entry["session"] == "s1"
    assert entry["expires"] == clock[0] + approvals.TTL_SECONDS


def test_a_new_approval_replaces_the_loop_s_last_and_expired_ones_go(
    tmp_path: Path, clock: list[float]
) -> None:
    a, b = loop_at(tmp_path, "a"), loop_at(tmp_path, "b")
    first = approvals.mint(a, "s1")
    approvals.mint(b, "s1")
    second = approvals.mint(a, "s1")
    assert approvals.consume(first, a, "s1") == approvals.UNKNOWN
    assert len(stored()) == 2
    clock[0] += approvals.TTL_SECONDS + 1
    approvals.mint(a, "s1")
    assert len(stored()) == 1  # b's expired one was dropped
    assert approvals.consume(second, a, "s1") == approvals.UNKNOWN
