"""`ralphstate config`: the loop's settings, shown and changed."""

from __future__ import annotations

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.loop import configure
from ralphstate.loop.project import locate
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.repo import testfiles


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
                        do not fit are verified by the hook in the background
      verify-jobs       how many checks run at once (default: the processors,
                        at least 16)
      max-cost          the loop's cost budget in US dollars, or none
      max-tokens        the loop's token budget, or none: the loop pauses once
                        its usage reaches it (inside a session too)
      max-duration      the loop's time budget (8h, 90m, 1h30m), or none
      owner-timeout     how long the owning session may leave the loop untouched
                        before a session that starts here takes it (30m, 2h),
                        off, or default (30m)
      reviewer          the command that grades the criteria with a rubric,
                        reading its prompt on stdin (person only; `default`:
                        Claude Code with no tools)
      checks-confined   on/off: the checks run confined (the default), or, the
                        person's alone, every check unconfined (this user's,
                        every loop)
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
      ralphstate config reviewer "claude -p --tools '' --model opus"
    """
    store = locate()
    if key == "checks-confined":
        _checks_confined(store, values)
    elif key == "guard":
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
    if not values:
        guards = store.load()["guards"]
        for line in [visible(g) for g in guards] if guards else [configure.guards_shown(guards)]:
            output.text(line)
        return
    guards, changed = configure.change_guards(store, values[0], list(values[1:]))
    unchanged = "" if changed else " (unchanged)"
    output.text(testfiles.status_line(store.paths.root, guards) + unchanged)


def _checks_confined(store: Store, values: tuple[str, ...]) -> None:
    """`config checks-confined [on|off]`: the person's switch for the checks'
    confinement (verify/confine.py); turning it off is the person's alone."""
    from ralphstate.verify import confine

    if not values:
        output.text(f"checks-confined: {'off' if confine.switched_off() else 'on'}")
        return
    if len(values) != 1 or values[0] not in ("on", "off"):
        raise RalphstateError("checks-confined takes on or off.")
    if values[0] == "off":
        from ralphstate.loop.person import require_person

        require_person(store.paths, "`ralphstate config checks-confined off`")
    try:
        confine.switch(off=values[0] == "off")
    except OSError as exc:
        raise RalphstateError(
            f"could not change the checks' confinement: {exc.strerror or exc}."
        ) from None
    output.text(f"checks-confined: {values[0]}")
