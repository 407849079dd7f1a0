"""`run`'s options are declared once, in run/runoptions.py: every row is a flag of
`run --help`, a key the configuration reader takes, and a field of the plan, and no
option of `run` is declared anywhere else."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import click

from ralphstate.cli.run import run_command
from ralphstate.loop.project import locate
from ralphstate.run import plan, runconfig, runoptions
from tests.helpers import REPO

# The plan's fields that no option gives: what it works out from them.
WORKED_OUT = {"argv", "limit", "sources", "review", "confinement"}
# A command line that gives every option the plan takes a value the example
# configuration of docs/reference/config.md does not.
COMMAND_LINE = [
    *("--agent", "first-agent --go", "--agent", "second-agent"),
    *("--prompt-mode", "arg", "--max", "4", "--timeout", "90", "--context", "NOTES.md"),
    *("--commit", "--branch", "loop/x", "--allow-dirty"),
    *("--max-cost", "2.5", "--max-tokens", "1000", "--max-duration", "2h"),
    *("--on-limit", "pause", "--idle-timeout", "30", "--notify", "notify-me"),
    *("--sandbox", "off", "--no-sandbox", "--no-network", "--shell", "--strict"),
    "--check-in",
    *("--env", "SOME_TOKEN"),
    *("--network", "full"),
    *("--allow-host", "api.example.test"),
]


def flagged() -> list[runoptions.Option]:
    return [option for option in runoptions.OPTIONS if option.flags]


def example_config() -> str:
    """The `[tool.ralphstate.run]` example of docs/reference/config.md."""
    docs = (REPO / "docs" / "reference" / "config.md").read_text("utf-8")
    found = re.search(
        r"```toml\n(# pyproject.toml\n\[tool\.ralphstate\.run\]\n.*?)```", docs, re.DOTALL
    )
    assert found, "docs/reference/config.md has no example of [tool.ralphstate.run]"
    return found.group(1)


def started(rs: Any, project: Path) -> tuple[Any, Any]:
    """A loop in `project` whose pyproject.toml is the example configuration."""
    assert rs("init", "Build the parser", "-c", "tests pass").code == 0
    (project / "pyproject.toml").write_text(example_config())
    for name in ("docs/ARCHITECTURE.md", "NOTES.md"):
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text("context\n")
    store = locate()
    return store, store.load()


def test_every_row_with_flags_is_an_option_of_run_and_in_its_help(rs: Any) -> None:
    help_text = rs("run", "--help").out
    for option in flagged():
        shown = " / ".join(option.flags[0].split("/"))  # --shell / --no-shell
        assert re.search(rf"^  {re.escape(shown)}(\s|$)", help_text, re.MULTILINE), shown
        words = " ".join(option.help.split()[:4])  # its help's first words
        assert words in " ".join(help_text.split()), option.name


def test_no_option_of_run_is_declared_outside_the_table() -> None:
    params = [p for p in run_command.params if p.name != "help"]
    assert all(isinstance(p, click.Option) for p in params)
    assert [p.name for p in params] == [option.name for option in flagged()]
    for param, option in zip(params, flagged(), strict=True):
        declared = [*param.opts, *param.secondary_opts]
        assert declared == [f for pair in option.flags for f in pair.split("/")], option.name


def test_every_key_is_a_rows_long_flag_or_its_own_and_the_reader_takes_it(
    tmp_path: Path,
) -> None:
    for option in runoptions.OPTIONS:
        if option.flags and option.key is not None and option.key_name is None:
            assert f"--{option.key}" == option.flags[0].split("/")[0]
    (tmp_path / "pyproject.toml").write_text(example_config())
    config = runconfig.load(tmp_path, tmp_path / ".loop")
    configured = {option.name for option in runoptions.OPTIONS if option.key is not None}
    assert set(config.values) == configured, "a key the example gives was not read"
    assert tuple(o.key for o in runoptions.OPTIONS if o.key is not None) == runconfig.KEYS


def test_every_row_the_plan_takes_is_a_field_of_the_plan_and_nothing_else_is() -> None:
    fields = {field.name for field in dataclasses.fields(plan.Plan)}
    planned = {option.name for option in runoptions.OPTIONS if option.planned}
    assert planned <= fields, "a row the plan takes that is not a field of plan.Plan"
    assert fields - planned == WORKED_OUT, "a field of plan.Plan that is not in the table"


def test_the_plan_takes_each_key_from_the_configuration(rs: Any, project: Path) -> None:
    store, state = started(rs, project)
    config = runconfig.load(store.paths.root, store.paths.dir)
    made = plan.make_plan(store, state, {})
    for option in runoptions.OPTIONS:
        if option.planned and option.key is not None:
            assert getattr(made, option.name) == config.values[option.name], option.name


def test_the_plan_takes_each_option_from_the_command_line_over_the_configuration(
    rs: Any, project: Path
) -> None:
    store, state = started(rs, project)
    given = run_command.make_context("run", list(COMMAND_LINE)).params
    assert {name for name, value in given.items() if value is not None} == {
        option.name for option in flagged() if option.planned
    }, "COMMAND_LINE gives every option the plan takes, and only those"
    made = plan.make_plan(store, state, given)
    for option in flagged():
        if option.planned:
            assert getattr(made, option.name) == given[option.name], option.name


def test_an_option_not_given_is_the_rows_default(rs: Any, project: Path) -> None:
    assert rs("init", "Build the parser", "-c", "tests pass").code == 0
    store = locate()
    given = run_command.make_context("run", ["--agent", "agent"]).params
    assert [name for name, value in given.items() if value is not None] == ["agents"]
    made = plan.make_plan(store, store.load(), given)
    for option in runoptions.OPTIONS:
        if option.planned and option.name not in {"agents", "prompt_mode"}:
            assert getattr(made, option.name) == option.default, option.name


def test_the_reference_lists_the_options_in_the_tables_order() -> None:
    docs = (REPO / "docs" / "reference" / "run.md").read_text("utf-8")
    section = docs.split("\n## `ralphstate run`\n")[1].split("\n## ")[0]
    synopsis = section.split("```")[1]
    rows = [line for line in section.splitlines() if line.startswith("| `--")]
    flags = [option.flags[0].split("/")[0] for option in flagged()]
    assert re.findall(r"\[(--[a-z-]+)", synopsis) == flags, "run.md's synopsis"
    assert [re.findall(r"--[a-z-]+", row)[0] for row in rows] == flags, "run.md's table"
