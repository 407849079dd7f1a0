"""The action under `act`, for what a job must refuse or keep from the agent: a fork's
pull request, the job's token, and the agent's own `ralphstate` inside the job."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from tests.action.actworld import AGENT, EXAMPLES, TOKEN, git, make_world

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def pull_request_loop() -> str:
    """The example loop workflow as a person might trigger it: on pull requests."""
    text = (EXAMPLES / "loop.yml").read_text()
    head, rest = text.split("\non:\n", 1)
    rest = rest[rest.index("\npermissions:") :]
    text = f"{head}\non:\n  pull_request:\n{rest}"
    return text.replace("${{ inputs.branch }}", "ralphstate/from-pr")


def test_a_pull_request_from_a_fork_never_proves_a_loop_under_act(
    tmp_path: Path, pip_cache: Path
) -> None:
    """A `pull_request` job whose head is a fork's: its author replaced the check; the
    job refuses in one sentence before the loop's check or the agent runs."""
    world = make_world(tmp_path, pip_cache=pip_cache, workflows={"pr.yml": pull_request_loop()})
    world.agent_pushes_a_check("fork-work", start="main")  # the pull request's head
    fork = {"full_name": "stranger/project"}
    payload = {
        "pull_request": {
            "number": 7,
            "head": {"ref": "fork-work", "repo": fork},
            "base": {"ref": "main", "repo": {"full_name": "person/project"}},
        }
    }

    job = world.job(
        "job1", {}, "finish", workflow="pr.yml", event_name="pull_request", payload=payload
    )

    said = job.said()
    assert job.code != 0, said[-4000:]
    assert "stranger/project" in said and "a fork's pull request never proves a loop" in said
    assert "Traceback" not in said
    assert not world.evil.exists()  # the fork's check never ran
    branches = git(tmp_path, "--git-dir", str(world.remote), "branch", "--format=%(refname)")
    assert "ralphstate/from-pr" not in branches  # nothing of a loop was pushed
    assert job.outputs.get("outcome", "") == ""
    assert "a fork's pull request never proves a loop" in job.summary  # where a person looks


def test_the_agent_has_ralphstate_in_the_job_and_never_the_jobs_token(
    tmp_path: Path, pip_cache: Path
) -> None:
    """Inside the job the agent runs the job's `ralphstate` (status, a step done), and
    finds the job's token nowhere: not in its environment, not in `.git/config`, not in
    any process it can see (the confinement's pid namespace hides ralphstate's own)."""
    assert TOKEN in AGENT
    world = make_world(tmp_path, pip_cache=pip_cache)

    job = world.job("job1", {"branch": "ralphstate/probe"}, "probe", token=TOKEN)

    said = job.said()
    [line] = [x for x in said.split("probe: ")[1:2]]
    found = orjson.loads(line[: line.index("}") + 1])
    assert found["ralphstate"], said[-4000:]
    assert (found["status"], found["step"]) == (0, 0)
    assert found["token"] == []
    assert found["pids"] < 5  # the agent's own processes, not the job's
    assert job.code == 0, said[-4000:]
    assert job.outputs["outcome"] == "complete"
    state = orjson.loads(
        git(tmp_path, "--git-dir", str(world.remote), "show", "ralphstate/probe:.loop/state.json")
    )
    assert "write it" in state["completedSteps"]
    assert next(c for c in world.gh_calls() if c["argv"][:2] == ["pr", "create"])["token"]
