"""`ralphstate verify`: run the criteria's checks now and record what they prove."""

from __future__ import annotations

from typing import Any

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import all_of, count, visible
from ralphstate.loop import person
from ralphstate.loop.project import locate
from ralphstate.verify import onecheck, pipeline, pool, strength

EXIT_INTERRUPTED = 130


def _seconds(value: float | None) -> float | None:
    if value is not None and not 0 < value <= limits.MAX_CHECK_TIMEOUT:
        raise RalphstateError(
            f"--timeout must be a number of seconds above 0 and at most"
            f" {limits.MAX_CHECK_TIMEOUT:g}, not {value:g}."
        )
    return value


def result_lines(result: onecheck.CheckResult) -> list[str]:
    """One line for a check, then, when it failed, the end of its output, indented."""
    took = f"{result.duration_ms / 1000:.1f}s"
    name = visible(result.criterion)
    if result.passed and result.weakened:
        word = output.style("WEAKENED", fg="yellow")
        return [f"{word}  {name}  ({took}, {result.summary})"]
    if result.passed:
        counted = strength.describe(result.strength)
        return [f"{output.style('PASS', fg='green')}  {name}  ({took}, {counted})"]
    word = output.style("HELD", fg="yellow") if result.held else output.style("FAIL", fg="red")
    lines = [f"{word}  {name}  ({took}, {result.summary})"]
    lines += ["    " + line for line in result.output_tail.splitlines()]
    return lines


def _interrupted(exc: KeyboardInterrupt, shown: int) -> str:
    """What `verify` says when it was interrupted: what it stopped, what it kept."""
    finished = len(exc.finished) if isinstance(exc, pool.Interrupted) else shown
    stopped = len(exc.unfinished) if isinstance(exc, pool.Interrupted) else 1
    if stopped == 1:
        return (
            "interrupted; the running check was stopped and nothing was recorded"
            f" for it ({finished} finished before it were recorded)."
        )
    return (
        f"interrupted; {stopped} checks were stopped or not started, and nothing was"
        f" recorded for them ({finished} finished before were recorded)."
    )


@click.command(context_settings=SETTINGS)
@click.argument("names", metavar="[NAME]...", nargs=-1)
@click.option(
    "--timeout",
    type=float,
    default=None,
    help="Seconds each check may run, for this run"
    f" (default: the criterion's own timeout, else {limits.CHECK_TIMEOUT:g}).",
)
@click.option(
    "--clean",
    is_flag=True,
    help="Run the checks in a clean room: a temporary worktree of the files git tracks,"
    " as the work tree holds them (untracked and ignored files left out), removed after.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def verify_command(
    names: tuple[str, ...], timeout: float | None, clean: bool, as_json: bool
) -> None:
    """Run the criteria's checks now and record what they prove.

    Each check runs in the project root; with --clean, in the same directory of a
    clean room, a temporary worktree of the files git tracks, where the Stop hook and
    `ralphstate run` verify a completion. Exit code 0 records its criterion as met
    and verified; any other exit code, or a timeout, records it as not met and
    failing, with the end of its output. Without NAME, every criterion that has a
    check runs; NAME may be a criterion's number. Exits 1 when a check fails; Ctrl-C
    stops the running check and records nothing for it.

    Only checks trusted on this machine run (see `ralphstate trust`).

    \b
    Example:
      ralphstate verify
      ralphstate verify "tests pass" --timeout 300
      ralphstate verify --clean
    """
    _seconds(timeout)
    store = locate()
    person.unmask()  # `env -i` in the agent's shell: its results are still the agent's
    done: list[onecheck.CheckResult] = []

    def show(result: onecheck.CheckResult) -> None:
        done.append(result)
        if not as_json:
            for line in result_lines(result):
                output.text(line)

    try:
        with onecheck.terminate_as_interrupt():
            ask = pipeline.Ask(list(names) or None, timeout=timeout, clean=clean, progress=show)
            results = pipeline.verify(store, ask).results
    except KeyboardInterrupt as exc:
        output.error(_interrupted(exc, len(done)))
        raise SystemExit(EXIT_INTERRUPTED) from None
    if not results:
        raise RalphstateError(
            'no criterion in this loop has a check; add one: ralphstate criteria check NAME "CMD".'
        )
    failed = [r for r in results if not r.passed]
    if as_json:
        data: Any = [r.as_dict() for r in results]
        output.json(data)
    elif failed:
        output.text(f"{len(failed)} of {count(len(results), 'check')} failed")
    else:
        output.text(f"{all_of(len(results), 'check')} passed")
    if failed:
        raise SystemExit(1)
