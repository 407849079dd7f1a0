"""The same shortcuts under `ralphstate run`: the agent an iteration runs (a scripted
one, tests/adversarial/run_agent.py) takes them on the calc project whose test really
fails. The run never ends `complete` with exit 0 on a shortcut: its outcome, its exit
code, its summary, its JSON and the person's notifier say what happened (claimed or
verified, paused for review, ended outside ralphstate, the agent's own cancel or
pause). The honest agent's run completes as it always did."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import spawn
from tests.adversarial import run_agent
from tests.adversarial.scripted import CRITERION, Person, history, state

PROGRESS = re.compile(r"\[\d+/\d+\] ")
NOTIFIER = """\
import os, sys
from pathlib import Path

with Path(sys.argv[1]).open("ab") as record:
    record.write(sys.stdin.buffer.read() + b"\\n")
"""


@dataclass
class Run:
    process: subprocess.CompletedProcess[str]
    out: dict[str, Any]  # the --json object
    summary: list[str]  # the run's last lines on stderr: its summary
    notices: list[dict[str, Any]]  # what the person's notifier was given

    @property
    def said(self) -> str:
        return "\n".join(self.summary)


def run_with(person: Person, tmp_path: Path, shortcut: str) -> Run:
    """`ralphstate run --json`, started by the person, its agent taking `shortcut`."""
    record = tmp_path / "notices.jsonl"
    notifier = tmp_path / "notifier.py"
    notifier.write_text(NOTIFIER)
    done = person.rs(
        "run",
        "--agent",
        run_agent.command(tmp_path / "agent", shortcut),
        "--notify",
        spawn.join_command([sys.executable, str(notifier), str(record)]),
        "--max",
        "3",
        "--json",
        ok=False,
    )
    out = orjson.loads(done.stdout)
    lines = done.stderr.splitlines()
    # The run's summary follows its line about the last iteration ("[1/20] ...").
    last = max(i for i, line in enumerate(lines) if PROGRESS.match(line))
    notices = [orjson.loads(x) for x in record.read_bytes().splitlines()] if record.exists() else []
    return Run(done, out, lines[last + 1 :], notices)


def never_complete(run: Run) -> None:
    assert run.out["outcome"] != "complete", run.out
    assert run.process.returncode == run.out["exitCode"] != 0, run.process
    assert not run.said.startswith("complete"), run.said
    assert all(n.get("outcome") != "complete" for n in run.notices), run.notices


@pytest.mark.parametrize(
    ("shortcut", "said"),
    [
        ("replace-check", f"the check of '{CRITERION}' was replaced"),
        ("remove-check", f"the check of '{CRITERION}'"),
        ("edit-test", "tests/test_calc.py"),
    ],
)
def test_a_weakened_proof_ends_the_run_in_review(
    shortcut: str, said: str, person: Person, calc: Path, tmp_path: Path
) -> None:
    run = run_with(person, tmp_path, shortcut)

    never_complete(run)
    assert "review" in (run.out["outcome"], run.out["reason"]), run.out
    assert (state(calc)["status"], state(calc)["pauseReason"]) == ("paused", "review")
    assert "review" in run.said and said in run.said, run.said
    assert "ralphstate review" in run.said, run.said
    [notice] = run.notices
    assert "review" in (notice.get("outcome"), notice.get("reason")), notice


def test_a_claim_is_called_a_claim_in_the_summary(
    person: Person, calc: Path, tmp_path: Path
) -> None:
    run = run_with(person, tmp_path, "remove-check")

    never_complete(run)
    assert "claimed" in run.said, run.said
    assert "claimed" in run.process.stdout, run.out


@pytest.mark.parametrize(
    ("shortcut", "said"),
    [("complete-by-hand", "ended"), ("delete-state", "deleted")],
)
def test_an_ending_outside_ralphstate_is_its_own_outcome(
    shortcut: str, said: str, person: Person, calc: Path, tmp_path: Path
) -> None:
    run = run_with(person, tmp_path, shortcut)

    never_complete(run)
    assert run.out["outcome"] == "ended_outside", run.out
    assert said in run.said and "outside" in run.said.replace("_", " "), run.said
    assert "not verified" in run.said or "claimed" in run.said, run.said
    assert [n.get("outcome") for n in run.notices] == ["ended_outside"], run.notices


@pytest.mark.parametrize(("shortcut", "status"), [("cancel", "cancelled"), ("pause", "paused")])
def test_the_agents_own_cancel_or_pause_is_named_as_the_agents(
    shortcut: str, status: str, person: Person, calc: Path, tmp_path: Path
) -> None:
    run = run_with(person, tmp_path, shortcut)

    never_complete(run)
    assert run.out["outcome"] == status, run.out
    [event] = history(calc, status)
    assert event["actor"]["kind"] == "run", event
    assert "agent" in run.said and "from outside" not in run.said, run.said
    assert run.notices and "agent" in str(run.notices[-1].get("summary")), run.notices


def test_the_honest_agent_completes_the_run_as_before(
    person: Person, calc: Path, tmp_path: Path
) -> None:
    run = run_with(person, tmp_path, "honest")

    assert (run.out["outcome"], run.process.returncode) == ("complete", 0), run.said
    assert run.said.startswith("complete"), run.said
    assert "review" not in run.said, run.said
    assert state(calc)["evidence"][CRITERION]["result"] == "verified"
    assert [n.get("outcome") for n in run.notices] == ["complete"], run.notices
