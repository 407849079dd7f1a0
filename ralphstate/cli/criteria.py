"""`ralphstate criteria list|add|set|remove|check|rubric`: the success criteria, their
checks and their rubrics.

`criteria set` runs dozens of times a loop: `criteria check` imports the checks' module
(verify/checks.py) only when it runs."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core import limits, queries
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.loop import checklist
from ralphstate.loop.configure import parse_bool
from ralphstate.loop.project import locate
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import truststore


@click.group(context_settings=SETTINGS)
def criteria() -> None:
    """List, add, set or remove success criteria.

    \b
    Example:
      ralphstate criteria set "tests pass" true --note "pytest -q: 84 passed"
    """


@criteria.command("list", context_settings=SETTINGS)
def criteria_list() -> None:
    """List the criteria with their status.

    \b
    Example:
      ralphstate criteria list
    """
    state = locate().load()
    for i, name in enumerate(state["criteria"], 1):
        output.text(f"{i}. [{'x' if queries.met(state, name) else ' '}] {visible(name)}")


@criteria.command("add", context_settings=SETTINGS)
@click.argument("name")
@click.option("--check", default=None, help="A shell command that verifies the criterion.")
def criteria_add(name: str, check: str | None) -> None:
    """Add a criterion (unmet).

    \b
    Example:
      ralphstate criteria add "docs updated"
    """
    store = locate()
    new = checklist.criteria_add(store, name, check)
    output.text(f"added criterion '{visible(name)}'")
    if check is not None:
        from ralphstate.loop import program

        said = program.warning(name, check, store.paths.root)
        if said:
            output.error(said)
    if check is None and name in new["checks"]:
        from ralphstate.core.approving import trust_step

        if not truststore.is_trusted(store.paths, new):
            output.error(
                f"criterion '{visible(name)}' has a check that came with the file:"
                f" {visible(new['checks'][name])}; the checks are not trusted until you"
                f" review them (`ralphstate status`) and {trust_step()}."
            )


@criteria.command("set", context_settings=SETTINGS)
@click.argument("name")
@click.argument("value")
@click.option("--note", default=None, help="Why; recorded in the history.")
def criteria_set(name: str, value: str, note: str | None) -> None:
    """Record a criterion as verified (true) or not (false). NAME may be its number.

    VALUE is true/false, yes/no or 1/0.

    \b
    Example:
      ralphstate criteria set "tests pass" true
      ralphstate criteria set 2 no --note "lint fails on utils.py"
    """
    found, flag = checklist.criteria_set(locate(), name, parse_bool(value), note)
    output.text(f"{visible(found)}: {'met' if flag else 'not met'}")


@criteria.command("remove", context_settings=SETTINGS)
@click.argument("name")
def criteria_remove(name: str) -> None:
    """Remove a criterion. NAME may be its number.

    \b
    Example:
      ralphstate criteria remove "docs updated"
    """
    found = checklist.criteria_remove(locate(), name)
    output.text(f"removed criterion '{visible(found)}'")


@criteria.command("check", context_settings=SETTINGS)
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
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="NAME",
    help="A variable the loop's checks get, with its value in your shell now (repeat it"
    " for more); only the person may name one.",
)
def criteria_check(
    name: str,
    command: str | None,
    timeout: float | None,
    remove: bool,
    expect_fail: bool | None,
    alone: bool | None,
    env: tuple[str, ...],
) -> None:
    """Show, set or remove the shell command that verifies a criterion.

    NAME may be the criterion's number. The command runs in the project root with
    `ralphstate verify` (and, with verify-on-stop, before the loop may end); exit code
    0 means the criterion is met. Checks run side by side; one given --alone runs with
    none beside it. A check set here stays trusted on this machine when the loop's
    checks were trusted before. Checks run with the environment recorded when you
    trusted them, never the caller's; --env NAME adds a variable to it.

    \b
    Example:
      ralphstate criteria check "tests pass" "pytest -q"
      ralphstate criteria check "tests pass" --timeout 900
      ralphstate criteria check "parser handles tabs" "pytest -q -k tabs" --expect-fail
      ralphstate criteria check "e2e pass" --alone
      ralphstate criteria check "tests pass"
      ralphstate criteria check "tests pass" --remove
      ralphstate criteria check "db tests" --env DATABASE_URL
    """
    from ralphstate.verify import checks  # not for `criteria set`: see the docstring

    store = locate()
    settings = (timeout, expect_fail, alone)
    if remove and (command is not None or timeout is not None or expect_fail is not None):
        raise RalphstateError("--remove takes no command, no --timeout and no --expect-fail.")
    if remove and alone is not None:
        raise RalphstateError("--remove takes no --alone: the check goes, and its setting too.")
    if env:
        _may_name_env(store, env)
    if command is None and all(v is None for v in settings) and not remove:
        if env:
            _name_env(store, env)
        else:
            output.text(checks.describe(store.load(), name))
        return
    found, new = checks.set_check(
        store, name, command, timeout=timeout, remove=remove, expect_fail=expect_fail, alone=alone
    )
    output.text(
        f"removed the check of '{visible(found)}'" if remove else checks.describe(new, found)
    )
    if env:
        _name_env(store, env)
    if command is not None:
        from ralphstate.loop import program

        said = program.warning(found, command, store.paths.root)
        if said:
            output.error(said)


@criteria.command("rubric", context_settings=SETTINGS)
@click.argument("name")
@click.argument("text", required=False)
@click.option("--remove", is_flag=True, help="Remove the criterion's rubric.")
def criteria_rubric(name: str, text: str | None, remove: bool) -> None:
    """Show, set or remove the rubric a reviewer grades a criterion by (person only).

    NAME may be the criterion's number. At each claimed completion, after the checks
    pass, a reviewer that is not the author (`ralphstate config reviewer`; by default
    Claude Code with no tools) reads the spec, the rubric and the diff since the loop
    began, and passes or fails the criterion with reasons. A criterion so passed is
    graded, never verified.

    \b
    Example:
      ralphstate criteria rubric "README explains --dry-run" "The README names the flag,
        says what it does not do, and shows one example."
      ralphstate criteria rubric 2
      ralphstate criteria rubric 2 --remove
    """
    from ralphstate.loop import rubrics

    store = locate()
    if remove and text is not None:
        raise RalphstateError("--remove takes no rubric text.")
    if text is None and not remove:
        output.text(rubrics.describe(store.load(), name))
        return
    found, changed = rubrics.set_rubric(store, name, None if remove else text)
    done = "removed the rubric of" if remove else "set the rubric of"
    output.text(f"{done} '{visible(found)}'" + ("" if changed else " (unchanged)"))


def _may_name_env(store: Store, env: tuple[str, ...]) -> None:
    """Refuse `--env` from anyone but the person, and a name that is not a variable's."""
    from ralphstate.loop.person import require_person
    from ralphstate.storage.peruser import checkenv

    require_person(store.paths, "`criteria check --env`")
    bad = checkenv.bad_names(env)
    if bad:
        raise RalphstateError(f"--env takes a variable name, not {visible(bad[0])!r}.")


def _name_env(store: Store, env: tuple[str, ...]) -> None:
    """Record the variables named with `--env` for the loop's checks."""
    names = sorted(set(env))
    truststore.name_env(store.paths, store.load(), names)
    said = ", ".join(visible(n) for n in names)
    output.text(f"the checks get {said} as your shell has it now")
