"""`ralphstate init`: start a loop, and say what it holds, what guards it and what it
waits for. The options go down whole, as one `begin.InitRequest`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS, positive
from ralphstate.core import state as st
from ralphstate.core.approving import trust_step
from ralphstate.core.render import NO_CRITERIA
from ralphstate.core.text import count, short_id, visible
from ralphstate.loop import begin, enforcement, person, program, readiness, template
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import truststore
from ralphstate.storage.repo import testfiles
from ralphstate.verify import baseline


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
    " exit code 0 means met. Trusted on this machine when you confirm it at your terminal"
    " (asked once); one given with no terminal, or by an agent, waits for `ralphstate trust`.",
)
@click.option(
    "--rubric",
    "rubrics",
    nargs=2,
    multiple=True,
    metavar="NAME TEXT",
    help="A graded criterion with the rubric a reviewer that is not the author grades it"
    " by, two words (repeat); only the person may give one.",
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
def init(from_file: Path | None, **options: Any) -> None:
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
    loaded = template.load(from_file) if from_file else None
    graded: tuple[tuple[str, str], ...] = options.pop("rubrics", ())
    if graded:  # the criteria they grade, which the person confirms below
        named = set(options.get("criteria", ())) | {n for n, _ in options.get("checks", ())}
        extra = tuple(n for n, _ in graded if n not in named)
        options["criteria"] = tuple(options.get("criteria", ())) + extra
    request = begin.InitRequest(template=loaded, **options)
    store, new, backup = begin.init(request)
    if backup:
        output.text(f"kept the old state as {store.paths.display(backup)}")
    _say_started(store, new)
    if graded:
        from ralphstate.loop import rubrics

        for name, text in graded:
            rubrics.set_rubric(store, name, text)
            output.text(f"rubric {visible(name)}: graded by a reviewer, never verified")
    _say_checks(store, new, dict(request.checks))
    person.unmask()  # the baseline of `env -i` in an agent's shell is the agent's
    for line in [
        *baseline.begin(store, new, request.expect_fail),
        *readiness.said(new, store.paths.root),
    ]:
        output.text(line)
    said = enforcement.for_loop(str(store.paths.root), str(store.paths.dir))
    if said:  # no agent's hook will enforce the loop
        output.text(output.style(said, fg="yellow", bold=True))


def _say_started(store: Store, new: st.State) -> None:
    """Where the loop started and what it holds, what it guards, and what its criteria
    are when they are the task file's boxes or none."""
    owner = f", owned by session {short_id(new['sessionId'])}" if new["sessionId"] else ""
    # Relative to the current directory when it is the project root, else in full.
    at_root = Path.cwd().resolve() == store.paths.root.resolve()
    where = store.paths.display(store.paths.state) if at_root else str(store.paths.state)
    output.text(
        f"started a loop in {where}: "
        f"{count(len(new['criteria']), 'criterion')}, {count(len(new['steps']), 'step')},"
        f" max {count(new['maxIterations'], 'iteration')}{owner}"
    )
    output.text(testfiles.summary(store.paths.root, new["guards"]))
    if new["boxCriteria"]:
        output.text(
            f"the boxes of {new['tasksFile']} are its criteria: a ticked box is a claim,"
            " a box with a check is proved by it; boxes added later are steps."
        )
    if not new["criteria"]:
        output.text(
            f"{NO_CRITERIA} it"
            if new["noCriteria"]
            else "no criteria: the loop cannot complete until some are added"
            " (`ralphstate criteria add NAME`); `init --no-criteria` starts a loop that the"
            " completion marker alone ends"
        )


def _say_checks(store: Store, new: st.State, typed: dict[str, str]) -> None:
    """The loop's checks as `init` started it, and what they wait for: a template's
    (shown, not trusted) and those given with --check; a warning for each whose program
    cannot be found."""
    trusted = truststore.is_trusted(store.paths, new)
    for name, command in new["checks"].items():
        mark = "" if trusted else " (not trusted yet)"
        output.text(f"check{mark} {visible(name)}: {visible(command)}")
    for name, command in truststore.armed(new).items():
        said = program.warning(name, command, store.paths.root)
        if said:
            output.error(said)
    if trusted:
        return
    one = len(new["checks"]) == 1
    whose = "the" if all(typed.get(n) == c for n, c in new["checks"].items()) else "the template's"
    if whose == "the" and _nobody_asked():
        output.text(
            f"the {'check' if one else 'checks'} will not run until you trust"
            f" {'it' if one else 'them'}: this process has no terminal, so nobody confirmed"
            f" {'it' if one else 'them'}; run `ralphstate trust` at your own terminal"
        )
        return
    output.text(
        f"{whose} {'check' if one else 'checks'} will not run until you review"
        f" {'it' if one else 'them'}, then {trust_step()}"
    )


def _nobody_asked() -> bool:
    """Whether the person's `init --check` went untrusted because this process has no
    terminal to ask them at (loop/begin.py, `_trust_typed`)."""
    from ralphstate.core import actor
    from ralphstate.storage.system import terminal

    return actor.is_person(actor.current()) and not terminal.available()
