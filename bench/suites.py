"""The benchmark's rows for verification that fits any suite (`hook_latency.py`): a
suite longer than the Stop hook's budget, and 50 checks side by side."""

from __future__ import annotations

import subprocess
from pathlib import Path

from person import TRUSTS, trust
from processes import BIG, GIT_WHO, Proc, hook_input, run


def long_suites(
    base: Path, rs: list[str], env: dict[str, str], owned: dict[str, str], stop: list[str]
) -> list[tuple[str, float, Proc, Proc]]:
    """The Stop hook at a claim, on new code, whose suite took longer than the stop's
    budget (not run in the stop: it is left to the background verification, which the
    stop waits for up to its budget, then blocks saying so), against that budget slept
    (the stop must take no more than what it may spend); and `ralphstate verify` of 50
    checks of 0.2 s each, side by side, against one such check alone. None where the
    person cannot trust the checks (person.py)."""
    if not TRUSTS:
        return []
    root = base / "long-suite"
    root.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "bench"]):
        subprocess.run(["git", *GIT_WHO, *args], cwd=root, check=True, capture_output=True)
    run([*rs, "init", "Benchmark loop", "-c", "tests pass", *BIG], owned, root)
    run([*rs, "criteria", "check", "tests pass", "sleep 3"], env, root)
    trust(rs, env, root)
    run([*rs, "verify", "--clean"], env, root)  # 3 s, recorded: longer than the budget
    run([*rs, "config", "verify-budget", "2"], env, root)

    def claiming(i: int) -> list[str]:  # new code, and a claim: not timed
        (root / "app.py").write_text(f"VALUE = {i}\n")
        run([*rs, "criteria", "set", "tests pass", "true"], env, root)
        return stop

    data = hook_input(root, "Stop", last_assistant_message="Done. <loop-complete>")
    left = Proc(claiming, root, data, "does not fit the 2s a stop may spend on checks")
    budget = Proc(["sh", "-c", "sleep 2"], root)  # the 2 s the stop may spend waiting
    many = base / "fifty-checks"
    many.mkdir()
    names = [f"check {i}" for i in range(50)]
    run([*rs, "init", "Benchmark loop", *[a for n in names for a in ("-c", n)], *BIG], env, many)
    for name in names:
        run([*rs, "criteria", "check", name, "sleep 0.2"], env, many)
    trust(rs, env, many)
    fifty = Proc([*rs, "verify"], many, expect="all 50 checks passed")
    one = Proc(["sh", "-c", "sleep 0.2"], many)
    return [
        ("Stop, suite over budget / its budget", 1.4, left, budget),
        ("verify, 50 checks / one check", 6.0, fifty, one),
    ]
