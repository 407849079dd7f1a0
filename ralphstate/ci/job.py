"""One job of a loop on CI (`ralphstate ci`): the loop's branch checked out, the trusted
contract put back and approved, `ralphstate run --commit` within the job's time
budget with each commit pushed as it is made, then the report, the outputs, and the
next job asked for when the time budget alone ended this one
(docs/how-to/github-action.md).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ralphstate.ci import confirm, github, limitshare, pushing, remotelock, trusted
from ralphstate.ci.pushing import OUTPUT_BYTES, Pusher, git, text
from ralphstate.core import budgets
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.storage.system import children, reaper

# What only the job itself uses, kept from the agent's environment: the token `gh` asks
# for the next job and tells the pull request with.
JOB_ONLY = ("GH_TOKEN", "GITHUB_TOKEN")
# Where the action names the variable that holds the agent's API key (action.yml): the
# confined agent gets it by name (`run --env`), as it gets no other of the job's.
SECRET_NAME_ENV = "SECRET_NAME"
# The least a job's run is given, whatever the time budget leaves.
LEAST_SECONDS = 1


@dataclass
class Job:
    """What the workflow (or the container's environment) asks of one job."""

    agent: str
    branch: str
    time_budget: float
    spec: str | None = None
    criteria: list[str] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    max_iterations: int | None = None
    max_cost: float | None = None
    max_tokens: int | None = None
    # The loop's own budgets, over every job (`maxCost`, `maxTokens`, `maxDuration`),
    # when the workflow gives them; else the base's.
    loop_budget: dict[str, Any] = field(default_factory=dict)
    remote: str = "origin"
    base: str | None = None  # the base branch: the pull request's, the dispatch's ref
    # The branch whose `.loop/state.json` proves the loop (the repository's default
    # branch on GitHub): read from the remote, whatever commit the job started on.
    trusted_branch: str | None = None
    next_job: bool = True
    workflow: str | None = None
    next_inputs: dict[str, str] = field(default_factory=dict)
    pull_request: bool = False
    report: Path | None = None


@dataclass
class Ended:
    """How the job ended, as its outputs say it."""

    outcome: str
    reason: str | None
    continues: bool
    result: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def ralphstate(root: Path, *args: str) -> children.Finished:
    """`ralphstate ARGS` in `root`, with this Python; its output captured."""
    argv = [sys.executable, "-m", "ralphstate", *args]
    return children.run(argv, cwd=root, timeout=None, limit=OUTPUT_BYTES)


def parse_time_budget(text: str) -> float:
    """Seconds from `5h30m`, `90m` or `3600`; RalphstateError for anything else."""
    seconds = budgets.parse_duration(text)
    if seconds is None or seconds <= 0:
        raise RalphstateError(f"{visible(text)} is not a time budget (say 5h30m, 90m or 3600).")
    return seconds


def switch_to_branch(root: Path, remote: str, branch: str) -> bool:
    """Check out `branch` as the remote holds it, or create it here from HEAD; whether
    it existed there."""
    valid = git(root, "check-ref-format", "--branch", branch)
    if valid.code != 0:
        raise RalphstateError(f"{visible(branch)} is not a valid branch name.")
    fetched = git(
        root, "fetch", "--quiet", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}"
    )
    args = ["checkout", "--quiet", "-B", branch]
    if fetched.code == 0:
        args.append(f"{remote}/{branch}")
    done = git(root, *args)
    if done.code != 0:
        raise RalphstateError(f"could not check out {visible(branch)}: {visible(text(done))}")
    return fetched.code == 0


def start_loop(root: Path, job: Job) -> None:
    """`ralphstate init` with the workflow's spec, criteria, steps and checks."""
    if not job.spec or not job.criteria:
        raise RalphstateError(
            "there is no loop on the branch or the base, and the workflow gives no spec and"
            " criteria to start one."
        )
    args = ["init", job.spec]
    for name in job.criteria:
        args += ["-c", name]
    for step in job.steps:
        args += ["-s", step]
    commands = [args] + [["criteria", "check", n, c] for n, c in job.checks.items()]
    for each in commands:
        done = ralphstate(root, *each)
        if done.code != 0:
            raise RalphstateError(visible(text(done)))


def trusted_contract(root: Path, job: Job, base_commit: str) -> tuple[Any, str]:
    """The contract that proves the loop done, and where it came from."""
    if job.criteria:
        found = trusted.from_inputs(job.criteria, job.checks, job.loop_budget)
        return found, "the workflow"
    committed = trusted.from_commit(root, base_commit)
    if committed is None:
        raise RalphstateError(
            f"the base commit {base_commit[:10]} holds no {trusted.STATE_PATH} and the workflow"
            " gives no criteria: nothing a person committed says what proves the loop done."
        )
    committed[trusted.BUDGET].update(job.loop_budget)
    where = f" on {visible(job.trusted_branch)}" if job.trusted_branch else ""
    return committed, f"{trusted.STATE_PATH}{where} at {base_commit[:10]}"


def run_args(job: Job, seconds: float) -> list[str]:
    """`ralphstate run`'s arguments for this job, `seconds` left of its time."""
    args = ["run", "--agent", job.agent, "--commit", "--json"]
    args += ["--max-duration", str(max(LEAST_SECONDS, int(seconds)))]
    for option, value in (
        ("--max", job.max_iterations),
        ("--max-cost", job.max_cost),
        ("--max-tokens", job.max_tokens),
    ):
        if value is not None:
            args += [option, str(value)]
    secret = os.environ.get(SECRET_NAME_ENV, "").strip()
    if secret:
        args += ["--env", secret]
    return args


@contextlib.contextmanager
def forwarded_interrupts(child: subprocess.Popen[bytes]) -> Iterator[None]:
    """A job cancelled (SIGINT, then SIGTERM from the runner) stops the run as Ctrl-C
    does: the iteration recorded, the loop paused, its record committed and pushed."""

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            child.send_signal(signal.SIGINT)

    before = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def continues(result: Mapping[str, Any]) -> bool:
    """Whether the run stopped only because this job's time ran out: paused on a budget
    of this run's, and that budget its duration."""
    return (
        result.get("outcome") == "paused"
        and result.get("reason") == "budget"
        and result.get("budget") == budgets.RUNS
        and str(result.get("detail") or "").startswith("duration")
    )


def run_loop(root: Path, job: Job, started: float) -> tuple[dict[str, Any], Pusher]:
    """`ralphstate run` with the time the budget leaves; its `--json` object."""
    left = job.time_budget - (time.monotonic() - started)
    argv = [sys.executable, "-m", "ralphstate", *run_args(job, left)]
    env = {k: v for k, v in os.environ.items() if k not in JOB_ONLY}
    # The agent's own `ralphstate` (steps, status, pause): the one this job runs.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    reaper.become()  # the agent's orphans stay below this process
    with Pusher(root, job.remote, job.branch) as pusher:
        # The run's progress and the agent's output go to the job's log (stderr); its
        # one JSON object comes on stdout.
        child = children.start(
            argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=sys.stderr.fileno()
        )
        with forwarded_interrupts(child):
            assert child.stdout is not None
            out = child.stdout.read()
            code = child.wait()
    # What the agent left running (a new session, a double fork) is ended before the
    # job's own proof reads the checkout and the runner's records (ci/confirm.py).
    reaper.end_descendants()
    try:
        result = orjson.loads(out)
    except orjson.JSONDecodeError:
        result = None
    if not isinstance(result, dict):
        result = {"outcome": "error", "reason": None, "exitCode": code or 1}
    return result, pusher


def trusted_commit(root: Path, job: Job) -> str:
    """The commit whose contract proves the loop: the trusted branch's head as the
    remote holds it, or, with no trusted branch (a container a person started on the
    base's checkout), the commit the job started on."""
    return pushing.trusted_commit(root, job.remote, job.trusted_branch, job.branch)


@dataclass
class Prepared:
    """What proves the loop on this job: the trusted contract, where it came from (one
    phrase), the commit it came from; and what was put back, one sentence each."""

    contract: Any
    source: str
    base: str
    notes: list[str]
    settings: str | None = None  # git's settings before the agent ran (confirm.py)


def prepare(root: Path, job: Job) -> Prepared:
    """The branch checked out, the loop found or started, its contract the trusted one
    and approved."""
    from ralphstate.loop.project import locate

    head = trusted_commit(root, job)
    contract, source = trusted_contract(root, job, head)
    switch_to_branch(root, job.remote, job.branch)
    if not (root / trusted.STATE_PATH).exists():
        start_loop(root, job)
    store = locate(root)
    put_back = trusted.put_back(store, contract, source)
    trusted.approve(store, head)
    notes = [
        f"The loop's branch changed what proves it done; {source} was put back: {d}."
        for d in put_back
    ]
    return Prepared(contract, source, head, notes, confirm.git_settings(root))


def run_job(root: Path, job: Job, environ: Mapping[str, str]) -> Ended:
    """One job, from checkout to the next job's dispatch, holding the loop's lock on
    the remote (ci/remotelock.py) throughout."""
    try:
        github.refuse_forks(environ)
    except RalphstateError as exc:  # said where a person looks too, not only in the log
        github.add_summary(f"## ralphstate: refused\n\n{exc}", environ)
        raise
    who = remotelock.holder(environ)
    lock = remotelock.take(git, root, job.remote, job.branch, job.time_budget, who)
    try:
        return _run_job(root, job, environ)
    finally:
        remotelock.release(git, root, job.remote, lock)


def _run_job(root: Path, job: Job, environ: Mapping[str, str]) -> Ended:
    started = time.monotonic()
    notes = [note for note in [github.started_by(environ)] if note]
    prepared = prepare(root, job)
    notes += prepared.notes
    parked = shared_limit(root, job, started)
    if parked:
        notes.append(parked)
        result: dict[str, Any] = {"outcome": "paused", "reason": "limit", "exitCode": 3}
        return end(root, job, environ, Ended("paused", "limit", False, result, notes))
    result, pusher = run_loop(root, job, started)
    # Only a run that itself ended on the limit tells the others: a `limit` line the
    # agent appended to the history would park every loop of the repository.
    resets = None
    if result.get("reason") == "limit":
        resets = limitshare.last_reset(root / ".loop" / "history.jsonl")
    if resets is not None:
        who = remotelock.holder(environ)
        if limitshare.announce(git, root, job.remote, resets, who):
            notes.append(
                f"The model's usage limit, which resets at {limitshare.words(resets)},"
                " is told to every other job of this repository."
            )
    if result.get("outcome") == "complete":
        found = confirm.confirm(
            root, prepared.contract, prepared.source, prepared.base, prepared.settings
        )
        if not found.proved:
            result = {**result, "outcome": "paused", "reason": confirm.REASON, "exitCode": 3}
            notes += [f"Not complete: {p}." for p in found.problems]
            pusher.push()
    if pusher.failed:
        notes.append(f"The branch could not be pushed: {visible(pusher.failed)}")
    ended = Ended(
        str(result.get("outcome")), result.get("reason"), continues(result), result, notes
    )
    return end(root, job, environ, ended, pusher)


def shared_limit(root: Path, job: Job, started: float) -> str | None:
    """Park this job while the usage limit another job found lasts (ci/limitshare.py):
    None once it may run, else the sentence that ends it."""
    resets = limitshare.shared_reset(git, root, job.remote)
    if resets is None:
        return None
    left = job.time_budget - (time.monotonic() - started)
    if limitshare.park(resets, left):
        return None
    return (
        f"Another job found the model's usage limit, which resets at"
        f" {limitshare.words(resets)}, after this job's time: the agent was not started,"
        " and no next job is asked for. Start the workflow again after the reset."
    )


def end(
    root: Path, job: Job, environ: Mapping[str, str], ended: Ended, pusher: Pusher | None = None
) -> Ended:
    """The job's ending: the report, the next job or the pull request, the summary and
    the outputs."""
    report = write_report(root, job)
    failed = pusher is not None and pusher.failed
    if ended.continues and job.next_job and not failed:
        ended.continues, note = ask_next_job(root, job, environ)
        ended.notes.append(note)
    elif ended.continues:
        ended.continues = False
        ended.notes.append("The job's time ran out; no next job was asked for.")
    elif job.pull_request and job.base:
        title = f"ralphstate: {job.spec or job.branch}"
        said = github.tell_pull_request(root, job.branch, job.base, title, report)
        ended.notes.append(f"Pull request: {visible(said)}.")
    github.add_summary(summary(ended, report), environ)
    github.set_outputs(outputs(root, ended, report), environ)
    return ended


def ask_next_job(root: Path, job: Job, environ: Mapping[str, str]) -> tuple[bool, str]:
    """Dispatch the next job of the workflow on the base with this job's inputs (and
    `next_inputs` over them): whether it was asked for, and the sentence that says so."""
    workflow = github.workflow_name(job.workflow, environ)
    ref = job.base or environ.get("GITHUB_REF_NAME") or ""
    if not workflow or not ref:
        return False, "The job's time ran out, and no workflow or ref names the next job."
    inputs = {**github.event_inputs(environ), **job.next_inputs}
    ok, said = github.dispatch(root, workflow, ref, inputs)
    if ok:
        return True, f"The job's time ran out: the next job of {visible(workflow)} goes on."
    return (
        False,
        f"The job's time ran out, and the next job could not be asked for: {visible(said)}",
    )


def write_report(root: Path, job: Job) -> Path:
    """`ralphstate report --markdown` into the report's file (a sentence when it fails)."""
    target = job.report or root / ".loop" / "runs" / "report.md"
    done = ralphstate(root, "report", "--markdown", "-o", str(target))
    if done.code != 0:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"The report could not be written: {text(done)}\n", encoding="utf-8")
    return target


def loop_figures(root: Path) -> dict[str, Any]:
    """The loop's state as the run left it, for the outputs ({} when it cannot be read)."""
    try:
        state: dict[str, Any] = orjson.loads((root / trusted.STATE_PATH).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return state


def outputs(root: Path, ended: Ended, report: Path) -> dict[str, str]:
    """The step's outputs, as action.yml names them."""
    state = loop_figures(root)
    criteria = ended.result.get("criteria") or {}
    usage = state.get("usage") or {}
    return {
        "outcome": ended.outcome,
        "reason": str(ended.reason or ""),
        "iterations": str(state.get("iteration", "")),
        "cost": str(usage.get("cost", "")) if isinstance(usage, dict) else "",
        "criteria-met": f"{criteria.get('met', '')}/{criteria.get('total', '')}",
        "report": str(report),
        "continues": "true" if ended.continues else "false",
    }


def summary(ended: Ended, report: Path) -> str:
    """The job's summary: how it ended and what the job did, then the report."""
    head = ended.outcome + (f" ({ended.reason})" if ended.reason else "")
    lines = [f"## ralphstate: {head}", ""]
    lines += [f"- {note}" for note in ended.notes]
    try:
        body = report.read_text(encoding="utf-8")
    except OSError:
        body = ""
    return "\n".join([*lines, "", body])
