"""One way through a verification (docs/explanation/design.md, "The verification
pipeline"): the steps that build a room, run the loop's checks side by side and record
their results are called from verify/pipeline.py alone, so every caller (the Stop hook,
the task gate, `run`, `verify`, `init`, CI) goes through its gather, plan and judge."""

from __future__ import annotations

import ast
from pathlib import Path

import ralphstate

PACKAGE = Path(ralphstate.__file__).parent

# (module, name): a step of the pipeline, and the only module that may call it.
STEPS = {
    ("isolation", "room"): "verify/pipeline.py",
    ("pool", "run"): "verify/pipeline.py",
    ("checkrunner", "runner"): "verify/pipeline.py",
    ("records", "results"): "verify/pipeline.py",
    ("verifyplan", "plan"): "verify/pipeline.py",
    ("verdict", "judge"): "verify/pipeline.py",
}


def callers(root: Path) -> dict[tuple[str, str], set[str]]:
    """For each step, the modules under `root` that call it as `module.name(...)`."""
    found: dict[tuple[str, str], set[str]] = {step: set() for step in STEPS}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            owner = node.func.value
            if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in found:
                found[(owner.id, node.func.attr)].add(path.relative_to(root).as_posix())
    return found


def strays(root: Path) -> list[str]:
    """`module.name` called elsewhere than the pipeline, as `file: module.name`."""
    return [
        f"{caller}: {module}.{name}"
        for (module, name), seen in callers(root).items()
        for caller in sorted(seen)
        if caller != STEPS[(module, name)]
    ]


def test_only_the_pipeline_builds_the_room_runs_the_checks_and_records_them() -> None:
    found = callers(PACKAGE)
    assert all(seen == {"verify/pipeline.py"} for seen in found.values()), found
    assert strays(PACKAGE) == []


def test_a_second_way_through_is_named(tmp_path: Path) -> None:
    """A caller that runs the pool itself is found, by file and name."""
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "shortcut.py").write_text(
        "from ralphstate.verify import pool\n\ndef go(jobs):\n    return pool.run(jobs, '.')\n",
        encoding="utf-8",
    )
    assert strays(tmp_path) == ["cli/shortcut.py: pool.run"]
