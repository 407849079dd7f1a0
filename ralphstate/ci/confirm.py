"""On CI the person is the trusted branch: a loop the run ended complete is proved again,
by the job itself, against the trusted contract before the job says so.

Inside a job the agent runs as the job's user. It can change a check and approve the
change from a shell without the run's variables, or edit the runner's ledger and trust
store: nothing on the runner tells its approval from the person's. So no approval made
during the job counts. When `ralphstate run` ends complete, `ralphstate ci` puts the
trusted contract back (what the agent changed is said), approves it again as the base
commit holds it (the guarded tests too), and runs its checks itself in a clean room
(`verify/pipeline.py`, recorded `by: ci`). Only when every check passes and nothing had to
be put back does the job end complete; else the loop is paused for review, its record
committed and pushed, and the job fails saying why (docs/how-to/github-action.md, "Trust
on a runner"; SECURITY.md, promise 23).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralphstate.ci import trusted
from ralphstate.core import state as st
from ralphstate.core.text import visible
from ralphstate.storage.loopdir.store import Event
from ralphstate.storage.repo import git

REASON = "review"
FSCK_SECONDS = 600.0  # for `git fsck` of the repository's objects
GIT_SETTINGS = (
    "git's settings (its config in any scope, a `filter.*`, .git/info/attributes) are not"
    " as the job found them: a program they name (a filter, core.fsmonitor, gpg.program)"
    " would run, or rewrite what the clean room checks out, in the job's own proof"
)


@dataclass
class Confirmed:
    """What the job's own proof found: nothing when the loop is proved."""

    problems: list[str] = field(default_factory=list)

    @property
    def proved(self) -> bool:
        return not self.problems


def confirm(root: Path, contract: Any, source: str, base: str, settings: str | None) -> Confirmed:
    """Prove the loop at `root` complete against `contract` (from `source`, the commit
    `base`); pause it for review when it is not. `settings`: git's settings
    (`git_settings`) as the job found them before its agent ran."""
    from ralphstate.loop.project import locate

    store = locate(root)
    found = Confirmed()
    if git_settings(root) != settings:
        found.problems.append(f"the agent changed git's settings in the job: {GIT_SETTINGS}")
    found.problems += objects_problems(root)
    if found.problems:
        reopen(store, found.problems)
        return found
    for change in trusted.put_back(store, contract, source):
        found.problems.append(f"the agent changed what proves the loop in this job: {change}")
    trusted.approve(store, base)
    state = store.load()
    armed = [name for name in state["criteria"] if name in state["checks"]]
    found.problems += trusted.run_checks(store, armed, clean=None)[1]
    if found.problems:
        reopen(store, found.problems)
    return found


def git_settings(root: Path) -> str | None:
    """A fingerprint of git's settings at `root`: every config value in every scope
    (includes followed) with where it comes from, and the checkout settings
    (`git.checkout_settings`: the attributes files). The agent runs as the job's user
    and can change any of them; the job's own proof runs git after it. None outside a
    repository."""
    import hashlib

    checkout = git.checkout_settings(root)
    listed = git.run_git(["config", "--list", "--show-origin", "--includes", "-z"], root)
    if checkout is None or listed is None or listed.code not in (0, 1):
        return None
    return hashlib.sha256(checkout.encode() + b"\0" + listed.out_bytes).hexdigest()


def objects_problems(root: Path) -> list[str]:
    """What `git fsck` finds wrong in the repository's objects, as one problem: the
    agent can write .git/objects, and an object whose content is not what its id says
    (the base's test, or the code a clean room checks out) would prove other files than
    the ones named. [] when every object is what its id says."""
    checked = git.run_git(
        ["fsck", "--no-dangling", "--no-reflogs", "--no-progress"],
        root,
        timeout=FSCK_SECONDS,
    )
    if checked is not None and checked.ok:
        return []
    said = "" if checked is None else (checked.err.strip().splitlines() or [""])[0]
    detail = f" ({visible(said)[:200]})" if said else ""
    return [f"git's objects are not what their ids say (git fsck){detail}"]


def reopen(store: Any, problems: list[str]) -> None:
    """The loop the run called complete, paused for review, and its record committed."""

    def change(state: st.State, events: list[Event]) -> None:
        state["status"], state["pauseReason"] = "paused", REASON
        events.append({"event": "paused", "reason": REASON, "by": "ci", "why": problems})

    store.update(change)
    names = [".loop/state.json", ".loop/history.jsonl"]
    if git.run_git(["add", "--", *names], store.paths.root) is not None:
        subject = "ralphstate: the job's own proof failed; the loop waits for review"
        body = "\n".join(f"- {visible(p)}" for p in problems)
        git.run_git(
            ["commit", "--quiet", "-m", subject, "-m", body, "--", *names], store.paths.root
        )
