"""The action under `act`, job after job: a loop longer than a job goes on in the next
one, on a new machine, and only the trusted contract runs there."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from tests.action.actworld import ACT_TIMEOUT, EXAMPLES, JobRun, git, make_world

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def test_a_loop_longer_than_a_job_goes_on_in_the_next_job(tmp_path: Path, pip_cache: Path) -> None:
    world = make_world(tmp_path, pip_cache=pip_cache)
    inputs = {"branch": "ralphstate/done"}

    first = world.job("job1", inputs, "slow")

    assert first.code == 0, first.said()[-4000:]
    assert first.outputs["outcome"] == "paused"
    assert first.outputs["continues"] == "true"
    [dispatch] = [c for c in world.gh_calls() if c["argv"][:2] == ["workflow", "run"]]
    assert dispatch["argv"] == ["workflow", "run", "loop.yml", "--ref", "main", "--json"]
    assert orjson.loads(dispatch["stdin"]) == inputs
    pushed = orjson.loads(
        git(tmp_path, "--git-dir", str(world.remote), "show", "ralphstate/done:.loop/state.json")
    )
    assert (pushed["status"], pushed["pauseReason"]) == ("paused", "budget")
    assert pushed["checks"]["tests pass"] == "python3 check.py"
    world.agent_pushes_a_check("ralphstate/done")

    second = world.job("job2", orjson.loads(dispatch["stdin"]), "finish")

    assert second.code == 0, second.said()[-4000:]
    assert second.outputs["outcome"] == "complete"
    assert second.outputs["continues"] == "false"
    assert not world.evil.exists()  # the agent's check never ran
    done = orjson.loads(
        git(tmp_path, "--git-dir", str(world.remote), "show", "ralphstate/done:.loop/state.json")
    )
    assert done["status"] == "complete"
    history = git(
        tmp_path, "--git-dir", str(world.remote), "show", "ralphstate/done:.loop/history.jsonl"
    )
    assert orjson.loads(history.splitlines()[-1])["event"] == "run_finished"  # the last state
    assert done["loopId"] == pushed["loopId"]
    assert done["iteration"] > pushed["iteration"] == 2  # carried on, not started again
    assert done["checks"]["tests pass"] == "python3 check.py"
    assert "put back" in second.summary
    assert "Write done.txt" in second.summary  # the report
    calls = [c["argv"][:2] for c in world.gh_calls()]
    assert calls.count(["workflow", "run"]) == 1  # no next job after the loop completed
    assert ["pr", "create"] in calls  # the example asks for a pull request


def test_a_job_started_on_the_loop_branch_is_proved_by_the_default_branch(
    tmp_path: Path, pip_cache: Path
) -> None:
    """The agent can start a job on its own branch (a token that dispatches workflows);
    the contract still comes from the default branch, never from the commit it started on."""
    world = make_world(tmp_path, pip_cache=pip_cache)
    world.agent_pushes_a_check("ralphstate/own", start="main")

    job = world.job("job1", {"branch": "ralphstate/own"}, "finish", ref="ralphstate/own")

    assert job.code == 0, job.said()[-4000:]
    assert not world.evil.exists()  # the agent's check never ran
    assert job.outputs["outcome"] == "complete"
    state = orjson.loads(
        git(tmp_path, "--git-dir", str(world.remote), "show", "ralphstate/own:.loop/state.json")
    )
    assert state["checks"]["tests pass"] == "python3 check.py"
    assert ".loop/state.json on main at" in job.summary  # what was put back, and from where
    assert "started by" in job.summary


def test_an_approval_the_agent_gives_itself_in_the_job_counts_for_nothing(
    tmp_path: Path, pip_cache: Path
) -> None:
    """On CI the person is the trusted branch: the agent replaces the check with `true`
    and approves it from a shell without the run's variables (with the job's own
    `ralphstate`, on its PATH): both approvals are refused, the loop pauses for review
    and the job fails."""
    world = make_world(tmp_path, pip_cache=pip_cache)

    job = world.job("job1", {"branch": "ralphstate/self"}, "self-approve")

    assert "ralphstate is not on the agent's PATH" not in job.said()
    assert job.code != 0, job.said()[-4000:]
    assert (job.outputs["outcome"], job.outputs["reason"]) == ("paused", "review")
    # Both approvals were refused to the agent's process, and the changed check paused
    # the loop for the person (the next job puts the trusted check back).
    [log] = (world.root / "artifacts").glob("*/0001.log")
    assert log.read_text().count("only the person may run it") == 2
    state = orjson.loads(
        git(tmp_path, "--git-dir", str(world.remote), "show", "ralphstate/self:.loop/state.json")
    )
    assert (state["status"], state["pauseReason"]) == ("paused", "review")
    assert state["checks"]["tests pass"] == "true"  # the agent's, shown, unapproved
    main = git(tmp_path, "--git-dir", str(world.remote), "show", "main:.loop/state.json")
    assert orjson.loads(main)["checks"]["tests pass"] == "python3 check.py"


def test_a_failing_agent_ends_the_chain_without_a_next_job(tmp_path: Path, pip_cache: Path) -> None:
    world = make_world(tmp_path, pip_cache=pip_cache)

    job = world.job("job1", {"branch": "ralphstate/fails"}, "fail")

    assert job.code != 0  # the job fails where a person looks
    assert (job.outputs["outcome"], job.outputs["reason"]) == ("paused", "agent_errors")
    assert job.outputs["continues"] == "false"
    calls = [c["argv"][:2] for c in world.gh_calls()]
    assert ["workflow", "run"] not in calls
    assert ["pr", "create"] in calls  # the person is told on the pull request
    assert "agent_errors" in job.summary
    state = orjson.loads(
        git(tmp_path, "--git-dir", str(world.remote), "show", "ralphstate/fails:.loop/state.json")
    )
    assert (state["status"], state["pauseReason"]) == ("paused", "agent_errors")


def test_a_loop_started_from_the_form_keeps_the_forms_contract(
    tmp_path: Path, pip_cache: Path
) -> None:
    world = make_world(tmp_path, with_loop=False, pip_cache=pip_cache)
    inputs = {
        "branch": "ralphstate/form",
        "spec": "Write done.txt",
        "criteria": "tests pass",
        "checks": "tests pass: python3 check.py",
        "time-budget": "60",
    }

    job = world.job("job1", inputs, "finish", workflow="start.yml")

    assert job.code == 0, job.said()[-4000:]
    assert (job.outputs["outcome"], job.outputs["continues"]) == ("complete", "false")
    state = orjson.loads(
        git(tmp_path, "--git-dir", str(world.remote), "show", "ralphstate/form:.loop/state.json")
    )
    assert (state["spec"], state["status"]) == ("Write done.txt", "complete")
    assert state["checks"] == {"tests pass": "python3 check.py"}
    assert state["evidence"]["tests pass"]["result"] == "verified"


def test_each_loop_of_the_matrix_asks_for_the_next_job_of_its_own_loop(
    tmp_path: Path, pip_cache: Path
) -> None:
    world = make_world(tmp_path, with_loop=False, pip_cache=pip_cache)

    job = world.job("job1", {"only": ""}, "slow", workflow="matrix.yml")

    assert job.code == 0, job.said()[-4000:]
    asked = [c for c in world.gh_calls() if c["argv"][:2] == ["workflow", "run"]]
    assert {c["argv"][2] for c in asked} == {"matrix.yml"}
    assert sorted(orjson.loads(c["stdin"])["only"] for c in asked) == [
        "csv-export",
        "faster-search",
    ]
    branches = git(tmp_path, "--git-dir", str(world.remote), "branch", "--format=%(refname:short)")
    assert branches.split() == ["main", "ralphstate/csv-export", "ralphstate/faster-search"]
    state = orjson.loads(
        git(
            tmp_path,
            "--git-dir",
            str(world.remote),
            "show",
            "ralphstate/csv-export:.loop/state.json",
        )
    )
    assert state["criteria"] == ["tests pass", "exports match the fixtures"]
    # The final job: every loop of the matrix in one table, as its branch records it.
    table = job.summary_of("summary")
    assert "0 of 2 complete" in table, job.said()[-4000:]
    assert "| `ralphstate/csv-export` | paused (budget) | 2 | 0/2 |" in table
    assert "| `ralphstate/faster-search` | paused (budget) | 2 | 0/1 |" in table


def job_windows(job: JobRun) -> dict[str, tuple[str, str]]:
    """When each loop's job of a matrix began and ended, from act's log lines."""
    seen: dict[str, list[str]] = {}
    for line in job.lines:
        loop = (line.get("matrix") or {}).get("loop") or {}
        if line.get("jobID") == "loop" and loop.get("name") and line.get("time"):
            seen.setdefault(loop["name"], []).append(str(line["time"]))
    return {name: (min(times), max(times)) for name, times in seen.items()}


@pytest.mark.parametrize("at_once", [1])
def test_the_matrix_runs_at_most_max_parallel_loops_at_once(
    tmp_path: Path, pip_cache: Path, at_once: int
) -> None:
    """`max-parallel` of the example matrix holds: with 1, the second loop's job starts
    only after the first's has ended. Only when each job began and ended counts here, so
    each job has the least time budget: it waits out no iteration."""
    text = (EXAMPLES / "matrix.yml").read_text()
    assert "max-parallel: 20" in text
    one = text.replace("max-parallel: 20", f"max-parallel: {at_once}")
    world = make_world(
        tmp_path, with_loop=False, pip_cache=pip_cache, workflows={"m.yml": one}, time_budget=1
    )

    job = world.job("job1", {"only": ""}, "slow", workflow="m.yml", timeout=2 * ACT_TIMEOUT)

    assert job.code == 0, job.said()[-4000:]
    windows = sorted(job_windows(job).values())
    assert len(windows) == 2, windows
    (_, first_end), (second_start, _) = windows
    assert first_end <= second_start, windows
