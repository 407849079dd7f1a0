"""`ralphstate trust`: the loop's checks and `run`'s settings allowed on this machine."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core.text import visible
from ralphstate.loop import linkedspecs
from ralphstate.loop.person import require_person
from ralphstate.loop.project import locate
from ralphstate.run import runconfig
from ralphstate.storage.peruser import truststore
from ralphstate.verify import checks


@click.command(context_settings=SETTINGS)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="NAME",
    help="A variable the checks get, with its value in your shell now (repeat it for"
    " more); these replace the names given before. PATH, HOME, LANG and the other"
    " essentials are always recorded.",
)
def trust_command(env: tuple[str, ...]) -> None:
    """Allow this loop's check commands to run on this machine.

    Check commands are code. Checks that came with a repository, or were changed
    other than through ralphstate on this machine, are not run by `verify` or the
    hooks until you have read them and run this. It prints what it trusted.

    The checks run with the environment of your shell now, never the caller's:
    PATH, HOME, LANG, LC_*, TERM, TMPDIR and the other essentials, and the variables
    you name with --env (PYTEST_ADDOPTS, PYTHONPATH, NODE_OPTIONS, ... reach a check
    only so). What the checks start (the programs, the Python with its packages and
    path files, the configuration pytest says it read) is fingerprinted: a change is a
    review.

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
      ralphstate trust --env DATABASE_URL
    """
    store = locate()
    require_person(store.paths, "`ralphstate trust`")
    names = _names(env)
    configured = runconfig.load(store.paths.root, store.paths.dir)
    specs = linkedspecs.linked(store.paths.root, store.load(), configured.context)
    settings = runconfig.reviewed(configured, store.paths.root, specs)
    state = checks.trust_checks(store, settings, names)
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
    for name in truststore.env_names(store.paths):
        output.text(f"  checks get {visible(name)} as your shell has it now")
    n = len(armed)
    these = "this check" if n == 1 else f"these {n} checks"
    output.text(f"trusted {these} in {store.paths.root} on this machine")


def _names(env: tuple[str, ...]) -> list[str] | None:
    """The variable names given with --env (None: none given, keep those named before);
    RalphstateError for one that is not a variable name."""
    from ralphstate.core.errors import RalphstateError
    from ralphstate.storage.peruser import checkenv

    bad = checkenv.bad_names(env)
    if bad:
        raise RalphstateError(f"--env takes a variable name, not {visible(bad[0])!r}.")
    if len(env) > checkenv.MAX_NAMES:
        raise RalphstateError(f"--env names at most {checkenv.MAX_NAMES} variables.")
    return list(env) if env else None
