"""`ralphstate status`: the loop, as a person reads it."""

from __future__ import annotations

from pathlib import Path

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import state as st
from ralphstate.loop.project import hooks_view, locate
from ralphstate.storage.store import Store


@click.command(context_settings=SETTINGS)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the normalised state as JSON, with knownHere, proof and staleEvidence.",
)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="List every criterion, check, step and task (by default each list shows 100).",
)
def status(as_json: bool, every: bool) -> None:
    """Show the loop: spec, criteria, steps, iteration, owner.

    \b
    Example:
      ralphstate status
      ralphstate status --all
      ralphstate status --json | jq .criteriaStatus
    """
    store = locate()
    state = store.load()
    problem = None
    if state["tasksFile"]:  # the steps as the task file has them now
        from ralphstate.loop import taskfile

        try:
            taskfile.sync(state, store.paths.root)
        except taskfile.TaskFileError as exc:  # nothing stale: no steps at all
            problem = (
                f"{exc} The loop's steps are its boxes, so none are shown until it can be"
                " read again."
            )
            state = {**state, "steps": [], "completedSteps": [], "remainingSteps": []}
    from ralphstate.storage import registry

    known = registry.knows(store.paths, state)
    from ralphstate.loop import proofreview

    proof = proofreview.summary(store, state)
    tree, in_git = _code(store, state)
    from ralphstate.sandbox import lastrun

    boxed = lastrun.fields(store)
    if as_json:
        from ralphstate.core import queries

        stale = queries.stale(state, tree)
        output.json({**state, "knownHere": known, "proof": proof, "staleEvidence": stale, **boxed})
        return
    from ralphstate.core import views
    from ralphstate.storage import truststore

    trusted = truststore.is_trusted(store.paths, state)
    from ralphstate.storage import testfiles

    guarded = testfiles.status_line(store.paths.root, state["guards"])
    already = _already(store, state)
    shown = views.status(
        state,
        str(store.paths.root),
        output.style,
        trusted,
        tree,
        guarded,
        already,
        in_git,
        every=every,
    )
    output.text(shown)
    for line in [*lastrun.lines(boxed), *proofreview.summary_lines(proof)]:
        output.text(line)
    for line in views.unknown_here(state, known, output.style):
        output.text(line)
    if problem:
        output.text(output.style(problem, fg="yellow", bold=True))
    view = hooks_view(Path.cwd())  # in a subdirectory: which loop the hooks see
    if view is not None:
        seen, said = view
        output.text(said if seen else output.style(said, fg="yellow", bold=True))
    if state["status"] in ("in_progress", "paused"):
        _enforced(store)


def _enforced(store: Store) -> None:
    """One line when no agent's hook will enforce the loop (`loop.enforcement`)."""
    from ralphstate.loop.enforcement import for_loop

    said = for_loop(str(store.paths.root), str(store.paths.dir))
    if said:
        output.text(output.style(said, fg="yellow", bold=True))


def _already(store: Store, state: st.State) -> list[str]:
    """The criteria already true before any work, as the loop's ledger says."""
    from ralphstate.core import redgreen
    from ralphstate.storage import ledger

    return redgreen.already_true(state, ledger.of_loop(store.paths, state))


def _code(store: Store, state: st.State) -> tuple[str | None, bool | None]:
    """The tree the work tree holds (None: not known, or no evidence names a tree), and
    whether the loop is in a git repository (None: no checks, not asked); git runs only
    when it matters."""
    has_checks = any(c in state["checks"] for c in state["criteria"])
    if not has_checks and not any(e.get("tree") for e in state["evidence"].values()):
        return None, None
    from ralphstate.storage import git

    if any(e.get("tree") for e in state["evidence"].values()):
        code = git.snapshot(store.paths)
        if code is None:  # the evidence was taken in git: a failed snapshot is unknown
            from ralphstate.core import queries

            return queries.UNKNOWN_TREE, True
        return code.tree, True
    return None, (git.toplevel(store.paths.root) is not None) if has_checks else None
