"""`ralphstate heldout add|list|show|remove`: checks the agent never sees, person only.

They are kept outside the project (verify/heldouts.py, storage/peruser/heldoutstore.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core.text import visible
from ralphstate.loop.person import require_person
from ralphstate.loop.project import locate
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import heldoutstore
from ralphstate.verify import heldouts

# What each command does, as its refusal to an agent says it.
_DOES = {
    "add": "adds a check the agent never sees",
    "remove": "removes a check the agent never sees",
    "list": "shows the checks the agent must never see",
    "show": "shows the checks the agent must never see, and what their runs found",
}


def _person(what: str) -> Store:
    store = locate()
    require_person(store.paths, f"`ralphstate heldout {what}`", _DOES[what])
    return store


@click.group("heldout", context_settings=SETTINGS)
def heldout() -> None:
    """Checks the agent never sees: a command and its files (tests, fixtures) kept in
    your per-user store, outside the project.

    They run only where a completion is decided (the Stop hook, the task gate,
    `ralphstate run`'s verification), in a clean room with their files placed in it,
    once the visible checks pass; never in `ralphstate verify`. When one fails, the
    agent is told only that a held-out check for its criterion failed, and your hint;
    `ralphstate heldout show` tells you everything. Only the person may use these
    commands.

    \b
    Example:
      ralphstate heldout add "tests pass" --command "python -m pytest -q test_hidden.py" \\
          --file ~/hidden/test_hidden.py --hint "try other numbers"
      ralphstate heldout list
      ralphstate heldout show h1
      ralphstate heldout remove h1
    """


@heldout.command("add", context_settings=SETTINGS)
@click.argument("criterion")
@click.option("--command", "command", required=True, help="The check's shell command line.")
@click.option(
    "--file",
    "files",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A file the command needs, from outside the project; it is placed in the clean"
    " room's project directory under its name (repeat it for more).",
)
@click.option("--hint", default="", help="What the agent is told when it fails.")
def add(criterion: str, command: str, files: tuple[Path, ...], hint: str) -> None:
    """Add a held-out check to CRITERION (a name or its number).

    The files are copied into your per-user store, each by its content's hash. The
    check runs once now on the tree the loop started on: one that passes there is
    already true, and proves nothing of the work.

    \b
    Example:
      ralphstate heldout add "tests pass" --command "python -m pytest -q test_hidden.py" \\
          --file ~/hidden/test_hidden.py
    """

    store = _person("add")
    added = heldouts.add(store, criterion, command, list(files), hint)
    check = added.check
    output.text(f"Added held-out check {check['id']} to {visible(check['criterion'])!r}.")
    if added.start is True:
        output.text(
            "  already true: it passes on the tree the loop started on, so its pass proves"
            " nothing of the work; give it a check that fails until the work is done."
        )
    elif added.start is False:
        output.text("  it fails on the tree the loop started on, as it should before the work.")
    else:
        output.text(f"  not run on the tree the loop started on: {visible(added.why)}.")


@heldout.command("list", context_settings=SETTINGS)
def list_() -> None:
    """List this loop's held-out checks, in full.

    \b
    Example:
      ralphstate heldout list
    """

    store = _person("list")
    checks = heldoutstore.checks_of(store.paths)
    if not checks:
        output.text("No held-out checks (`ralphstate heldout add` adds one).")
        return
    criteria = store.load()["criteria"]
    for check in checks:
        _print_check(check, criteria)


def _print_check(check: dict[str, Any], criteria: list[str]) -> None:
    name = str(check.get("criterion"))
    gone = "" if name in criteria else "  (no such criterion now: never run)"
    output.text(f"{check.get('id')}  {visible(name)!r}{gone}")
    output.text(f"  command: {visible(str(check.get('command')))}")
    for entry in check.get("files") or []:
        output.text(
            f"  file: {visible(str(entry.get('name')))} ({entry.get('size')} bytes,"
            f" sha256 {str(entry.get('sha256'))[:16]})"
        )
    if check.get("hint"):
        output.text(f"  hint: {visible(str(check['hint']))}")
    found = check.get("alreadyTrue")
    start = "not run" if found is None else "already true" if found else "fails, as it should"
    output.text(f"  on the start tree: {start}")


@heldout.command("show", context_settings=SETTINGS)
@click.argument("check_id", required=False)
def show(check_id: str | None) -> None:
    """Show held-out check CHECK_ID (all of them without it) and what its runs found:
    which criterion, when, by which session, the exit code and the end of the output.

    \b
    Example:
      ralphstate heldout show h1
    """
    from ralphstate.storage.peruser import heldoutstore

    store = _person("show")
    criteria = store.load()["criteria"]
    checks = [heldouts.find(store, check_id)] if check_id else heldoutstore.checks_of(store.paths)
    for check in checks:
        _print_check(check, criteria)
    found = heldouts.runs(store, check_id)
    if not found:
        output.text("No runs yet.")
    for run in found:
        verdict = "passed" if run.get("passed") else "FAILED"
        session = f", session {run['session']}" if run.get("session") else ""
        output.text(
            f"run of {run.get('check')} at {run.get('at')} by {run.get('by')}{session}:"
            f" {verdict} ({visible(str(run.get('summary')))})"
        )
        for line in str(run.get("outputTail") or "").splitlines():
            output.text(f"    {visible(line)}")


@heldout.command("remove", context_settings=SETTINGS)
@click.argument("check_id")
def remove(check_id: str) -> None:
    """Remove held-out check CHECK_ID (see `ralphstate heldout list`).

    \b
    Example:
      ralphstate heldout remove h1
    """

    store = _person("remove")
    gone = heldouts.remove(store, check_id)
    output.text(f"Removed held-out check {gone.get('id')}.")
