"""The command table, `COMMANDS` in cli/app.py: every command in a module named after
it, every module of cli/ a command's (or shared by them all), every command named as it
is called, listed in help, and found when mistyped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import ralphstate
from ralphstate.cli.app import COMMANDS

CLI = Path(ralphstate.__file__).parent / "cli"
# The modules of cli/ that are no command's own: what every command shares, and
# `runflags`, which builds `run`'s options from their table.
SHARED = {"__init__", "app", "lazy", "options", "output", "runflags"}
# A command that lives in another command's module: none now (`watch` has its own).
ELSEWHERE: dict[str, str] = {}


def module_of(target: str) -> str:
    """`status` of "ralphstate.cli.status:status": the file name of a command's module."""
    return target.partition(":")[0].rpartition(".")[2]


def test_every_command_lives_in_a_module_named_after_it() -> None:
    """A group's subcommands live in the group's module (`criteria check` in
    criteria.py), so the root's table names every module."""
    misnamed = {
        name: module_of(target)
        for name, target in COMMANDS.items()
        if module_of(target) not in {name.replace("-", "_"), ELSEWHERE.get(name)}
    }
    assert misnamed == {}


def test_every_module_of_the_command_line_is_a_commands_or_shared() -> None:
    modules = {path.stem for path in CLI.glob("*.py")}
    commands = {module_of(target) for target in COMMANDS.values()}
    assert modules - commands - SHARED == set()
    assert commands | SHARED <= modules


# -- the command table -------------------------------------------------------------------
# The root group imports a command's module only when it is asked for (cli/lazy.py). In
# this process every command is loaded already (test_docs walks the tree), so what
# depends on laziness runs in a real process.


def test_every_name_in_the_command_table_is_that_command() -> None:
    for name, target in COMMANDS.items():
        module, _, attribute = target.partition(":")
        __import__(module)
        assert sys.modules[module].__dict__[attribute].name == name


def test_help_lists_every_command_in_order_in_a_real_process(project: Path) -> None:
    from tests.helpers import run_process

    done = run_process(["--help"], cwd=project)
    assert (done.returncode, done.stderr) == (0, b"")
    listed = done.stdout.decode().split("\nCommands:\n", 1)[1].splitlines()
    named = [line.split()[0] for line in listed if not line.startswith("   ")]
    # In the order a person meets them: setting up first, the morning's commands later.
    assert named == list(COMMANDS) and sorted(named) == sorted(COMMANDS)
    assert named[:4] == ["install", "init", "demo", "status"] and named[-1] == "uninstall"
    # Each summary is a whole sentence, never cut mid-phrase with "...".
    summaries = " ".join(done.stdout.decode().split("\nCommands:\n", 1)[1].split())
    assert "..." not in summaries and summaries.endswith(".")
    lines = [" ".join(line.split()) for line in listed]  # the column's width follows the names
    assert "criteria List, add, set or remove success criteria." in lines
    assert "status Show the loop: spec, criteria, steps, iteration, owner." in lines
    done = run_process(["criteria", "--help"], cwd=project)
    listed = done.stdout.decode().split("\nCommands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == [
        "add",
        "check",
        "list",
        "remove",
        "rubric",
        "set",
    ]


@pytest.mark.parametrize("word", ["start", "new"])
def test_a_word_for_starting_names_init_not_a_spelling_guess(project: Path, word: str) -> None:
    from tests.helpers import run_process

    done = run_process([word], cwd=project)
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (1, b"")
    assert err.startswith(
        f"ralphstate: No such command '{word}': a loop starts with"
        ' `ralphstate init "what to build" -c "tests pass"`'
    ), err
    assert "status" not in err and err.count("\n") == 1


def test_words_given_unquoted_get_a_quoting_hint(project: Path) -> None:
    from tests.helpers import run_process

    done = run_process(["init", "Fix", "the", "bug", "-c", "tests", "pass"], cwd=project)
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.decode() == (
        "ralphstate: Got unexpected extra arguments (the bug pass); put a text of several"
        ' words in quotes: ralphstate init "Fix the bug" -c "tests pass"'
        " (see `ralphstate init --help`)\n"
    )
    assert not (project / ".loop").exists()


@pytest.mark.parametrize(
    ("args", "close", "group"),
    [
        (["statsu"], "status", "ralphstate"),
        (["criteria", "chek"], "check", "ralphstate criteria"),
        (["step", "dne"], "done", "ralphstate step"),
    ],
)
def test_a_mistyped_command_in_a_real_process(
    project: Path, args: list[str], close: str, group: str
) -> None:
    import click

    from tests.helpers import run_process

    done = run_process(args, cwd=project)
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (1, b"")
    assert err.startswith(f"ralphstate: No such command {args[-1]!r}.")
    assert err.endswith(f" (see `{group} --help`)\n")
    if hasattr(click.exceptions, "NoSuchCommand"):  # click 8.4 and later name close ones
        assert f"'{close}'" in err
