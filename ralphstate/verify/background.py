"""The Stop hook's own verification of checks longer than a stop may spend, run in the
background (docs/explanation/hooks.md, "Long test suites"; docs/explanation/proof.md,
"Levels of a pass").

    job = background.current(store, state)     # the job for this code and contract
    background.settle(store, state, found, job, by="stop", wait=5.0)

A pass counts only when ralphstate's own verification produced it, so a check that
does not fit a hook's budget (`verifyBudget`) is not left to the agent's `ralphstate
verify`: the hook starts the same sealed verification in a process of its own, apart
from the client's (a session of its own, its output on the null device), and keeps
the stop blocked while it runs. The job is kept in the per-user data directory
(`background/<the ledger's name>.json`): the criteria, what the code and the checks
were when it started (`identity`: the loop, the commands, the tree the work tree held,
the approved contract and guarded files), its process, and a nonce. The hook hands the
nonce to the process on its stdin, never in its arguments; the process runs the
checks only when the job holds that nonce, and writes what they found beside the job
(`background/<name>.result.json`) under it, only when each clean room it made held the
code the job was started on (`_ran_on`). A later stop takes a result only when its
nonce is the job's and the identity is still the code's: a change of the code or the
checks starts the verification again, and a result that was not written for the job
it finds is never read as one.

Nothing the agent runs starts or feeds it: `ralphstate verify`, even `--clean`, never
writes a job or a result, and a file in the project is never read as either. The
per-user data directory is the agent's user's, as the ledger is (SECURITY.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ralphstate.core import state as st
from ralphstate.core import verifyplan
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import home, ledger
from ralphstate.storage.repo import filestamp, git
from ralphstate.storage.system import children, fsio, paths
from ralphstate.verify import onecheck, pipeline

# How often a stop looks whether the job it waits for has written its result.
POLL = 0.1
# The most bytes a job or result file may hold (the outputs' tails are bounded).
MAX_BYTES = 8 * 1024 * 1024
# How many times a job that ended without a result is started again on the same code.
MAX_TRIES = 3


@dataclasses.dataclass
class Job:
    """A background verification: its criteria, the identity of the code and checks it
    runs on, its nonce, the process's id (its session's) and when it started."""

    criteria: list[str]
    identity: str
    nonce: str
    pid: int
    started: float
    by: str = "stop"
    # The most seconds its checks may take, by their own limits: past it, a process
    # that cannot be asked (Windows) is taken to have ended.
    limit: float = 0.0
    # How many jobs in a row were started on this identity (one that ended without a
    # result is started again, at most MAX_TRIES times).
    tries: int = 1


def job_path(loop: paths.LoopPaths) -> Path:
    return home.data_dir() / "background" / f"{home.ledger_path(loop.dir).stem}.json"


def result_path(loop: paths.LoopPaths) -> Path:
    return job_path(loop).with_suffix(".result.json")


def identity(loop: paths.LoopPaths, state: st.State, tree: str | None = None) -> str:
    """What the code and the checks are now (or with the work tree holding `tree`): a
    job started on another identity proves nothing of this one."""
    if tree is None:
        code = git.snapshot(loop)
        tree = code.tree if code else filestamp.stamp(loop)
    entry = ledger.of_loop(loop, state) or {}
    facts = {
        "loop": state["loopId"],
        "checks": state["checks"],
        "timeouts": state["checkTimeouts"],
        "clean": state["cleanVerify"],
        "tree": tree,
        "approved": entry.get("approved"),
        "guards": entry.get("guardTree"),
    }
    return hashlib.sha256(orjson.dumps(facts, option=orjson.OPT_SORT_KEYS)).hexdigest()


def current(store: Store, state: st.State) -> Job | None:
    """The job started on the code and checks as they are now; None when there is none
    (or the one kept is of other code: it is stopped)."""
    job = kept(store.paths)
    if job is None:
        return None
    if job.identity != identity(store.paths, state):
        _stop(job)
        return None
    return job


def running_for(job: Job) -> float:
    """The seconds since `job` started."""
    return max(0.0, time.time() - job.started)


def taken(store: Store, job: Job, wait: float = 0.0) -> list[onecheck.CheckResult] | None:
    """The results `job` wrote, waiting up to `wait` seconds for them while its process
    runs; None while it runs (or, once its process ended with none, nothing will come:
    `ended` says so)."""
    deadline = time.monotonic() + wait
    while True:
        found = _read_result(store.paths, job)
        if found is not None or not _alive(job) or time.monotonic() >= deadline:
            return found
        time.sleep(POLL)


def ended(job: Job) -> bool:
    """Whether the job's process is gone (with or without a result)."""
    return not _alive(job)


def start(store: Store, state: st.State, names: Sequence[str], by: str = "stop") -> Job:
    """Start the background verification of `names`' checks; RalphstateError when its
    process cannot be started or its job cannot be kept, or when MAX_TRIES jobs in a
    row on this code ended without a result."""
    old = kept(store.paths)
    now = identity(store.paths, state)
    tries = 1
    if old is not None:
        if old.identity == now and not _alive(old):
            tries = old.tries + 1
        _stop(old)
    if tries > MAX_TRIES:
        raise RalphstateError(
            f"the background verification of the checks ended {MAX_TRIES} times without a"
            f" result; `ralphstate verify` runs them where you can see why"
        )
    nonce = secrets.token_hex(32)
    limit = sum(verifyplan.limit(state, c) for c in names if c in state["checks"])
    job = Job(list(names), now, nonce, 0, time.time(), by, limit, tries)
    program = [sys.executable, "-I", "-c", "from ralphstate.verify.background import main; main()"]
    with contextlib.suppress(FileNotFoundError):
        result_path(store.paths).unlink()
    try:
        child = children.start(
            [*program, str(store.paths.dir)], cwd=store.paths.root, stdin=subprocess.PIPE
        )
    except OSError as exc:
        raise RalphstateError(f"the background verification could not start ({exc})") from None
    job.pid = child.pid
    _write(job_path(store.paths), dataclasses.asdict(job))
    try:  # the nonce, once the job that holds it is kept
        assert child.stdin is not None
        child.stdin.write(nonce.encode() + b"\n")
        child.stdin.close()
    except OSError:
        pass
    return job


def main() -> None:
    """The background verification's process: `python -I -c ... LOOP_DIR`, the nonce on
    stdin. Runs the job's checks only when the job kept holds that nonce."""
    nonce = sys.stdin.readline().strip()
    loop = paths.at(sys.argv[1])
    store = Store(loop)
    job = kept(loop)
    if job is None or not nonce or not secrets.compare_digest(job.nonce, nonce):
        return
    state = store.load()
    names = [n for n in job.criteria if n in state["checks"]]
    ask = pipeline.Ask(names, job.by, clean=None, record=False)  # the ledger judges firsts
    try:
        with onecheck.terminate_as_interrupt():  # stopped: its checks are killed with it
            results = pipeline.verify(store, ask).results
    except (KeyboardInterrupt, pipeline.Untrusted):
        return
    if not _ran_on(loop, state, job, results):  # no result: a stop starts it again
        return
    records = [_as_record(r) for r in results]
    _write(result_path(loop), {"nonce": nonce, "identity": job.identity, "results": records})


def _ran_on(
    loop: paths.LoopPaths, state: st.State, job: Job, results: list[onecheck.CheckResult]
) -> bool:
    """Whether each check that ran in a clean room ran on the code the job was started
    on: the room is made from the work tree as it is then, and code swapped in before
    it was made (and back before the next stop) would pass for the job's."""
    trees = {r.code.tree for r in results if r.clean_tree is not None and r.code is not None}
    return all(identity(loop, state, tree) == job.identity for tree in trees)


def _as_record(result: onecheck.CheckResult) -> dict[str, Any]:
    return dataclasses.asdict(result)


def _from_record(raw: dict[str, Any]) -> onecheck.CheckResult:
    known = {f.name for f in dataclasses.fields(onecheck.CheckResult)}
    values = {k: v for k, v in raw.items() if k in known}
    code = values.get("code")
    values["code"] = git.Snapshot(**code) if isinstance(code, dict) else None
    return onecheck.CheckResult(**values)


def kept(loop: paths.LoopPaths) -> Job | None:
    """The job kept for the loop, whatever code it was started on; None without one,
    or when the file does not hold a job (a field missing, unknown or of a wrong type)."""
    raw = _read(job_path(loop))
    try:
        job = Job(**raw) if raw is not None else None
    except TypeError:
        return None
    return job if job is not None and _well_formed(job) else None


def _well_formed(job: Job) -> bool:
    def number(value: object, kinds: tuple[type, ...] = (int, float)) -> bool:
        return isinstance(value, kinds) and not isinstance(value, bool)

    return (
        isinstance(job.criteria, list)
        and all(isinstance(c, str) for c in job.criteria)
        and all(isinstance(v, str) for v in (job.identity, job.nonce, job.by))
        and all(number(v, (int,)) for v in (job.pid, job.tries))
        and all(number(v) for v in (job.started, job.limit))
    )


def _read_result(loop: paths.LoopPaths, job: Job) -> list[onecheck.CheckResult] | None:
    """The job's results: only from a result written under its nonce, on its identity."""
    raw = _read(result_path(loop))
    if raw is None or not isinstance(raw.get("nonce"), str):
        return None
    if not secrets.compare_digest(raw["nonce"], job.nonce) or raw.get("identity") != job.identity:
        return None
    try:
        return [_from_record(r) for r in raw.get("results", [])]
    except (TypeError, ValueError):
        return None


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = fsio.read_regular(path, MAX_BYTES)
        found = orjson.loads(data)
    except (OSError, ValueError, home.NoHome):
        return None
    return found if isinstance(found, dict) else None


def _write(path: Path, data: dict[str, Any]) -> None:
    try:
        fsio.makedirs(path.parent)
        fsio.atomic_write(path, orjson.dumps(data), mode=0o600)
    except OSError as exc:
        raise RalphstateError(f"could not write {path} ({exc.strerror or exc})") from None


def _alive(job: Job) -> bool:
    if job.pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - no group to ask, and os.kill kills
        return running_for(job) < job.limit
    return children.group_alive(job.pid)


def _stop(job: Job) -> None:
    """Stop a job started on other code: its result would prove nothing now."""
    if sys.platform == "win32" or job.pid <= 0 or not _alive(job):
        return
    import signal

    with contextlib.suppress(OSError):
        os.killpg(job.pid, signal.SIGTERM)
