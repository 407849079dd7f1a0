"""`ralphstate criteria list|add|set|remove`; `criteria check` lives with the other
commands about checks, in verify.py, and is imported only when it is asked for."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.lazy import LazyGroup
from ralphstate.cli.options import SETTINGS
from ralphstate.core import queries
from ralphstate.core.text import visible
from ralphstate.loop import checklist
from ralphstate.loop.configure import parse_bool
from ralphstate.loop.project import locate


@click.group(
    cls=LazyGroup,
    lazy={"check": "ralphstate.cli.verify:criteria_check"},
    context_settings=SETTINGS,
)
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
        from ralphstate.storage import truststore

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
