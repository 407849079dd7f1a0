"""One usage-limit wait for every loop of a repository on CI.

The loops of one repository usually share the model provider's key, so when one of
them hits the provider's usage limit, the others will too. A job whose run hits a limit
that says when it resets pushes that time to the remote (`refs/ralphstate/usage-limit`:
a commit whose message is the reset, as seconds since the epoch, and who found it); a
job of any loop that starts before the reset parks instead of starting its agent: it
waits for the reset when the reset falls within its time, else it ends at once as a job
whose time ran out does, and asks for the next one (docs/how-to/github-action.md, "A
hundred loops").
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from ralphstate.storage.system import children

REF = "refs/ralphstate/usage-limit"
HISTORY_TAIL = 64 * 1024  # of the loop's history read for its last limit
# A reset this close to the end of the job's time is not waited for.
MARGIN_SECONDS = 120.0
Git = Callable[..., children.Finished]


def _out(done: children.Finished) -> str:
    return done.out.decode("utf-8", "replace").strip()


def shared_reset(git: Git, root: Path, remote: str) -> float | None:
    """When the limit another job found resets (seconds since the epoch); None when no
    job found one, or it has passed."""
    local = "refs/ralphstate/seen-usage-limit"
    if git(root, "fetch", "--quiet", "--no-tags", remote, f"+{REF}:{local}").code != 0:
        return None
    first = _out(git(root, "log", "-1", "--format=%B", local)).split(" ", 1)[0]
    try:
        resets = float(first)
    except ValueError:
        return None
    return resets if resets > time.time() else None


def last_reset(history: Path) -> float | None:
    """The reset of the last usage or rate limit the loop's history records, when it
    says one and it has not passed."""
    try:
        with history.open("rb") as file:
            size = file.seek(0, 2)
            file.seek(max(0, size - HISTORY_TAIL))
            tail = file.read(HISTORY_TAIL)
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(event, dict) or event.get("event") != "limit":
            continue
        said = event.get("resetsAt")
        if not isinstance(said, str):
            return None
        try:
            at = dt.datetime.strptime(said, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
        except ValueError:
            return None
        resets = at.timestamp()
        return resets if resets > time.time() else None
    return None


def announce(git: Git, root: Path, remote: str, resets: float, who: str) -> bool:
    """Tell every job of the repository that the limit resets at `resets`; whether the
    remote took it (a later reset another job announced is kept)."""
    known = shared_reset(git, root, remote)
    if known is not None and known >= resets:
        return True
    tree = _out(git(root, "hash-object", "-t", "tree", "-w", "--stdin"))
    commit = _out(git(root, "commit-tree", tree, "-m", f"{resets:.0f} {who}"))
    if not commit:
        return False
    return git(root, "push", "--quiet", "--force", remote, f"{commit}:{REF}").code == 0


def words(resets: float) -> str:
    return dt.datetime.fromtimestamp(resets, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def park(resets: float, seconds_left: float, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Wait for the shared reset when it falls within the job's time; whether the job
    may go on (False: it ends now and the next job goes on)."""
    wait = resets - time.time()
    if wait > seconds_left - MARGIN_SECONDS:
        return False
    sleep(max(0.0, wait))
    return True
