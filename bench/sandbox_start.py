"""What confinement costs: the start of one iteration's agent inside the run's
bubblewrap (sandbox/bubblewrap.py), with its network through the run's allowlist (the
default: a network namespace and the bridge, sandbox/netproxy.py) and with the host's
network (`--network full`), and of one confined check (verify/confine.py), each
against the same `true` started bare, in a scratch git project. Prints the medians in
milliseconds; goal: under 50 ms each on Linux.

    python bench/sandbox_start.py [RUNS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GOAL_MS = 50.0


def median_ms(argv: Any, runs: int, **options: Any) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, **options)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    try:
        runs = int(sys.argv[1]) if len(sys.argv) > 1 else 25
    except ValueError:
        print(__doc__.split("\n\n")[-1].strip())  # the usage line, never a traceback
        return 2
    if not sys.platform.startswith("linux"):
        print("bubblewrap runs on Linux only: nothing measured here.")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["RALPHSTATE_HOME"] = str(Path(scratch) / "home")
        root = Path(scratch) / "project"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        from ralphstate.sandbox import bubblewrap, netallow, netproxy
        from ralphstate.sandbox.reach import reach
        from ralphstate.storage.system.paths import LoopPaths
        from ralphstate.verify import confine

        start = time.perf_counter()
        where = reach(LoopPaths(root, root / ".loop"), [], [[sys.executable]])
        program, userns = bubblewrap.ready(where, offline=False)
        prepared = (time.perf_counter() - start) * 1000
        bare = median_ms(["true"], runs, cwd=root)
        agent = median_ms(bubblewrap.command(program, where, False, ["true"], userns), runs)
        proxy = netproxy.Proxy(netallow.parse([], [["claude"]]))
        options, bridged, variables = netproxy.inside(proxy, ["true"])
        wrapped_agent = bubblewrap.command(program, where, False, ["true"], userns)
        at = len(wrapped_agent) - 2  # the `--` before `true`
        through = [*wrapped_agent[:at], *options, "--", *bridged]
        allowlist = median_ms(through, runs, env={**os.environ, **variables})
        proxy.stop()
        wrapped = confine.wrap("true", room=root, cwd=root)
        check = median_ms(wrapped.args, runs, shell=wrapped.shell, env=wrapped.env, cwd=root)
        shell = median_ms("true", runs, shell=True, cwd=root)
    rows = [
        ("run's sandbox, once per run (paths and trial start)", prepared, None),
        ("agent start, bwrap, network allowlist - bare, per iteration", allowlist - bare, GOAL_MS),
        ("agent start, bwrap, --network full - bare, per iteration", agent - bare, GOAL_MS),
        ("check start, confined - bare, per check", check - shell, GOAL_MS),
    ]
    for name, ms, goal in rows:
        verdict = "" if goal is None else (" ok" if ms < goal else f" over the {goal:g} ms goal")
        print(f"{name}: {ms:.1f} ms{verdict}")
    print(f"(user namespace: {userns}; {runs} runs each, medians)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
