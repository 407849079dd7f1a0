"""What `ralphstate status` shows, gathered into one value, `views.StatusFacts`, as
the Stop hook gathers `decide.StopFacts`: the steps as the task file has them now,
whether this machine knows the loop, the proof's standing, the tree the work tree
holds, how the last run was confined; and, for the view, whether the checks are
trusted here, the guarded files, the criteria already true, which loop the hooks see
and whether any hook enforces it. git runs only when it matters."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ralphstate.core import limits, queries, redgreen
from ralphstate.core import state as st
from ralphstate.core.views import StatusFacts
from ralphstate.loop import enforcement, gateoff, proofreview, taskfile
from ralphstate.loop.project import hooks_view
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import ledger, registry, truststore
from ralphstate.storage.repo import testfiles


def gather(store: Store, cwd: Path, *, view: bool = True) -> tuple[st.State, StatusFacts]:
    """The loop's state as `status` shows it, and the facts beside it; without `view`,
    only those `status --json` prints (`as_json`)."""
    state, problem = _synced(store)
    ledger.disown_grades(store.paths, state)  # a verdict written by hand is not graded
    tree, in_git = _code(store, state)
    proof = proofreview.summary(store, state)
    facts = StatusFacts(
        str(store.paths.root),
        tree=tree,
        in_git=in_git,
        known_here=registry.knows(store.paths, state),
        proof=proof,
        last_run_sandbox=_last_run_sandbox(store),
        task_file_problem=problem,
    )
    if not view:
        return state, facts
    running = state["status"] in ("in_progress", "paused")
    return state, dataclasses.replace(
        facts,
        trusted=truststore.is_trusted(store.paths, state),
        guarded=testfiles.status_line(store.paths.root, state["guards"]),
        already=tuple(redgreen.already_true(state, ledger.of_loop(store.paths, state))),
        proof_said=(*proofreview.summary_lines(proof), *_unproven(store, state)),
        hooks_view=hooks_view(cwd),  # in a subdirectory: which loop the hooks see
        unenforced=_unenforced(store, state) if running else None,
        handed=_handed(store, state) if running and state["sessionId"] else None,
    )


def as_json(state: st.State, facts: StatusFacts) -> dict[str, Any]:
    """`status --json`: the normalised state, with knownHere, proof, staleEvidence,
    standing and,
    when the last run had a sandbox mode, lastRunSandbox."""
    boxed = {} if facts.last_run_sandbox is None else {"lastRunSandbox": facts.last_run_sandbox}
    return {
        **state,
        "knownHere": facts.known_here,
        "proof": facts.proof,
        "staleEvidence": queries.stale(state, facts.tree),
        # what backs each criterion: verified, graded (by a reviewer), claimed, ...
        "standing": {c: queries.standing(state, c) for c in state["criteria"]},
        **boxed,
    }


def _synced(store: Store) -> tuple[st.State, str | None]:
    """The state with the steps as its task file has them now, and why that file
    cannot be read (then no steps are shown: nothing stale)."""
    state = store.load()
    if not state["tasksFile"]:
        return state, None
    try:
        taskfile.sync(state, store.paths.root)
    except taskfile.TaskFileError as exc:
        problem = (
            f"{exc} The loop's steps are its boxes, so none are shown until it can be read again."
        )
        shown = st.State(**state)  # a copy: the file keeps its steps
        st.set_steps(shown, [], [])
        return shown, problem
    return state, None


def _unenforced(store: Store, state: st.State) -> str | None:
    """The line said when no agent's hook will enforce the loop (`loop.enforcement`),
    since when and by what file when hooks enforced it once (`loop.gateoff`)."""
    said = gateoff.no_longer(store.paths, state)
    if said is not None:
        return said.removeprefix("ralphstate: ")
    return enforcement.for_loop(str(store.paths.root), str(store.paths.dir)) or None


def _code(store: Store, state: st.State) -> tuple[str | None, bool | None]:
    """The tree the work tree holds (None: not known, or no evidence names a tree), and
    whether the loop is in a git repository (None: no checks, not asked); git runs only
    when it matters."""
    has_checks = any(c in state["checks"] for c in state["criteria"])
    if not has_checks and not any(e.get("tree") for e in state["evidence"].values()):
        return None, None
    from ralphstate.storage.repo import git  # and so subprocess: only when git must answer

    if any(e.get("tree") for e in state["evidence"].values()):
        code = git.snapshot(store.paths)
        if code is None:  # the evidence was taken in git: a failed snapshot is unknown
            return queries.UNKNOWN_TREE, True
        return code.tree, True
    return None, (git.toplevel(store.paths.root) is not None) if has_checks else None


def _last_run_sandbox(store: Store) -> str | None:
    """How the newest `ralphstate run` in the loop's recent history confined its agent,
    read from the history alone (so `status` imports no sandbox); None when no run
    there was given a sandbox mode."""
    for entry in reversed(store.history(limits.MAX_LOG_LINES)):
        if entry.get("event") == "run_started":
            how = entry.get("sandbox")
            return how.splitlines()[0][:80] if isinstance(how, str) and how.strip() else None
    return None


def _unproven(store: Store, state: st.State) -> list[str]:
    """The sentence for a trust record of these very checks that counts as none."""
    from ralphstate.storage.peruser import truststore

    if not truststore.unproven(store.paths, state):
        return []
    said = (
        "the record trusting these checks counts as none: it does not show that a person"
        " was there (an agent's, a library call's, one written by hand or by an older"
        " ralphstate); run `ralphstate trust`"
    )
    return [said]


def _handed(store: Store, state: st.State) -> str | None:
    """The line for a loop whose owner took it by an input ralphstate could not tell
    from a shell's (hooks/forged.py: the `adopted` line's `unsure`), read from the
    loop's recent history; None when the owner took it otherwise."""
    from ralphstate.core.text import short_id, visible

    for entry in reversed(store.history(limits.MAX_LOG_LINES)):
        if entry.get("event") != "adopted":
            continue
        why = entry.get("unsure")
        if entry.get("session") != state["sessionId"] or not isinstance(why, str):
            return None
        return (
            f"handed to session {short_id(state['sessionId'])} by an input ralphstate could"
            f" not tell from a shell's ({visible(why)[:300]}); if no session started then,"
            " run `ralphstate adopt` in yours"
        )
    return None
