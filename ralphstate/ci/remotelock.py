"""One job per loop: a lock `ralphstate ci` takes on the remote before it runs a loop.

The workflows' concurrency group keeps a second job of one loop waiting, but a job
started some other way (another workflow, a container, a person's `ralphstate ci`) would
run beside it, and two runs pushing one branch lose each other's iterations. So each job
pushes a ref of its own, `refs/ralphstate/locks/BRANCH`, with a lease that says it must
not exist yet; a second job finds it there and stops with one sentence before anything
of the loop runs. The ref points to a commit whose message says which job holds it and
until when; a lock past that time (its job was killed without letting go) is taken over,
with a lease on the old one so that two jobs cannot both take it over. The job lets go
when it ends, with a lease on its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.storage.system import children

PREFIX = "refs/ralphstate/locks/"
# How long past its own time budget a lock is honoured: the runner's grace period and
# the job's ending (report, push, pull request) fit well inside it.
GRACE_SECONDS = 15 * 60
Git = Callable[..., children.Finished]


@dataclass
class Lock:
    """A lock this job holds on the remote."""

    ref: str
    commit: str


def ref_of(branch: str) -> str:
    return PREFIX + branch


def holder(environ: Mapping[str, str]) -> str:
    """This job as the lock names it: the run and job on Actions, else the host and pid."""
    if environ.get("GITHUB_RUN_ID"):
        run = environ["GITHUB_RUN_ID"]
        return f"GitHub Actions run {run}, job {environ.get('GITHUB_JOB', '?')}"
    import socket

    return f"{socket.gethostname()}, process {os.getpid()}"


def _out(done: children.Finished) -> str:
    return done.out.decode("utf-8", "replace").strip()


def _held_until(git: Git, root: Path, remote: str, ref: str) -> tuple[str, float, str] | None:
    """The lock on the remote: (its commit, until when, who holds it); None when free."""
    listed = git(root, "ls-remote", remote, ref)
    line = _out(listed).split("\n", 1)[0]
    if listed.code != 0 or not line:
        return None
    commit = line.split()[0]
    local = "refs/ralphstate/seen-lock"
    if git(root, "fetch", "--quiet", "--no-tags", remote, f"+{ref}:{local}").code != 0:
        return commit, float("inf"), "a job ralphstate cannot read"
    message = _out(git(root, "log", "-1", "--format=%B", local))
    until, _, who = message.partition(" ")
    try:
        return commit, float(until), who.strip() or "another job"
    except ValueError:
        return commit, float("inf"), "another job"


def take(git: Git, root: Path, remote: str, branch: str, seconds: float, who: str) -> Lock:
    """Take the loop's lock on `remote` for `seconds` (the job's time budget); one
    sentence (RalphstateError) when another job holds it."""
    ref = ref_of(branch)
    until = time.time() + seconds + GRACE_SECONDS
    tree = _out(git(root, "hash-object", "-t", "tree", "-w", "--stdin"))
    made = git(root, "commit-tree", tree, "-m", f"{until:.0f} {who}")
    commit = _out(made)
    if made.code != 0 or not commit:
        raise RalphstateError("could not make the loop's lock: git commit-tree failed.")
    expected = ""
    held = _held_until(git, root, remote, ref)
    if held is not None:
        old, old_until, old_who = held
        if old_until > time.time():
            raise RalphstateError(
                f"another job runs this loop ({visible(old_who)}); one loop runs in one job"
                f" at a time. This job stopped before anything ran (the lock: {ref})."
            )
        expected = old
    lease = f"--force-with-lease={ref}:{expected}"
    pushed = git(root, "push", "--quiet", lease, remote, f"{commit}:{ref}")
    if pushed.code != 0:
        raise RalphstateError(
            "another job took this loop's lock at the same moment; one loop runs in one job"
            f" at a time. This job stopped before anything ran (the lock: {ref})."
        )
    return Lock(ref, commit)


def release(git: Git, root: Path, remote: str, lock: Lock) -> bool:
    """Let go of `lock`, only if it is still this job's; whether it was let go."""
    lease = f"--force-with-lease={lock.ref}:{lock.commit}"
    return git(root, "push", "--quiet", lease, remote, f":{lock.ref}").code == 0
