"""A small world for the action's end-to-end tests: a bare repository as the remote, a
base branch holding a loop a person committed, the example workflow, and `act` running
one job at a time on this machine without Docker (host mode), each in a fresh clone with
a fresh HOME, as a new runner would.

The remote actions are replaced by stand-ins (standins/): checkout clones the bare
repository, upload-artifact copies into a directory, and `gh` records what it was asked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ralphstate.run import spawn
from tests.helpers.gitrepo import IDENTITY

HERE = Path(__file__).parent
REPO = HERE.parent.parent
EXAMPLES = REPO / "docs" / "examples"
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"
UPLOAD = "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02"
ACTION = "OWNER/ralphstate@0000000000000000000000000000000000000000"
# What the action installs from: the files `pip install` needs, nothing of this checkout's
# environments or caches.
ACTION_FILES = ("action.yml", "pyproject.toml", "README.md", "LICENSE", "ralphstate")
# A bound on `act` as a whole, only for a job that hangs: a matrix's three jobs took
# 300 s at load average 20 on two cores; never waited out by a job that ends.
ACT_TIMEOUT = 900.0
# Each job's time budget, in seconds: the first job's second iteration outlives it. A
# job that waits out its time waits this long, so it is as short as lets the first
# iteration (the agent, the check, the commit and its push) end within it on a busy
# machine.
TIME_BUDGET = 10

# The check a person committed to the base branch: done.txt holds "done".
CHECK = "import pathlib, sys\nsys.exit(pathlib.Path('done.txt').read_text() != 'done\\n')\n"

# The job's token in the tests that give one (`act -s GITHUB_TOKEN=`): the agent looks
# for it everywhere it can read.
TOKEN = "ghs_the_jobs_token_7c2e91"

# The scripted agent, its plan written into its file for each job (the confined agent
# gets only an allowlist of the environment and none of the test's files). Job 1
# (slow): the first iteration writes step1.txt, the second works on past the job's
# time. Job 2 (finish): writes done.txt. fail: exits 7. probe: uses the job's
# `ralphstate`, looks for the job's token everywhere it can read, then finishes.
AGENT = r"""
import os, sys, time
from pathlib import Path

sys.stdin.read()
plan = PLAN  # noqa: F821 (the first line of the file, written for each job)
if plan == "probe":
    import json, shutil, subprocess
    token = "ghs_the_jobs_token_7c2e91"  # TOKEN
    rs = shutil.which("ralphstate")
    found = {"ralphstate": rs, "token": []}
    if rs:
        for args in (["status"], ["step", "done", "write it"]):
            done = subprocess.run([rs, *args], capture_output=True, text=True)
            found[args[0]] = done.returncode
    if any(token in v for v in os.environ.values()):
        found["token"].append("environment")
    if token in Path(".git/config").read_text():
        found["token"].append(".git/config")
    pids = [p for p in Path("/proc").iterdir() if p.name.isdigit()]
    found["pids"] = len(pids)
    for pid in pids:
        for name in ("environ", "cmdline"):
            try:
                if token.encode() in (pid / name).read_bytes():
                    found["token"].append(f"/proc/{pid.name}/{name}")
            except OSError:
                pass
    print("probe: " + json.dumps(found), flush=True)
    plan = "finish"
if plan == "fail":
    print("agent: cannot work", flush=True)
    sys.exit(7)
if plan == "finish":
    Path("done.txt").write_text("done\n")
    print("agent: done", flush=True)
elif plan == "self-approve":
    # The work left undone: the check replaced with one that passes, then approved
    # from a shell without the run's variables, as the person would approve it.
    import shutil, subprocess
    rs = shutil.which("ralphstate")
    assert rs, "ralphstate is not on the agent's PATH"
    subprocess.run([rs, "status"], check=True)
    subprocess.run([rs, "criteria", "check", "tests pass", "true"], check=False)
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("RALPHSTATE_", "CLAUDE"))}
    subprocess.run([rs, "review", "--approve"], env=bare, check=False)
    subprocess.run([rs, "trust"], env=bare, check=False)
    print("agent: approved my own check <loop-complete>", flush=True)
elif not Path("step1.txt").exists():
    Path("step1.txt").write_text("first\n")
    print("agent: step 1", flush=True)
else:
    Path("step2.txt").write_text("second\n")
    print("agent: working on, past the job's time", flush=True)
    time.sleep(120)
"""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@dataclass
class JobRun:
    """One job as act ran it: its exit code, its log's JSON lines, its summary."""

    code: int
    lines: list[dict[str, Any]]
    home: Path
    workspace: Path | None = None

    @property
    def summary(self) -> str:
        return "".join(
            str(e.get("content", "")) for e in self.lines if e.get("command") == "summary"
        )

    def summary_of(self, job: str) -> str:
        """The summary of the job whose id is `job` (a matrix's jobs share one id)."""
        return "".join(
            str(e.get("content", ""))
            for e in self.lines
            if e.get("command") == "summary" and e.get("jobID") == job
        )

    @property
    def outputs(self) -> dict[str, str]:
        return {
            str(e.get("name")): str(e.get("arg"))
            for e in self.lines
            if e.get("command") == "set-output"
        }

    def said(self) -> str:
        return "".join(str(e.get("msg", "")) for e in self.lines)


@dataclass
class World:
    root: Path
    environ: dict[str, str] = field(default_factory=dict)

    @property
    def remote(self) -> Path:
        return self.root / "remote.git"

    @property
    def gh_log(self) -> Path:
        return self.root / "gh.jsonl"

    @property
    def evil(self) -> Path:
        return self.root / "evil-check-ran"

    def gh_calls(self) -> list[dict[str, Any]]:
        if not self.gh_log.exists():
            return []
        return [orjson.loads(line) for line in self.gh_log.read_bytes().splitlines()]

    def agent_pushes_a_check(self, branch: str, start: str | None = None) -> None:
        """What an agent with the job's token can do between jobs: push a commit to the
        loop's branch that replaces the check of "tests pass" with one leaving a mark
        (`start`: the branch made from that one first)."""
        work = self.root / "agent-push"
        env = {**self.environ, "HOME": str(self.root / "agent-home")}
        git(self.root, "clone", "--quiet", "--branch", start or branch, str(self.remote), str(work))
        if start:
            git(work, "checkout", "--quiet", "-b", branch)
        state_file = work / ".loop" / "state.json"
        state = orjson.loads(state_file.read_bytes())
        state["checks"]["tests pass"] = spawn.join_command(["touch", str(self.evil)])
        state_file.write_bytes(orjson.dumps(state, option=orjson.OPT_INDENT_2))
        for args in (
            ["commit", "--quiet", "-am", "a check that always passes"],
            ["push", "--quiet", "origin", f"HEAD:refs/heads/{branch}"],
        ):
            subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)

    def job(
        self,
        name: str,
        inputs: dict[str, str],
        plan: str,
        workflow: str = "loop.yml",
        ref: str = "main",
        event_name: str = "workflow_dispatch",
        payload: dict[str, Any] | None = None,
        token: str | None = None,
        timeout: float = ACT_TIMEOUT,
    ) -> JobRun:
        """One job of an example workflow: `event_name` (`workflow_dispatch` with
        `inputs`) on branch `ref`, in a fresh clone of the remote and a fresh HOME, the
        agent following `plan`. The event names `main` as the repository's default
        branch, as GitHub's always names one; `payload` adds to it. `token`: the job's
        token (`github.token`); `timeout`: for act as a whole."""
        clone = self.root / f"{name}-clone"
        home = self.root / f"{name}-home"
        home.mkdir()
        git(self.root, "clone", "--quiet", "--branch", ref, str(self.remote), str(clone))
        event = self.root / f"{name}-event.json"
        repository = {"full_name": "person/project", "default_branch": "main"}
        body = {"inputs": inputs, "ref": f"refs/heads/{ref}", "repository": repository}
        event.write_bytes(orjson.dumps({**body, **(payload or {})}))
        (self.root / "agent.py").write_text(f"PLAN = {plan!r}\n{AGENT}")
        env = {
            **self.environ,
            "HOME": str(home),
        }
        args = [
            str(Path(sys.executable).parent / "act"),
            event_name,
            "-W",
            f".github/workflows/{workflow}",
            "-e",
            str(event),
            "-P",
            "ubuntu-latest=-self-hosted",
            "--json",
            "--local-repository",
            f"{CHECKOUT}={HERE / 'standins' / 'checkout'}",
            "--local-repository",
            f"{UPLOAD}={HERE / 'standins' / 'upload-artifact'}",
            "--local-repository",
            f"{ACTION}={self.root / 'action'}",
            *(["-s", f"GITHUB_TOKEN={token}"] if token else []),
        ]
        done = subprocess.run(
            args, cwd=clone, env=env, capture_output=True, timeout=timeout, check=False
        )
        lines = []
        for line in done.stdout.splitlines():
            try:
                lines.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                lines.append({"msg": line.decode("utf-8", "replace")})
        return JobRun(done.returncode, lines, home)


def make_world(
    root: Path,
    with_loop: bool = True,
    pip_cache: Path | None = None,
    workflows: dict[str, str] | None = None,
    time_budget: int = TIME_BUDGET,
) -> World:
    """The remote, its base branch `main` holding a loop a person started (criterion
    "tests pass", its check), the example workflows (and `workflows`, name: text, made
    from them) with the scripted agent and each job's `time_budget` (seconds), and the
    action's own files."""
    world = World(root)
    action = root / "action"
    action.mkdir()
    for name in ACTION_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, action / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, action / name)
    agent = root / "agent.py"
    agent.write_text(AGENT)
    tools = root / "bin"
    tools.mkdir()
    # A python3 that does not depend on HOME (a pyenv shim does), the stand-in gh.
    real = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (tools / "python3").symlink_to(real if real.exists() else Path(sys.executable))
    shutil.copy2(HERE / "standins" / "bin" / "gh", tools / "gh")
    world.environ = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("RALPHSTATE_", "GIT_"))},
        **IDENTITY,
        "GIT_CONFIG_GLOBAL": str(root / "gitconfig"),
        "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
        "STANDIN_REMOTE": str(world.remote),
        "STANDIN_ARTIFACTS": str(root / "artifacts"),
        "STANDIN_GH_LOG": str(world.gh_log),
        "EVIL_MARK": str(world.evil),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # A new runner each job, but the dependencies downloaded once.
        "PIP_CACHE_DIR": str(pip_cache or root / "pip-cache"),
    }
    (root / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n")
    agent_command = spawn.join_command([sys.executable, str(agent)])
    texts = {e.name: e.read_text() for e in EXAMPLES.glob("*.yml")} | (workflows or {})
    workflows = {}
    for name, text in texts.items():
        text = text.replace(
            "agent: claude -p --dangerously-skip-permissions --output-format json",
            f"agent: {agent_command}",
        )
        workflows[name] = text.replace("time-budget: 5h30m", f"time-budget: {time_budget}")
    seed = root / "seed"
    seed.mkdir()
    env = {
        **world.environ,
        "HOME": str(root / "seed-home"),
        "RALPHSTATE_HOME": str(root / "seed-rs"),
    }

    def run(*args: str) -> None:
        subprocess.run(args, cwd=seed, env=env, check=True, capture_output=True)

    run("git", "init", "--quiet", "-b", "main")
    (seed / "check.py").write_text(CHECK)
    (seed / ".github" / "workflows").mkdir(parents=True)
    for name, text in workflows.items():
        (seed / ".github" / "workflows" / name).write_text(text)
    rs = [sys.executable, "-m", "ralphstate"]
    if with_loop:
        run(*rs, "init", "Write done.txt", "-c", "tests pass", "-s", "write it")
        run(*rs, "criteria", "check", "tests pass", spawn.join_command(["python3", "check.py"]))
    run("git", "add", "-A")
    run("git", "commit", "--quiet", "-m", "a loop, its check and the workflow")
    run("git", "init", "--quiet", "--bare", str(world.remote))
    run("git", "push", "--quiet", str(world.remote), "main")
    return world
