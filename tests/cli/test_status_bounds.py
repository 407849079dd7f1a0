"""`ralphstate status` stays readable at any size, as a real process: each list shows
its first 100 lines, the unmet criteria and the remaining steps first, and says how
many more there are; `--all` lists every one (20,000 criteria printed 800 KB)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_process
from tests.helpers.loops import make_loop


def status(root: Path, *args: str) -> str:
    done = run_process(["status", *args], cwd=root)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def test_status_is_bounded_and_all_lists_everything(root: Path) -> None:
    criteria = [f"criterion {i}" for i in range(20_000)]
    steps = [f"step {i}" for i in range(5_000)]
    make_loop(
        root,
        criteria=criteria,
        criteriaStatus={name: True for name in criteria[:19_990]},  # ten unmet, at the end
        steps=steps,
        completedSteps=steps[:4_999],
        checks={name: "true" for name in criteria[:300]},
    )
    shown = status(root)
    assert len(shown) < 20_000, len(shown)
    lines = shown.splitlines()
    unmet = [line for line in lines if line.startswith("  [ ] criterion")]
    assert unmet == [f"  [ ] criterion {i}" for i in range(19_990, 20_000)]  # all shown first
    assert "  … 19900 more criteria (19900 met; `ralphstate status --all` lists them all)" in lines
    assert "  … 200 more checks (`ralphstate status --all` lists them all)" in lines
    assert "  [>] step 4999  (next)" in lines
    assert "  … 4900 more steps (4900 done; `ralphstate status --all` lists them all)" in lines
    every = status(root, "--all").splitlines()
    assert sum(line.startswith(("  [x] criterion", "  [ ] criterion")) for line in every) == 20_000
    assert sum(line.startswith("  [x] step") for line in every) == 4_999
    assert not any("more criteria" in line or "more steps" in line for line in every)


def test_a_small_loop_is_shown_whole_in_its_order(root: Path) -> None:
    make_loop(root, criteria=["b", "a"], criteriaStatus={"b": True})
    lines = status(root).splitlines()
    assert lines.index("  [x] b  (claimed)") < lines.index("  [ ] a")
    assert not any("more" in line for line in lines)
