"""The pieces of `ralphstate ci` and the files around it, without `act`: the contract put
back from the trusted source, the decision to ask for the next job, what goes to
GitHub, the action's inputs reaching the command, the container running the same
command, and the linters over every workflow file."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.ci import github, job, pushing, trusted
from ralphstate.cli.ci import ci_command
from ralphstate.core import budgets, schema
from ralphstate.core import state as st
from ralphstate.loop.project import locate
from tests.helpers import REPO

WORKFLOWS = sorted((REPO / "docs" / "examples").glob("*.yml"))
ACTION = REPO / "action.yml"


def rs(root: Path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", *args], cwd=root, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_a_changed_check_and_an_added_one_are_put_back(project: Path) -> None:
    rs(project, "init", "Fix it", "-c", "tests pass", "-c", "docs")
    rs(project, "criteria", "check", "tests pass", "python -m pytest")
    store = locate(project)
    contract = trusted.from_inputs(["tests pass", "docs"], {"tests pass": "python -m pytest"})
    state_file = project / ".loop" / "state.json"
    state: dict[str, Any] = orjson.loads(state_file.read_bytes())
    state["checks"] = {"tests pass": "true", "docs": "touch mark"}
    state_file.write_bytes(orjson.dumps(state))

    found = trusted.put_back(store, contract, "the workflow")

    assert found == [
        "the check of 'tests pass' was replaced: `python -m pytest` became `true`",
        'a check for "docs" (`touch mark`) that the trusted contract does not have',
    ]
    after = store.load()
    assert after["checks"] == {"tests pass": "python -m pytest"}
    assert trusted.put_back(store, contract, "the workflow") == []  # nothing left to put back


def test_the_contract_of_the_base_commit_is_read_from_git(project: Path, tmp_path: Path) -> None:
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "a@b.invalid"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    subprocess.run(["git", "config", "user.name", "A"], cwd=project, check=True)
    assert trusted.from_commit(project, "HEAD") is None  # no commit, no loop
    rs(project, "init", "Fix it", "-c", "tests pass")
    rs(project, "criteria", "check", "tests pass", "python -m pytest")
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "loop"], cwd=project, check=True)
    rs(project, "criteria", "check", "tests pass", "true")  # after the commit: not the base's

    contract = trusted.from_commit(project, "HEAD")

    assert contract is not None and contract["checks"] == {"tests pass": "python -m pytest"}


def test_the_trusted_contract_holds_every_contract_row_at_its_default(project: Path) -> None:
    """The workflow's contract and the base commit's have every field of the contract
    (core/schema.py, the contract rows) and the loop's budgets; a field the workflow does
    not give, or the committed loop left at its default, holds its row's default there."""
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "a@b.invalid"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    subprocess.run(["git", "config", "user.name", "A"], cwd=project, check=True)
    loop = st.new("Fix it", ["tests pass"], [], now="2026-01-01T00:00:00Z")
    loop["checks"] = {"tests pass": "python -m pytest"}
    (project / ".loop").mkdir()
    (project / ".loop" / "state.json").write_bytes(st.dumps(loop))
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "loop"], cwd=project, check=True)
    defaults = schema.defaults()

    given = trusted.from_inputs(["tests pass"], {"tests pass": "python -m pytest"})
    committed = trusted.from_commit(project, "HEAD")

    assert committed is not None
    for contract in (given, committed):
        assert list(contract) == [*(row.name for row in schema.CONTRACT), trusted.BUDGET]
        assert contract["criteria"] == ["tests pass"]
        assert contract["checks"] == {"tests pass": "python -m pytest"}
        for row in schema.CONTRACT[2:]:
            assert row.contract is not None
            assert contract[row.name] == row.contract(defaults, row.name), row.name
        assert contract[trusted.BUDGET] == dict.fromkeys(schema.BUDGET_KEYS)
    assert [row.name for row in schema.CONTRACT[:2]] == ["criteria", "checks"]


def test_a_check_for_no_criterion_of_the_workflow_is_refused() -> None:
    with pytest.raises(Exception, match="not one of its criteria"):
        trusted.from_inputs(["tests pass"], {"docs": "true"})


@pytest.mark.parametrize(
    ("result", "goes_on"),
    [
        (
            {
                "outcome": "paused",
                "reason": "budget",
                "budget": budgets.RUNS,
                "detail": "duration 15s of this run's 15s",
            },
            True,
        ),
        (
            {
                "outcome": "paused",
                "reason": "budget",
                "budget": budgets.LOOPS,
                "detail": "duration 8h of the loop's 8h",
            },
            False,
        ),
        (
            {
                "outcome": "paused",
                "reason": "budget",
                "budget": budgets.RUNS,
                "detail": "cost $5.00 of this run's $5.00",
            },
            False,
        ),
        ({"outcome": "complete", "reason": None}, False),
        ({"outcome": "paused", "reason": "agent_errors"}, False),
        ({"outcome": "paused", "reason": "review"}, False),
    ],
)
def test_only_the_jobs_time_running_out_asks_for_the_next_job(
    result: dict[str, Any], goes_on: bool
) -> None:
    assert job.continues(result) is goes_on


def test_outputs_and_summary_go_where_actions_says(tmp_path: Path) -> None:
    out, summary = tmp_path / "out", tmp_path / "summary"
    env = {"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary)}

    github.set_outputs({"outcome": "complete", "criteria-met": "2/2"}, env)
    github.add_summary("## done", env)
    github.set_outputs({"x": "y"}, {})  # outside Actions: nothing, no error

    assert out.read_text() == (
        "outcome<<RALPHSTATE_OUTPUT_END\ncomplete\nRALPHSTATE_OUTPUT_END\n"
        "criteria-met<<RALPHSTATE_OUTPUT_END\n2/2\nRALPHSTATE_OUTPUT_END\n"
    )
    assert summary.read_text() == "## done\n"


def test_the_next_job_is_asked_of_this_workflow_with_this_jobs_inputs(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text('{"inputs": {"branch": "loop/a", "n": 3}}')
    env = {
        "GITHUB_EVENT_NAME": "workflow_dispatch",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_WORKFLOW_REF": "me/project/.github/workflows/loop.yml@refs/heads/main",
    }
    assert github.event_inputs(env) == {"branch": "loop/a", "n": "3"}
    assert github.event_inputs({**env, "GITHUB_EVENT_NAME": "schedule"}) == {}
    assert github.workflow_name(None, env) == "loop.yml"
    assert github.workflow_name("other.yml", env) == "other.yml"
    assert github.workflow_name(None, {}) is None


def action() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    found: dict[str, Any] = yaml.safe_load(ACTION.read_text())
    return found


def test_every_input_of_the_action_reaches_an_option_of_ralphstate_ci() -> None:
    steps = action()["runs"]["steps"]
    [loop] = [s for s in steps if s.get("id") == "loop"]
    options = {
        f"RALPHSTATE_CI_{name.upper()}"
        for p in ci_command.params
        for name in [p.name or ""]
        if p.name
    } | {"RALPHSTATE_CI_MAX"}
    given = {k for k in loop["env"] if k.startswith("RALPHSTATE_CI_")}
    assert given <= options
    used = set(re.findall(r"inputs\.([\w-]+)", ACTION.read_text()))
    assert used == set(action()["inputs"])  # every input is used, none made up
    assert 'ralphstate-venv/bin/ralphstate" ci' in loop["run"]


def test_the_container_runs_the_command_the_action_runs() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["ralphstate", "ci"]' in dockerfile
    copied = re.findall(r"^COPY (.+) /opt/ralphstate/", dockerfile, re.MULTILINE)
    assert " ".join(copied).split() == ["pyproject.toml", "README.md", "LICENSE", "ralphstate"]
    assert "pip install --no-cache-dir /opt/ralphstate" in dockerfile
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    kept = [line[1:].rstrip("/") for line in ignore if line.startswith("!")]
    assert kept == " ".join(copied).split()  # the build context holds what is copied


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("actionlint", [str(p) for p in WORKFLOWS]),
        ("zizmor", ["--offline", "--no-progress", str(ACTION), *map(str, WORKFLOWS)]),
        ("hadolint", [str(REPO / "Dockerfile")]),
    ],
)
def test_the_action_the_workflows_and_the_dockerfile_pass_their_linters(
    tool: str, args: list[str]
) -> None:
    program = shutil.which(tool) or str(Path(sys.executable).parent / tool)
    if not Path(program).exists():
        pytest.skip(f"{tool} is not installed (the `test` extra installs it)")
    done = subprocess.run([program, *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_guarded_test_changed_on_the_branch_is_a_change_to_review(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ralphstate.loop import proofreview
    from tests.helpers.gitrepo import git, init_repo, use_identity

    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"test_calc.py": "assert 1 + 1 == 2\n"})
    rs(project, "init", "Fix it", "-c", "tests pass")
    rs(project, "criteria", "check", "tests pass", "python test_calc.py")
    assert locate(project).load()["guards"]  # the test the check names is guarded
    git(project, "add", "-A")
    git(project, "commit", "-qm", "the loop")
    base = git(project, "rev-parse", "HEAD")
    git(project, "checkout", "-qb", "ralphstate/fix")
    (project / "test_calc.py").write_text("assert True\n")  # an earlier job's agent
    git(project, "commit", "-qam", "iteration 3")
    monkeypatch.setenv("RALPHSTATE_HOME", str(tmp_path / "new-runner"))  # no ledger yet

    store = locate(project)
    trusted.approve(store, base)

    changes = proofreview.pending(store, store.load()).changes
    assert any("test_calc.py" in change for change in changes), changes


def test_the_loops_budget_raised_on_the_branch_is_put_back(project: Path) -> None:
    rs(project, "init", "Fix it", "-c", "tests pass")
    rs(project, "config", "max-cost", "500")  # as an agent's hand edit would leave it
    store = locate(project)
    contract = trusted.from_inputs(["tests pass"], {}, {"maxCost": 5.0})

    found = trusted.put_back(store, contract, "the workflow")

    assert found == ["maxCost was 500.0, not 5.0"]
    after = store.load()
    assert (after["maxCost"], after["maxTokens"], after["maxDuration"]) == (5.0, None, None)


def docker_runs() -> bool:
    if shutil.which("docker") is None:
        return False
    done = subprocess.run(["docker", "info"], capture_output=True, check=False, timeout=30)
    return done.returncode == 0


@pytest.mark.e2e
def test_the_image_builds_and_its_command_is_ralphstate_ci(tmp_path: Path) -> None:
    """Where a container engine runs (not on every machine this suite runs on)."""
    if not docker_runs():
        pytest.skip("no container engine runs here: the image is linted, not built")
    tag = "ralphstate-ci-test"
    build = subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(REPO)], capture_output=True, text=True, check=False
    )
    assert build.returncode == 0, build.stderr
    shown = subprocess.run(
        ["docker", "run", "--rm", tag, "--help"], capture_output=True, text=True, check=False
    )
    assert shown.stdout.startswith("Usage: ralphstate ci "), shown.stdout + shown.stderr


def test_a_pull_request_from_a_fork_never_proves_a_loop(project: Path, tmp_path: Path) -> None:
    """A fork's author wrote the checkout a pull_request job runs in: `ralphstate ci`
    refuses in one sentence before anything of the loop is run or trusted."""
    mark = tmp_path / "agent-ran"
    event = tmp_path / "event.json"
    event.write_bytes(
        orjson.dumps(
            {
                "repository": {"full_name": "person/project", "default_branch": "main"},
                "pull_request": {"head": {"repo": {"full_name": "stranger/project"}}},
            }
        )
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "RALPHSTATE_HOME": str(tmp_path / "runner"),
    }
    agent = f"{sys.executable} -c \"open({str(mark)!r}, 'w')\""
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", "ci", "--agent", agent, "--branch", "loop/x"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.returncode == 1
    assert "stranger/project" in done.stderr and "never proves a loop" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not mark.exists()
    assert not (tmp_path / "runner").exists() or not any((tmp_path / "runner").rglob("trust.json"))


def workflows_in(page: Path) -> list[str]:
    """The workflows a page shows in full: its yaml blocks that have `jobs:`."""
    blocks = re.findall(r"```ya?ml\n(.*?)```", page.read_text(), flags=re.DOTALL)
    return [block for block in blocks if re.search(r"^jobs:", block, flags=re.MULTILINE)]


def test_the_readme_shows_no_piece_of_a_workflow() -> None:
    """A piece cannot be linted, and a person copies it as it is: the README points to
    the how-to's whole workflow instead."""
    blocks = re.findall(r"```ya?ml\n(.*?)```", (REPO / "README.md").read_text(), flags=re.DOTALL)
    assert [b for b in blocks if "uses:" in b] == workflows_in(REPO / "README.md")


@pytest.mark.parametrize("page", ["docs/how-to/github-action.md"])
def test_the_workflows_the_docs_show_pass_their_linters(page: str, tmp_path: Path) -> None:
    """What a person copies from a page is linted as the examples are."""
    found = workflows_in(REPO / page)
    assert found, f"{page} shows no whole workflow"
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    files = []
    for n, text in enumerate(found):
        files.append(folder / f"shown{n}.yml")
        files[-1].write_text(text)
    for tool, args in (
        ("actionlint", [str(f) for f in files]),
        ("zizmor", ["--offline", "--no-progress", *map(str, files)]),
    ):
        program = shutil.which(tool) or str(Path(sys.executable).parent / tool)
        if not Path(program).exists():
            pytest.skip(f"{tool} is not installed (the `test` extra installs it)")
        done = subprocess.run([program, *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def test_ralphstates_own_git_gets_the_token_in_its_environment_only(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `persist-credentials: false` the push needs the job's token: the real git
    ralphstate starts reads it as a header from its environment, and `.git/config` never
    holds it."""
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    monkeypatch.setenv("GH_TOKEN", "the-jobs-token")
    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)

    done = pushing.git(project, "config", "--get", "http.https://github.com/.extraheader")

    assert done.code == 0
    header = done.out.decode().strip()
    assert header.startswith("AUTHORIZATION: basic ")
    assert base64.b64decode(header.split()[-1]) == b"x-access-token:the-jobs-token"
    assert b"the-jobs-token" not in (project / ".git" / "config").read_bytes()
    assert b"extraheader" not in (project / ".git" / "config").read_bytes()
    assert set(job.JOB_ONLY) >= {"GH_TOKEN", "GITHUB_TOKEN"}  # and never the agent's


def test_the_jobs_run_gives_the_confined_agent_its_key_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ralphstate run` confines the job's agent to an allowlist of the environment; the
    variable the action put the agent's key in is named to it with `--env`."""
    one = job.Job(agent="my-agent -p", branch="loop/x", time_budget=60)
    monkeypatch.delenv(job.SECRET_NAME_ENV, raising=False)
    assert "--env" not in job.run_args(one, 60)
    monkeypatch.setenv(job.SECRET_NAME_ENV, "MY_MODEL_KEY")
    args = job.run_args(one, 60)
    assert args[args.index("--env") + 1] == "MY_MODEL_KEY"
    assert "--sandbox" not in args and "--no-sandbox" not in args  # the default: confined
