"""What `ralphstate run` says as it goes: the progress lines number iterations as the
loop does (`[5/20]`, as `status` says "iteration 5/20"), with this run's count beside
them, and the line after a pause says what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_agents
from tests.run.test_run import make_loop, plain


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake agent, recording into a directory its environment names."""
    record = tmp_path / "agent record"
    record.mkdir()
    for key, value in run_agents.env(record).items():
        monkeypatch.setenv(key, value)
    return run_agents.write(tmp_path / "agents")


def test_a_second_run_numbers_its_iterations_as_the_loop_and_status_do(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs, criteria=("a", "b", "c", "d", "e", "f"))
    agent = run_agents.command(script, "stdin", "progress")
    first = rs("run", "--agent", agent, "--max", "2")
    assert first.code == 3
    assert plain(first.out)[0] == "[1/20] this run: 1 of 2 · next step: write it"
    second = rs("run", "--agent", agent, "--max", "3")
    assert second.code == 3
    lines = plain(second.out)
    assert [line for line in lines if line.startswith("[")] == [
        "[3/20] this run: 1 of 3 · next step: write it",
        "[3/20] 3/6 criteria · 0/1 step · T · exit 0",
        "[4/20] this run: 2 of 3 · next step: write it",
        "[4/20] 4/6 criteria · 0/1 step · T · exit 0",
        "[5/20] this run: 3 of 3 · next step: write it",
        "[5/20] 5/6 criteria · 0/1 step · T · exit 0",
    ]
    assert lines[-1] == "This run's --max is spent; run `ralphstate run` again to continue."
    assert "iteration 5/20" in rs("status").out


def test_without_max_a_run_counts_what_the_loops_cap_leaves(
    rs: Any, project: Path, script: Path
) -> None:
    make_loop(rs, "--max-iterations", "4", criteria=("a", "b", "c", "d", "e", "f"))
    agent = run_agents.command(script, "stdin", "progress")
    assert rs("run", "--agent", agent, "--max", "1").code == 3
    done = rs("run", "--agent", agent)
    assert done.code == 3
    assert [line for line in plain(done.out) if line.startswith("[")][::2] == [
        "[2/4] this run: 1 of 3 · next step: write it",
        "[3/4] this run: 2 of 3 · next step: write it",
        "[4/4] this run: 3 of 3 · next step: write it",
    ]
    assert plain(done.out)[-1] == "Give it more with `ralphstate run --max N`."
