"""The hook list, written once: the rows of `agents.table.HOOK_ROWS`, against everything
else that names the hooks.

The package derives from the rows (the hook process's dispatch and its detached,
refusing and undecided sets, `install`'s subcommands); the agents map their own events
onto them; and the Claude Code plugin's launcher (hooks/), which runs before ralphstate
may be installed and so cannot import it, keeps copies: its `EVENTS` and `REFUSING`,
the hooks `own_pattern` (hooks/plugin_settings.py) recognises, the list in launch.py's
docstring and hooks/hooks.json. hooks/hooks.json is what `plugin_hooks` makes of the
table; after a change to the hooks, write it again with

    python -m tests.hooks.test_hook_list
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import pkgutil
import re
import sys
from typing import Any

import ralphstate.hooks
from ralphstate.agents import claude, table
from ralphstate.hooks import entry, faults
from tests.helpers import REPO
from tests.helpers.plugin import launcher_module, launcher_own

PLUGIN = REPO / "hooks"
HOOKS_JSON = PLUGIN / "hooks.json"
LAUNCH = PLUGIN / "launch.py"
# How the plugin's command names its launcher; the interpreters it tries, in order.
LAUNCHER = '"${CLAUDE_PLUGIN_ROOT}/hooks/launch.py"'
PYTHONS = ("python3", "python", "py -3")
REGENERATE = "hooks/hooks.json differs from the table: python -m tests.hooks.test_hook_list"


def launcher() -> Any:
    """hooks/plugin_launcher.py, read now."""
    return launcher_module("plugin_launcher")


def claude_events() -> dict[str, str]:
    """Claude Code's event for each hook it has (`install --tasks`'s too), in the
    table's order."""
    by_hook = {hook: event for event, hook in claude.AGENT.hook_file.all_events.items()}
    return {name: by_hook[name] for name in table.HOOKS if name in by_hook}


def plugin_command(name: str) -> str:
    """The plugin's command for the hook `name`: each interpreter in turn, the next
    only when the one before could not run the launcher. A refusing hook's exit 2 is
    the refusal, passed through, and a missing launcher (Python's own exit 2) lets the
    agent go."""
    if not table.hook(name).refusing:
        return " || ".join(f"{python} {LAUNCHER} {name}" for python in PYTHONS)
    first, second, third = (f"{python} {LAUNCHER} {name}" for python in PYTHONS)
    return (
        f'[ -f {LAUNCHER} ] || {{ echo "ralphstate: the plugin has no hooks/launch.py'
        ' (being updated?); the task is not checked." >&2; exit 0; }; '
        f"{first} || {{ [ $? -eq 2 ] && exit 2; {second} || {{ [ $? -eq 2 ] && exit 2;"
        f" {third}; }}; }}"
    )


def plugin_hooks() -> dict[str, list[dict[str, Any]]]:
    """hooks/hooks.json's `hooks`: each hook Claude Code has, in the table's order, as
    `install` writes it but for the command, which runs the plugin's launcher."""
    hook_file = claude.AGENT.hook_file
    found: dict[str, list[dict[str, Any]]] = {}
    for name, event in claude_events().items():
        group: dict[str, Any] = {}
        if event in hook_file.matcher_events:
            group["matcher"] = hook_file.matchers.get(event, "")
        command = {"type": "command", "command": plugin_command(name)}
        group["hooks"] = [{**command, "timeout": hook_file.seconds(name)}]
        found[event] = [group]
    return found


def plugin_hooks_json() -> str:
    """hooks/hooks.json as the table makes it, its description kept."""
    description = json.loads(HOOKS_JSON.read_text(encoding="utf-8"))["description"]
    return json.dumps({"description": description, "hooks": plugin_hooks()}, indent=2) + "\n"


# -- the package ---------------------------------------------------------------------------


def test_every_hook_is_one_row_answered_by_the_module_named_after_it() -> None:
    assert len(set(table.HOOKS)) == len(table.HOOKS)
    answering = []
    for info in pkgutil.iter_modules(ralphstate.hooks.__path__):
        module = importlib.import_module(f"ralphstate.hooks.{info.name}")
        if callable(getattr(module, "handle", None)):
            answering.append(info.name)
    assert sorted(answering) == sorted(row.module for row in table.HOOK_ROWS)
    for row in table.HOOK_ROWS:
        module = sys.modules[f"ralphstate.hooks.{row.module}"]
        assert entry._handler(row.name) is module.handle, row.name


def marked(flag: str) -> tuple[str, ...]:
    """The hooks whose row has `flag` (`detached`, `refusing`, `undecided`) set."""
    return tuple(row.name for row in table.HOOK_ROWS if getattr(row, flag))


def test_the_hook_process_sets_are_the_rows_so_marked() -> None:
    assert marked("detached") == entry.DETACHED
    assert marked("refusing") == faults.REFUSING
    assert marked("undecided") == faults.UNDECIDED


def test_the_agents_map_their_events_onto_the_hooks_and_every_hook_is_mapped() -> None:
    mapped: set[str] = set()
    for agent in table.every().values():
        hooks = set(agent.hook_file.all_events.values())
        assert hooks <= set(table.HOOKS), (agent.name, hooks - set(table.HOOKS))
        mapped |= hooks
    assert mapped == set(table.HOOKS), set(table.HOOKS) - mapped


# -- the plugin's copies -------------------------------------------------------------------


def test_the_launchers_events_are_claude_codes_hooks_in_the_tables_order() -> None:
    assert list(launcher().EVENTS.items()) == list(claude_events().items())


def test_the_launcher_passes_through_the_refusals_of_the_refusing_hooks() -> None:
    refusing = tuple(name for name in faults.REFUSING if name in claude_events())
    assert refusing == launcher().REFUSING


def test_the_launcher_recognises_the_command_of_every_hook_it_runs() -> None:
    """Each form of our command the launcher recognises (hooks/plugin_settings.py's
    `own_pattern`) is followed by the same hooks: those the launcher runs (an installed
    hook of any other event is never asked about)."""
    pattern = launcher_own().pattern
    groups = re.findall(r"\(([a-z|-]+)\)\(\?=", pattern)
    assert len(groups) == 4, pattern
    for group in groups:
        assert group.split("|") == list(claude_events()), group


def test_launch_py_says_the_hooks_it_runs() -> None:
    """Its docstring's first line: `launch.py stop|session-start|...`, `cli ARGS`."""
    doc = ast.get_docstring(ast.parse(LAUNCH.read_text(encoding="utf-8")))
    said = re.search(r"`launch\.py ([a-z|\s-]+)`", doc or "")
    assert said is not None, doc
    assert re.sub(r"\s", "", said.group(1)).split("|") == list(claude_events())


def test_the_plugins_hooks_json_is_what_the_table_makes() -> None:
    assert HOOKS_JSON.read_text(encoding="utf-8") == plugin_hooks_json(), REGENERATE


if __name__ == "__main__":
    HOOKS_JSON.write_text(plugin_hooks_json(), encoding="utf-8")
    print(f"wrote {HOOKS_JSON}")
