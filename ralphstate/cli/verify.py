"""Commands for checks: `verify`, `trust`, `config` and `criteria check`.

They parse and dispatch to `verify.execute` and `verify.checks`; app.py and
criteria.py name them, and they are imported only when one of them runs."""

from __future__ import annotations

from typing import Any

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import all_of, count, visible
from ralphstate.loop.project import locate
from ralphstate.storage.store import Store
from ralphstate.verify import checks, execute, onecheck

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
    if result.passed:
        return [f"{output.style('PASS', fg='green')}  {name}  ({took})"]
    word = output.style("HELD", fg="yellow") if result.held else output.style("FAIL", fg="red")
    lines = [f"{word}  {name}  ({took}, {result.summary})"]
    lines += ["    " + line for line in result.output_tail.splitlines()]
    return lines


def _interrupted(exc: KeyboardInterrupt, shown: int) -> str:
    """What `verify` says when it was interrupted: what it stopped, what it kept."""
    from ralphstate.verify import pool

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
    done: list[onecheck.CheckResult] = []

    def show(result: onecheck.CheckResult) -> None:
        done.append(result)
        if not as_json:
            for line in result_lines(result):
                output.text(line)

    try:
        with onecheck.terminate_as_interrupt():
            results = execute.run_checks(
                store, list(names) or None, timeout, progress=show, clean=clean
            )
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


@click.command(context_settings=SETTINGS)
def trust_command() -> None:
    """Allow this loop's check commands to run on this machine.

    Check commands are code. Checks that came with a repository, or were changed
    other than through ralphstate on this machine, are not run by `verify` or the
    hooks until you have read them and run this. It prints what it trusted.

    The agent command and the context files that a configuration file names for
    `ralphstate run` (pyproject.toml, .loop/config.toml) are trusted with them:
    `ralphstate run --dry-run` shows them first.

    Only the person may trust: it refuses inside an agent session or a `ralphstate
    run` iteration, unless you approved the agent's command at Claude Code's
    permission prompt.

    \b
    Example:
      ralphstate status     # read the checks first
      ralphstate run --dry-run
      ralphstate trust
    """
    from ralphstate.loop.person import require_person
    from ralphstate.run import runconfig
    from ralphstate.storage import truststore

    store = locate()
    require_person(store.paths, "`ralphstate trust`")
    configured = runconfig.load(store.paths.root, store.paths.dir)
    from ralphstate.loop import linkedspecs

    specs = linkedspecs.linked(store.paths.root, store.load(), configured.context)
    settings = runconfig.reviewed(configured, store.paths.root, specs)
    state = checks.trust_checks(store, settings)
    armed = truststore.armed(state)
    for name, command in armed.items():
        output.text(f"  {visible(name)}: {visible(command)}")
    for name, command in truststore.idle(state).items():
        output.text(
            f"  {visible(name)}: {visible(command)}  (no such criterion: not trusted, never run)"
        )
    where = ", ".join(configured.sources)
    if "agent" in settings:
        output.text(f"  run agent ({visible(where)}): {visible(settings['agent'])}")
    for command in configured.fallbacks:
        output.text(f"  run fallback agent ({visible(where)}): {visible(command)}")
    for path in configured.context:
        output.text(f"  run context file ({visible(where)}): {visible(path)}")
    if configured.notify is not None:
        output.text(f"  run notifier ({visible(where)}): {visible(configured.notify)}")
    for path in specs:
        output.text(f"  run linked spec (the task file): {visible(path)}")
    if settings:
        output.text(f"trusted these settings of `ralphstate run` in {store.paths.root}")
    if not armed:
        output.text("this loop has no checks; there is nothing to trust")
        return
    n = len(armed)
    these = "this check" if n == 1 else f"these {n} checks"
    output.text(f"trusted {these} in {store.paths.root} on this machine")


@click.command(context_settings=SETTINGS)
@click.argument("key", required=False)
@click.argument("values", metavar="[VALUE]...", nargs=-1)
def config(key: str | None, values: tuple[str, ...]) -> None:
    """Show the loop's settings, or show or change one; each change is a history line.

    \b
    Settings:
      max-iterations    the cap: the loop pauses when its iteration reaches it
      stall-limit       blocks in a row without progress before the loop pauses
      marker            what the agent says when the work is done
      continue-message  text that opens every block reason ("" for none)
      spec              the request the loop works on
      verify-on-stop    true/false/default: run the criteria's checks before the
                        Stop hook allows a claimed completion (default: on;
                        `false` turns it off, and `status` shows that)
      clean-verify      on/off/default: the checks that accept a completion (the
                        Stop hook's, `run`'s) run in a clean room, a temporary
                        worktree of the files git tracks (default: on in a git
                        repository; `off` runs them in the project, as `status`
                        shows)
      verify-budget     seconds the Stop hook may spend running checks at a
                        claimed completion (default 120; 0: none); checks that
                        do not fit are left to `ralphstate verify`
      verify-jobs       how many checks run at once (default: the processors,
                        at least 16)
      max-cost          the loop's cost budget in US dollars, or none
      max-tokens        the loop's token budget, or none: the loop pauses once
                        its usage reaches it (inside a session too)
      max-duration      the loop's time budget (8h, 90m, 1h30m), or none
      owner-timeout     how long the owning session may leave the loop untouched
                        before a session that starts here takes it (30m, 2h),
                        off, or default (30m)
      guard             the guarded files: `guard add PATH...`, `guard remove
                        PATH...` (git pathspecs relative to the project root),
                        `guard off`, `guard on` (the default set)

    \b
    Example:
      ralphstate config
      ralphstate config max-iterations 40
      ralphstate config verify-on-stop true
      ralphstate config clean-verify off
      ralphstate config verify-budget 60
      ralphstate config continue-message ""
      ralphstate config max-cost 20
      ralphstate config max-duration none
      ralphstate config guard add e2e/
    """
    from ralphstate.loop import configure

    store = locate()
    if key == "guard":
        _config_guard(store, values)
    elif key is None:
        state = store.load()
        for name in configure.SETTINGS:
            output.text(f"{name}: {configure.summary(state, name)}")
            if name == "verify-on-stop":  # what proves the loop done, together
                output.text(f"guard: {configure.guards_shown(state['guards'])}")
    elif not values:
        output.text(configure.get(store.load(), key))
    elif len(values) > 1:
        configure.setting(key)  # an unknown key says so first
        raise RalphstateError(f"{key} takes one value; quote a value that has spaces.")
    else:
        shown, changed = configure.change(store, key, values[0])
        output.text(f"{key}: {shown}" + ("" if changed else " (unchanged)"))


def _config_guard(store: Store, values: tuple[str, ...]) -> None:
    """`config guard`: the guards, one a line; `config guard ACTION [PATH]...` changes them."""
    from ralphstate.loop import configure
    from ralphstate.storage import testfiles

    if not values:
        guards = store.load()["guards"]
        for line in [visible(g) for g in guards] if guards else [configure.guards_shown(guards)]:
            output.text(line)
        return
    guards, changed = configure.change_guards(store, values[0], list(values[1:]))
    unchanged = "" if changed else " (unchanged)"
    output.text(testfiles.status_line(store.paths.root, guards) + unchanged)


@click.command("check", context_settings=SETTINGS)
@click.argument("name")
@click.argument("command", required=False)
@click.option(
    "--timeout",
    type=float,
    default=None,
    help=f"Seconds the check may run (default {limits.CHECK_TIMEOUT:g}).",
)
@click.option("--remove", is_flag=True, help="Remove the criterion's check.")
@click.option(
    "--expect-fail/--no-expect-fail",
    default=None,
    help="The check must fail once before a pass counts (red before green); --no-expect-fail"
    " takes that back, which a person must approve when an agent does it.",
)
@click.option(
    "--alone/--not-alone",
    default=None,
    help="The check runs with no other check beside it (it shares a port, a database or"
    " a build directory with them); --not-alone lets it run beside them again.",
)
def criteria_check(
    name: str,
    command: str | None,
    timeout: float | None,
    remove: bool,
    expect_fail: bool | None,
    alone: bool | None,
) -> None:
    """Show, set or remove the shell command that verifies a criterion.

    NAME may be the criterion's number. The command runs in the project root with
    `ralphstate verify` (and, with verify-on-stop, before the loop may end); exit code
    0 means the criterion is met. Checks run side by side; one given --alone runs with
    none beside it. A check set here stays trusted on this machine when the loop's
    checks were trusted before.

    \b
    Example:
      ralphstate criteria check "tests pass" "pytest -q"
      ralphstate criteria check "tests pass" --timeout 900
      ralphstate criteria check "parser handles tabs" "pytest -q -k tabs" --expect-fail
      ralphstate criteria check "e2e pass" --alone
      ralphstate criteria check "tests pass"
      ralphstate criteria check "tests pass" --remove
    """
    store = locate()
    settings = (timeout, expect_fail, alone)
    if remove and (command is not None or timeout is not None or expect_fail is not None):
        raise RalphstateError("--remove takes no command, no --timeout and no --expect-fail.")
    if remove and alone is not None:
        raise RalphstateError("--remove takes no --alone: the check goes, and its setting too.")
    if command is None and all(v is None for v in settings) and not remove:
        output.text(checks.describe(store.load(), name))
        return
    found, new = checks.set_check(
        store, name, command, timeout=timeout, remove=remove, expect_fail=expect_fail, alone=alone
    )
    output.text(
        f"removed the check of '{visible(found)}'" if remove else checks.describe(new, found)
    )
    if command is not None:
        from ralphstate.loop import program

        said = program.warning(found, command, store.paths.root)
        if said:
            output.error(said)
