"""Grading a loop's rubrics where a completion is decided (core/grading.py): the diff
since the loop began, bounded, and the reviewer asked about each graded criterion.

The diff starts at the loop's base commit, the HEAD its `init` found, kept in the loop's
ledger outside the project (`baseCommit`), so the agent cannot move it; it is the work
tree against that commit, untracked files as new files, the loop's own directory left
out, at most `grading.MAX_DIFF_BYTES` bytes (the reviewer is told when it was cut).
Outside git, or when the base is unknown, the reviewer is told there is no diff.
"""

from __future__ import annotations

import os
import time

from ralphstate.core import grading
from ralphstate.core import state as st
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import ledger
from ralphstate.storage.repo import git
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.verify import reviewer

# Untracked files shown whole in the diff, at most.
MAX_NEW_FILES = 200


def diff(paths: LoopPaths) -> tuple[str, str]:
    """The diff since the loop began, and a note for the reviewer when it is not whole
    (cut at the bound) or not there (outside git, base unknown)."""
    entry = ledger.read(paths) or {}
    base = entry.get("baseCommit")
    top = git.toplevel(paths.root)
    if top is None:
        return "", " (none: the project is not in a git repository)"
    if not isinstance(base, str):
        return "", " (none: where the loop began is not known)"
    spec = git.loop_pathspec(paths, top)
    most = grading.MAX_DIFF_BYTES
    done = git.run_git(
        ["diff", "--no-color", "--no-ext-diff", "--no-textconv", base, "--", *spec],
        top,
        limit=most + 1,
    )
    if done is None or done.code not in (0, 1):
        return "", " (none: git could not give it)"
    text = done.out
    listed = git.run_git(["ls-files", "-z", "--others", "--exclude-standard", "--", *spec], top)
    for name in (listed.out.split("\0") if listed and listed.ok else [])[:MAX_NEW_FILES]:
        if not name or len(text.encode()) > most:
            continue
        new = git.run_git(
            ["diff", "--no-color", "--no-index", "--", os.devnull, name], top, limit=most + 1
        )
        if new is not None:
            text += new.out
    data = text.encode("utf-8")
    if len(data) > most:
        cut = data[:most].decode("utf-8", "ignore")
        return cut, f" (cut at {most:,} bytes: the rest is not shown)"
    return text, ""


def grade(
    paths: LoopPaths,
    state: st.State,
    names: list[str] | None = None,
    budget: float = grading.REVIEWER_TIMEOUT,
) -> grading.Graded:
    """Ask the reviewer about each graded criterion (of `names`, when given), one fresh
    run each: the spec, its rubric and the diff, nothing else; all of them within
    `budget` seconds (a reviewer left with no time gives no verdict)."""
    rubrics = grading.rubrics_of(state)
    chosen = [n for n in grading.graded_names(state) if names is None or n in names]
    if not chosen:
        return grading.Graded([])
    command = grading.reviewer_of(state)
    text, note = diff(paths)
    deadline = time.monotonic() + budget
    verdicts = []
    for n in chosen:
        left = min(grading.REVIEWER_TIMEOUT, deadline - time.monotonic())
        if left <= 1:
            why = f"the reviewer had no time left of its {budget:g} seconds"
            verdicts.append(grading.Verdict(n, grading.NONE, why, command))
            continue
        asked = grading.prompt(state["spec"], n, rubrics[n], text, note)
        verdicts.append(reviewer.run(command, n, asked, timeout=left))
    return grading.Graded(verdicts)


def graded_now(
    store: Store, names: list[str] | None = None, budget: float = grading.REVIEWER_TIMEOUT
) -> grading.Graded:
    """`grade` on the loop as it is now, for a hook or the runner: never an exception. A
    fault (the state or git unreadable) gives each graded criterion no verdict, said, so
    the completion does not pass on it."""
    try:
        state = store.load()
        graded = grade(store.paths, state, names, budget)
        stamps = [(v.criterion, grading.stamp(v.result, v.at)) for v in graded.verdicts]
        ledger.note_grades(store.paths, stamps)  # only these are shown as graded
        return graded
    except Exception as exc:  # noqa: BLE001 - a completion is decided, never crashed
        said = grading.clip(str(exc) or type(exc).__name__, 200)
        why = f"the reviewer could not be asked ({said})"
        try:
            named = names or grading.graded_names(store.load())
        except Exception:  # noqa: BLE001
            named = names or []
        return grading.Graded([grading.Verdict(n, grading.NONE, why, "") for n in named])
