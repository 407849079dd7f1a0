"""Docs that are tested: every command has help with an example, the commands page has a
section for every command, and the generated reference shows every command's help."""

from __future__ import annotations

import re
from typing import Any

import click
import pytest

from ralphstate.cli.app import cli
from tests.helpers import REPO

COMMANDS = REPO / "docs" / "reference" / "commands.md"
# The hooks are named where their decisions are told.
HOOKS_PAGE = REPO / "docs" / "explanation" / "hooks.md"
CLI_REFERENCE = REPO / "docs" / "reference" / "cli.md"
CONTRIBUTING = REPO / "CONTRIBUTING.md"
# `ralphstate hook ...` is dispatched before click (the hot path); it is documented too.
HOOKS = ("stop", "session-start", "pre-compact")


def commands() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command and subcommand, as (path of names, command)."""
    cli.load_all()  # the program imports a command's module only when it is asked for
    found: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(group: click.Group, prefix: tuple[str, ...]) -> None:
        for name, command in sorted(group.commands.items()):
            found.append(((*prefix, name), command))
            if isinstance(command, click.Group):
                walk(command, (*prefix, name))

    walk(cli, ())
    return found


ALL = commands()
TOP = [path[0] for path, _ in ALL if len(path) == 1]
SUB = [path for path, _ in ALL if len(path) > 1]


def test_the_tree_is_what_the_contract_names() -> None:
    expected = {"init", "status", "show", "criteria", "step", "pause", "resume", "adopt"}
    expected |= {"cancel", "log", "list"}
    assert expected <= set(TOP)
    assert {("criteria", s) for s in ("list", "add", "set", "remove")} <= set(SUB)
    assert {("step", s) for s in ("add", "done", "undo")} <= set(SUB)


@pytest.mark.parametrize(("path", "command"), ALL, ids=[" ".join(p) for p, _ in ALL])
def test_every_command_has_help_with_an_example(
    path: tuple[str, ...], command: click.Command, rs: Any
) -> None:
    assert command.help and "Example" in command.help
    result = rs(*path, "--help")
    assert (result.code, result.err) == (0, "")
    assert result.out.startswith(f"Usage: ralphstate {' '.join(path)} ")
    assert "Example" in result.out
    first_line = " ".join(command.help.split("\n")[0].split())
    assert first_line in " ".join(result.out.split())


def commands_page() -> str:
    return COMMANDS.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", [*TOP, "hook", "statusline"])
def test_every_command_has_a_section_in_the_commands_page(name: str) -> None:
    heading = re.compile(rf"^#{{2,4}} .*`ralphstate {re.escape(name)}(`| )", re.MULTILINE)
    if not heading.search(commands_page()):
        pytest.fail(f"docs/reference/commands.md has no '## `ralphstate {name}`' section")


@pytest.mark.parametrize("path", [*SUB, *(("hook", h) for h in HOOKS)], ids=" ".join)
def test_every_subcommand_is_named_in_the_docs(path: tuple[str, ...]) -> None:
    if " ".join(path) not in commands_page() + HOOKS_PAGE.read_text(encoding="utf-8"):
        pytest.fail(f"docs/reference never names `ralphstate {' '.join(path)}`")


@pytest.mark.parametrize("path", [(), *(p for p, _ in ALL), ("hook",), ("statusline",)], ids=str)
def test_the_generated_reference_shows_every_command(path: tuple[str, ...]) -> None:
    text = CLI_REFERENCE.read_text(encoding="utf-8")
    name = " ".join(("ralphstate", *path))
    assert f"\n## `{name}`\n\n```text\n" in text
    assert f"Usage: {name} " in text or f"usage: {name} " in text


# A word in backticks that names a file or directory of this repository by its path
# (`ralphstate/core/decide.py`, `tests/e2e/codex`, `.ci/run`).
REPO_PATH = re.compile(r"[\w.-]+(/[\w.-]+)+/?")


def test_every_file_contributing_names_exists() -> None:
    """The recipes name every file a change touches; each of those files is there. A
    placeholder (`<name>`) or a pattern (`*`) is no file, and is left out."""
    text = CONTRIBUTING.read_text(encoding="utf-8")
    words = [word for span in re.findall(r"`([^`\n]+)`", text) for word in span.split()]
    named = {word.strip("'\"(),;:") for word in words}
    paths = sorted(word for word in named if REPO_PATH.fullmatch(word))
    assert "ralphstate/agents/table.py" in paths and "tests/core/test_decide.py" in paths
    missing = [path for path in paths if not (REPO / path).exists()]
    assert missing == []


def test_each_recipe_names_an_example_commit_that_exists() -> None:
    """Each recipe of CONTRIBUTING shows the commit that did what it describes."""
    import subprocess

    text = CONTRIBUTING.read_text(encoding="utf-8")
    recipes = re.split(r"^### ", text.split("## Recipes", 1)[1], flags=re.MULTILINE)[1:]
    examples = [re.search(r"^Example: `([0-9a-f]{7,40})`", r, re.MULTILINE) for r in recipes]
    assert recipes and all(examples), "a recipe without its example commit"
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True
    )
    if shallow.returncode != 0 or shallow.stdout.strip() == "true":
        pytest.skip("no full git history here to find the commits in")
    for match in examples:
        assert match is not None
        found = subprocess.run(
            ["git", "cat-file", "-e", f"{match.group(1)}^{{commit}}"], cwd=REPO, check=False
        )
        assert found.returncode == 0, f"no commit {match.group(1)}"
