"""The table of agents against the agents ralphstate knows: every name of
`core.schema.AgentName` has exactly one module of `agents/` with its `AGENT`, and every
such module a row; what the tests clear of the environment comes from the rows."""

from __future__ import annotations

import importlib
import pkgutil
from typing import get_args

import ralphstate.agents
from ralphstate.agents import table
from ralphstate.agents.contract import Agent
from ralphstate.core.schema import DEFAULT_AGENT, AgentName
from tests.conftest import LEAKY_ENV


def _modules_with_an_agent() -> list[str]:
    found = []
    for info in pkgutil.iter_modules(ralphstate.agents.__path__):
        module = importlib.import_module(f"ralphstate.agents.{info.name}")
        if isinstance(getattr(module, "AGENT", None), Agent):
            found.append(info.name)
    return found


def test_every_agent_name_has_one_row_and_one_module_and_no_other() -> None:
    assert get_args(AgentName) == table.NAMES
    assert len(set(table.NAMES)) == len(table.NAMES)
    assert sorted(_modules_with_an_agent()) == sorted(table.NAMES)
    for name in table.NAMES:
        assert table.get(name).name == name
    assert table.NAMES[0] == DEFAULT_AGENT


def test_an_unknown_agent_is_named_with_the_known_ones() -> None:
    for name in ("nobody", "base", "table", "transcript"):
        try:
            table.get(name)
        except KeyError as exc:
            assert str(exc) == f'"unknown agent {name!r}; known: {", ".join(table.NAMES)}"'
        else:
            raise AssertionError(f"{name} was taken for an agent")


def test_the_environment_the_tests_clear_is_every_agents_variables() -> None:
    names = [name for agent in table.every().values() for name in agent.variables]
    assert set(names) <= set(LEAKY_ENV)
    assert "CLAUDE_CODE_SESSION_ID" in names and "GEMINI_CLI" in names


def test_each_hook_file_maps_its_events_onto_ralphstates_hooks() -> None:
    for agent in table.every().values():
        hook_file = agent.hook_file
        assert hook_file.events, agent.name
        assert set(hook_file.all_events.values()) <= set(table.HOOKS), agent.name
        assert hook_file.default_scope in hook_file.scopes, agent.name
        assert set(hook_file.matchers) <= set(hook_file.all_events), agent.name
