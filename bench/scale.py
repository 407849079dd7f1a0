"""The benchmark's rows for loops and machines that grow: SessionStart restoring a loop
of 50,000 criteria against one of 10, and `ralphstate list` of 1,000 loops against 10.
Both must stay near flat: a render linear in the criteria, `list` a state file read a
loop and no git process."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from processes import BIG, Proc, hook_input, run


def big_loops(
    base: Path, rs: list[str], env: dict[str, str], owned: dict[str, str], start: list[str]
) -> list[tuple[str, float, Proc, Proc]]:
    """(row, goal, case, baseline) for the criteria and the loops."""
    restores = {}
    for count in (10, 50_000):
        root = base / f"criteria-{count}"
        root.mkdir()
        run([*rs, "init", "Benchmark loop", "-c", "c0", *BIG], owned, root)
        path = root / ".loop" / "state.json"
        state = json.loads(path.read_bytes())
        state["criteria"] = [f"c{i}" for i in range(count)]
        state["criteriaStatus"] = {f"c{i}": True for i in range(0, count, 2)}  # half met
        path.write_text(json.dumps(state))
        data = hook_input(root, "SessionStart", source="compact")
        restores[count] = Proc(start, root, data, "additionalContext")
    listed = {}
    for count in (10, 1_000):
        listed[count] = _machine(base / f"machine-{count}", rs, env, count)
    return [
        ("SessionStart, 50,000 criteria / 10", 3.5, restores[50_000], restores[10]),
        ("list, 1,000 loops / 10", 5.0, listed[1_000], listed[10]),
    ]


def _machine(where: Path, rs: list[str], env: dict[str, str], count: int) -> Proc:
    """A home of its own whose registry knows `count` loops, each in a git repository
    of its own (the copies with only the HEAD file a branch is read from): `ralphstate
    list` there."""
    home = where / "home"
    first = where / "loop-0"
    first.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=first, check=True, capture_output=True)
    own = dict(env, RALPHSTATE_HOME=str(home))
    run([*rs, "init", "Benchmark loop", "-c", "tests pass", *BIG], own, first)
    registry = next(home.rglob("loops.json"))
    known = json.loads(registry.read_bytes())
    [entry] = known["loops"].values()
    for i in range(1, count):
        folder = where / f"loop-{i}"
        shutil.copytree(first / ".loop", folder / ".loop")
        (folder / ".git").mkdir()
        (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        known["loops"][str((folder / ".loop").resolve())] = entry
    registry.write_text(json.dumps(known))
    return Proc([*rs, "list"], where, expect="Benchmark loop", env={"RALPHSTATE_HOME": str(home)})
