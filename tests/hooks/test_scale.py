"""The hooks at the sizes real loops reach: SessionStart restores a loop of 50,000
criteria, half of them unmet, as a real process within the client's own SessionStart
timeout (a render that is quadratic in the criteria took 87 s at 52,000)."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.helpers import run_process
from tests.helpers.loops import SID, make_loop

# Claude Code's default timeout for a command hook at SessionStart: a hook still running
# then is killed and nothing is restored (docs/reference/hooks.md).
SESSION_START_TIMEOUT = 30


def test_session_start_restores_fifty_thousand_criteria(root: Path) -> None:
    criteria = [f"c{i}" for i in range(50_000)]
    status = {name: True for name in criteria[::2]}  # every other one met: unmet interleave
    make_loop(root, criteria=criteria, criteriaStatus=status)
    data = {"session_id": SID, "cwd": str(root), "source": "compact"}
    done = run_process(
        ["hook", "session-start"],
        cwd=root,
        input=orjson.dumps(data),
        timeout=SESSION_START_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    context = orjson.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Criteria (25000 of 50000 verified):" in context
    assert "- [ ] c1\n" in context and "(24985 unmet;" in context
