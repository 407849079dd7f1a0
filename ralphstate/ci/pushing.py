"""ralphstate's own git on a job: the job's token given to that git alone, and the
loop's branch pushed whenever its head moves while the run goes on (`ralphstate ci`,
ci/job.py)."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.storage.repo import gitenv
from ralphstate.storage.system import children

PUSH_EVERY = 2.0  # seconds between looks at the branch's head while the run goes on
PUSH_TIMEOUT = 120.0
OUTPUT_BYTES = 1 << 20  # of a command's output kept


def credentials(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """What ralphstate's own git is given to fetch and push on GitHub: the job's token
    as an HTTP header, in git's environment only, never in `.git/config` (the workflows
    check out with `persist-credentials: false`) and never in the agent's environment."""
    token = environ.get("GH_TOKEN") or environ.get("GITHUB_TOKEN")
    server = environ.get("GITHUB_SERVER_URL") or "https://github.com"
    if not token or not server.startswith("https://"):
        return []
    import base64

    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return [(f"http.{server.rstrip('/')}/.extraheader", f"AUTHORIZATION: basic {basic}")]


# What a job's git may reach, over the safe environment of every git of ralphstate's
# (storage/repo/gitenv.py, which allows no transport): the remote, over https, ssh or a
# path, with ssh itself as the ssh command whatever `.git/config` names.
_TRANSPORTS = (
    ("protocol.https.allow", "always"),
    ("protocol.ssh.allow", "always"),
    ("protocol.file.allow", "always"),
    ("core.sshCommand", "ssh"),
)


def git(root: Path, *args: str, timeout: float = PUSH_TIMEOUT) -> children.Finished:
    """`git ARGS` in `root`: ralphstate's safe git, allowed to reach the remote, with the
    job's credentials."""
    env = gitenv.safe_env(gitenv.git_env(), root, timeout)
    given = int(env.get("GIT_CONFIG_COUNT", "0"))
    pairs = [*_TRANSPORTS, *credentials(os.environ)]
    for number, (key, value) in enumerate(pairs, given):
        env[f"GIT_CONFIG_KEY_{number}"], env[f"GIT_CONFIG_VALUE_{number}"] = key, value
    env["GIT_CONFIG_COUNT"] = str(given + len(pairs))
    return children.run(["git", *args], cwd=root, env=env, timeout=timeout, limit=OUTPUT_BYTES)


def text(done: children.Finished) -> str:
    """What a command said on stderr, as one stripped text."""
    return done.err.decode("utf-8", "replace").strip()


def stdout(done: children.Finished) -> str:
    return done.out.decode("utf-8", "replace").strip()


class Pusher:
    """Pushes the branch whenever its head moves, while the run goes on, so a job
    cancelled midway loses at most the iteration under way."""

    def __init__(self, root: Path, remote: str, branch: str) -> None:
        self.root = root
        self.remote = remote
        self.branch = branch
        self.pushed: str | None = None
        self.failed: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Pusher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.push()

    def _watch(self) -> None:
        while not self._stop.wait(PUSH_EVERY):
            self.push()

    def push(self) -> None:
        head = stdout(git(self.root, "rev-parse", "HEAD"))
        if not head or head == self.pushed:
            return
        done = git(self.root, "push", "--quiet", self.remote, f"{head}:refs/heads/{self.branch}")
        if done.code == 0:
            self.pushed = head
            self.failed = None
        else:
            self.failed = text(done) or f"git push ended with {done.code}"


def trusted_commit(root: Path, remote: str, trusted: str | None, loop_branch: str | None) -> str:
    """The commit whose contract proves the loop: the head of the `trusted` branch as
    `remote` holds it, fetched whatever is checked out; with no trusted branch (a
    container a person started on the base's checkout), HEAD."""
    if not trusted:
        head = stdout(git(root, "rev-parse", "HEAD"))
        if not head:
            raise RalphstateError(f"{root} is not a git checkout with a commit.")
        return head
    if trusted == loop_branch:
        raise RalphstateError(
            f"the loop's branch {visible(trusted)} cannot be the branch that proves it: the"
            " agent writes it. Name the default branch (trusted-branch)."
        )
    if git(root, "check-ref-format", "--branch", trusted).code != 0:
        raise RalphstateError(f"{visible(trusted)} is not a valid branch name.")
    ref = f"refs/ralphstate/trusted/{trusted}"
    fetched = git(root, "fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{trusted}:{ref}")
    if fetched.code != 0:
        raise RalphstateError(
            f"could not read the trusted branch {visible(trusted)} from {visible(remote)}:"
            f" {visible(text(fetched)) or 'git fetch failed'}."
        )
    return stdout(git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"))
