from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Result, run_process
from tests.helpers.homes import bare_home


def test_demo_plays_the_whole_loop_through_the_real_hook(rs: Any) -> None:
    result: Result = rs("demo")
    assert result.code == 0, result.err
    out = result.out
    assert out.count("[stop hook] blocks; the model reads:") == 2
    assert "ralphstate loop, iteration 1 of 10: 2 of 2 criteria not verified yet:" in out
    done = (
        "ralphstate: loop complete after 2 iterations; verified by its check (checked in the"
        " agent's environment): tests pass; claimed, without a check: README documents --json."
    )
    assert f"[the person sees] {done}" in out
    log = out.split("$ ralphstate log\n", 1)[1].split("\nNext, ", 1)[0]
    assert log.rstrip().splitlines()[-1].split()[2] == "complete"


def test_the_demo_ends_with_the_next_step_and_advises_no_check_in(rs: Any) -> None:
    """A newcomer who watched the demo is told what to do in a project of their own; the
    readiness line explains its score and recommends no mode that stops the night."""
    out = rs("demo").out
    tail = out.rstrip().split("\nNext, ", 1)[1]
    assert tail.startswith("in a project of your own: `ralphstate install`"), tail
    assert 'ralphstate init "what to build" --check "tests pass"' in tail
    assert "docs/tutorial.md" in tail
    line = next(s for s in out.splitlines() if s.startswith("readiness "))
    assert "docs/reference/run.md#the-specs-shape" in line
    assert "check-in" not in out and "check in" not in out


def test_the_demo_shows_a_check_catching_a_false_claim(rs: Any) -> None:
    """The agent claims "tests pass" with the test still failing: the Stop hook runs the
    check, sends it back with the failure, and only the fixed code completes the loop."""
    out = rs("demo").out
    claim = out.index('[agent runs] ralphstate criteria set "tests pass" true')
    caught = out.index("ralphstate ran the checks and 1 failed", claim)
    assert "AssertionError: 'a: 1' != '{\"a\": 1}'" in out[caught:]
    fixed = out.index("[agent edits] report.py", caught)
    assert out.index("PASS  tests pass", fixed) < out.index("[stop hook] allows the stop.")
    assert "  [x] tests pass  (verified " in out


def test_the_demo_numbers_its_turns_as_the_loop_counts_iterations(rs: Any) -> None:
    """Each section after the first turn is the iteration the block before it began, as
    the block's reason, the completion, `status` and `log` number it."""
    out = rs("demo").out
    sections = re.findall(r"^--- (.*) ---$", out, re.MULTILINE)
    assert sections == ["the session's first turn", "iteration 1", "iteration 2"]
    for number in (1, 2):  # the reason read just before the section it begins
        before = out.split(f"--- iteration {number} ---")[0]
        assert (
            before.rstrip()
            .rsplit("ralphstate loop, iteration ", 1)[1]
            .startswith(f"{number} of 10")
        )
    assert "loop complete after 2 iterations" in out
    assert " · iteration 2/10 · " in out
    log = out.split("$ ralphstate log\n", 1)[1]
    work = [line.split()[1] for line in log.splitlines() if " step_done " in line]
    assert work == ["#1", "#1"]  # done in the section "iteration 1"
    # The claim the Stop hook's checks refuted became a step, done once they passed.
    fixed = [line.split()[2] for line in log.splitlines() if " fix_step_" in line]
    assert fixed == ["fix_step_added", "fix_step_done"]


def test_the_demo_in_a_bare_home_is_not_told_that_nothing_enforces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's first command on a fresh machine: the demo's scratch project has the
    hooks its stops run, so `init` there does not say that nothing enforces the loop,
    and the person's home is left as it was."""
    home = bare_home(tmp_path, monkeypatch)
    done = run_process(["demo"], cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "started a loop in .loop/state.json" in out
    assert "nothing enforces" not in out + done.stderr.decode()
    assert sorted(p.name for p in home.iterdir()) == []
