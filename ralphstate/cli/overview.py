"""Commands about the loop as a whole: `init`, `status`, `show`, `log`, `list`."""

from __future__ import annotations

from pathlib import Path

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS, positive
from ralphstate.core import state as st
from ralphstate.core.text import count, short_id, visible
from ralphstate.loop import begin, listing, readiness
from ralphstate.loop.project import hooks_view, locate
from ralphstate.storage.store import Store


@click.command(context_settings=SETTINGS)
@click.argument("spec", required=False, default="")
@click.option("-c", "--criterion", "criteria", multiple=True, help="A success criterion (repeat).")
@click.option(
    "--check",
    "checks",
    nargs=2,
    multiple=True,
    metavar="NAME COMMAND",
    help="A success criterion with the shell command that verifies it, two words (repeat);"
    " exit code 0 means met. Trusted on this machine when you give it; an agent's waits"
    " for `ralphstate trust`.",
)
@click.option("-s", "--step", "steps", multiple=True, help="A step of the plan (repeat).")
@click.option(
    "--task",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A markdown file in the project whose checkboxes are the loop's steps, re-read at"
    " every stop; `step done` checks a box.",
)
@click.option(
    "--contract",
    type=click.Choice(["boxes"]),
    help="boxes: the --task file's boxes are the criteria; every box ticked is done"
    " (a tick is a claim; a box's `(check: `CMD`)` proves it).",
)
@click.option(
    "--max-iterations",
    type=int,
    default=None,
    callback=positive,
    help=f"Pause after this many blocked stops.  [default: {st.DEFAULT_MAX_ITERATIONS},"
    " or the template's]",
)
@click.option(
    "--stall-limit",
    type=int,
    default=None,
    callback=positive,
    help=f"Pause after this many blocks with no progress.  [default: {st.DEFAULT_STALL_LIMIT},"
    " or the template's]",
)
@click.option(
    "--marker",
    default=None,
    help=f"What the agent says when the work is done.  [default: {st.DEFAULT_MARKER},"
    " or the template's]",
)
@click.option("--continue-message", default=None, help="Text that opens every block reason.")
@click.option(
    "--from",
    "from_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Start from a template: a JSON state or a markdown checklist.",
)
@click.option("--force", is_flag=True, help="Replace an unfinished loop (a copy is kept).")
@click.option(
    "--verify-on-stop/--no-verify-on-stop",
    default=None,
    help="Run the criteria's checks before the Stop hook allows a claimed completion"
    " (default: on, or the template's; --no-verify-on-stop turns it off).",
)
@click.option(
    "--here",
    is_flag=True,
    help="Start the loop in this directory, not at the project root (the git work tree's"
    " top, or the agent's project directory).",
)
@click.option(
    "--no-criteria",
    is_flag=True,
    help="A loop without criteria, which the completion marker alone ends (without this,"
    " a loop with no criteria cannot complete until some are added).",
)
@click.option(
    "--guard",
    "guard",
    multiple=True,
    metavar="PATH",
    help="Guard these files too (a git pathspec relative to the project root; repeat):"
    " changing them needs your review before the loop can complete.",
)
@click.option(
    "--no-guard",
    is_flag=True,
    help="Guard no files (by default the tests git tracks are guarded).",
)
@click.option(
    "--expect-fail",
    is_flag=True,
    help="Each criterion's check must fail once before a pass counts (red before green);"
    " the checks the loop has run once now, when they are trusted here.",
)
def init(
    spec: str,
    criteria: tuple[str, ...],
    checks: tuple[tuple[str, str], ...],
    steps: tuple[str, ...],
    task: Path | None,
    contract: str | None,
    max_iterations: int | None,
    stall_limit: int | None,
    marker: str | None,
    continue_message: str | None,
    from_file: Path | None,
    force: bool,
    verify_on_stop: bool | None,
    here: bool,
    no_criteria: bool,
    guard: tuple[str, ...],
    no_guard: bool,
    expect_fail: bool,
) -> None:
    """Start a loop at the project root (.loop/state.json), where the hooks look.

    The project root is the agent's project directory (CLAUDE_PROJECT_DIR, ...) when
    this directory is in it, else the top of the git work tree, else this directory;
    --here starts it in this directory. Inside a Claude Code session the loop is owned
    by that session.

    The loop guards the tests git tracks (test directories, test files, test
    configuration, files the checks name): a completion after they changed waits for
    your review. It says which; --guard adds, --no-guard opts out.

    A criterion given with --check has its check from the start: when the agent
    claims it, the Stop hook runs the command and sends the agent back while it fails.

    \b
    Example:
      ralphstate init "Add CSV export to the report page" \\
        --check "tests pass" "python3 -m pytest -q" -c "export button works" \\
        -s "write the exporter" -s "wire the button" --max-iterations 30
      ralphstate init --from loop-template.md
    """
    from ralphstate.loop import template

    loaded = template.load(from_file) if from_file else None
    if marker is not None:
        from ralphstate.core.marker import check_marker

        check_marker(marker)
    if expect_fail:  # every criterion, with the template's: its check must fail first
        loaded = dict(loaded or {})
        loaded["expectFail"] = [*loaded.get("criteria", []), *criteria, *dict(checks)]
    store, new, backup = begin.init(
        spec,
        list(criteria),
        list(steps),
        max_iterations=max_iterations,
        stall_limit=stall_limit,
        marker=marker,
        continue_message=continue_message,
        force=force,
        template=loaded,
        verify_on_stop=verify_on_stop,
        no_criteria=no_criteria,
        here=here,
        task=task,
        guard=list(guard),
        no_guard=no_guard,
        checks=dict(checks),
        contract=contract,
    )
    if backup:
        output.text(f"kept the old state as {store.paths.display(backup)}")
    owner = f", owned by session {short_id(new['sessionId'])}" if new["sessionId"] else ""
    # Relative to the current directory when it is the project root, else in full.
    at_root = Path.cwd().resolve() == store.paths.root.resolve()
    where = store.paths.display(store.paths.state) if at_root else str(store.paths.state)
    output.text(
        f"started a loop in {where}: "
        f"{count(len(new['criteria']), 'criterion')}, {count(len(new['steps']), 'step')},"
        f" max {count(new['maxIterations'], 'iteration')}{owner}"
    )
    from ralphstate.storage import testfiles

    output.text(testfiles.summary(store.paths.root, new["guards"]))
    if new["boxCriteria"]:
        output.text(
            f"the boxes of {new['tasksFile']} are its criteria: a ticked box is a claim,"
            " a box with a check is proved by it; boxes added later are steps."
        )
    if not new["criteria"]:
        from ralphstate.core.render import NO_CRITERIA

        output.text(
            f"{NO_CRITERIA} it"
            if new["noCriteria"]
            else "no criteria: the loop cannot complete until some are added"
            " (`ralphstate criteria add NAME`); `init --no-criteria` starts a loop that the"
            " completion marker alone ends"
        )
    _say_checks(store, new, dict(checks))
    from ralphstate.verify import baseline

    for line in [*baseline.begin(store, new, expect_fail), *readiness.said(new, store.paths.root)]:
        output.text(line)
    _enforced(store)


def _say_checks(store: Store, new: st.State, typed: dict[str, str]) -> None:
    """The loop's checks as `init` started it, and what they wait for: a template's
    (shown, not trusted) and those given with --check; a warning for each whose program
    cannot be found."""
    from ralphstate.loop import program
    from ralphstate.storage import trust

    trusted = trust.is_trusted(store.paths, new)
    for name, command in new["checks"].items():
        mark = "" if trusted else " (not trusted yet)"
        output.text(f"check{mark} {visible(name)}: {visible(command)}")
    for name, command in trust.armed(new).items():
        said = program.warning(name, command, store.paths.root)
        if said:
            output.error(said)
    if trusted:
        return
    from ralphstate.core.approving import trust_step

    one = len(new["checks"]) == 1
    whose = "the" if all(typed.get(n) == c for n, c in new["checks"].items()) else "the template's"
    output.text(
        f"{whose} {'check' if one else 'checks'} will not run until you review"
        f" {'it' if one else 'them'}, then {trust_step()}"
    )


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
            st.set_steps(state := st.State(**state), [], [])  # a copy: the file keeps them
    from ralphstate.storage import registry

    known = registry.knows(store.paths, state)
    from ralphstate.loop import review

    proof = review.summary(store, state)
    tree, in_git = _code(store, state)
    from ralphstate.sandbox import lastrun

    boxed = lastrun.fields(store)
    if as_json:
        from ralphstate.core import queries

        stale = queries.stale(state, tree)
        output.json({**state, "knownHere": known, "proof": proof, "staleEvidence": stale, **boxed})
        return
    from ralphstate.core import views
    from ralphstate.storage import trust

    trusted = trust.is_trusted(store.paths, state)
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
    for line in [*lastrun.lines(boxed), *review.summary_lines(proof)]:
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


@click.command(context_settings=SETTINGS)
def show() -> None:
    """Print .loop/state.json exactly as it is stored.

    \b
    Example:
      ralphstate show
    """
    store = locate()
    data = store.read_bytes()
    output.text(data.decode("utf-8", "replace"), nl=not data.endswith(b"\n"))


@click.command(context_settings=SETTINGS)
@click.option(
    "-n",
    "lines",
    type=int,
    default=20,
    show_default=True,
    callback=positive,
    help="How many of the newest entries.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line.")
@click.option("--all", "every_loop", is_flag=True, help="Also the entries of earlier loops here.")
def log(lines: int, as_json: bool, every_loop: bool) -> None:
    """Show the loop's history (.loop/history.jsonl), newest last: the current loop's
    entries, or with --all those of earlier loops in this directory too.

    \b
    Example:
      ralphstate log -n 50
    """
    from ralphstate.core import limits
    from ralphstate.core.errors import RalphstateError
    from ralphstate.run import logline
    from ralphstate.storage.store import of_loop

    store = locate()
    entries = store.history(limits.MAX_LOG_LINES)
    if not every_loop:
        try:
            loop_id = store.load()["loopId"]
        except RalphstateError as exc:  # the history stays readable: the newest loop's
            loop_id = next((str(e["loop"]) for e in reversed(entries) if e.get("loop")), None)
            output.error(
                f"the state file cannot be read ({str(exc).rstrip('.')}); the history below"
                " is that of the newest loop in it"
            )
        entries = of_loop(entries, loop_id)
    for entry in entries[-min(lines, limits.MAX_LOG_LINES) :]:
        if as_json:
            output.json(entry, compact=True)
        else:
            output.text(logline.line(entry))


@click.command("list", context_settings=SETTINGS)
@click.option("--json", "as_json", is_flag=True, help="Print the loops as JSON.")
@click.option("--prune", is_flag=True, help="Forget loops whose directory is gone.")
def list_(as_json: bool, prune: bool) -> None:
    """List every loop created or adopted on this machine.

    \b
    Example:
      ralphstate list
      ralphstate list --prune
    """
    rows = listing.list_loops(prune)
    from ralphstate.storage import registry

    unusable = registry.problem()
    if unusable:  # never an empty list without a word
        output.error(unusable)
    if as_json:
        output.json(rows)
        return
    from ralphstate.core import views

    if not rows:
        output.text("no loops recorded on this machine")
    for row in rows:
        output.text(views.loop_row(row))
