"""The benchmark's row of confined checks (`hook_latency.py`): `verify` of one check
(`exit 0`) confined (verify/confine.py), against the same with the person's switch
that runs checks unconfined."""

from __future__ import annotations

import sys
from pathlib import Path

from person import TRUSTS, trust
from processes import BIG, Proc, run

# The person's switch (verify/confine.py `OFF_FILE`), in ralphstate's data directory.
OFF_FILE = "checks-unconfined"


def data_dir(env: dict[str, str]) -> Path:
    """ralphstate's per-user data directory under the benchmark's scratch home."""
    if env.get("RALPHSTATE_HOME"):
        return Path(env["RALPHSTATE_HOME"]) / "data"
    if sys.platform == "darwin":
        return Path(env["HOME"]) / "Library" / "Application Support" / "ralphstate"
    return Path(env["XDG_DATA_HOME"]) / "ralphstate"


def confined_checks(
    base: Path, rs: list[str], env: dict[str, str]
) -> list[tuple[str, float, Proc, Proc]]:
    """`verify` of `exit 0` in place, confined / unconfined (the switch is made or taken
    away before each run, untimed). Where no confinement starts both run unconfined and
    the ratio is 1. None where the person cannot trust the check (person.py)."""
    if not TRUSTS:
        return []
    root = base / "confined"
    root.mkdir()
    run([*rs, "init", "Benchmark loop", "-c", "tests pass", *BIG], env, root)
    run([*rs, "criteria", "check", "tests pass", "exit 0"], env, root)
    trust(rs, env, root)
    switch = data_dir(env) / OFF_FILE
    verify = [*rs, "verify"]

    def confined(i: int) -> list[str]:
        switch.unlink(missing_ok=True)
        return verify

    def unconfined(i: int) -> list[str]:
        switch.parent.mkdir(parents=True, exist_ok=True)
        switch.write_text("")
        return verify

    case = Proc(confined, root, expect="the one check passed")
    bare = Proc(unconfined, root, expect="the one check passed")
    # Goal: under 50 ms a check on Linux, which against a `verify` of some 200 ms is 1.25.
    return [("verify, confined / unconfined", 1.25, case, bare)]
