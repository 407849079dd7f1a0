"""Every agent ralphstate knows, and every hook it has: the one table of both.

An agent is a module of this package named as the agent is (`claude`, `codex`, ...),
whose `AGENT` fills the contract of `agents.contract`; `NAMES` lists them, Claude Code
first (the default of every `--agent`). A module is imported when its agent is asked
for: the hook process, which serves one agent, imports that one alone (docs/explanation/design.md,
"The hot path"). tests/agents/test_table.py holds `NAMES` against the modules and
against `core.schema.AgentName`.

A hook is a row of `HOOK_ROWS`: its name, the module of `ralphstate.hooks` that answers
it, and what the hook process does with it (`Hook`). The hook process imports that one
module, as it imports one agent's; tests/hooks/test_hook_list.py holds the rows against
the modules, the agents' events and the plugin's own copies of the list (hooks/).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ralphstate.agents.contract import Agent

NAMES = ("claude", "codex", "gemini", "cursor", "copilot", "opencode")


class Hook:
    """A hook ralphstate has: `name` is what `ralphstate hook NAME` and the installed
    command take, and `module` the module of `ralphstate.hooks` named after it, whose
    `handle(agent, hook_input, loop)` answers it. `detached`: the client neither waits
    for it nor reads its output, so it finishes in a process of its own (`hooks.entry`);
    `refusing`: it may refuse what the agent does by exiting 2 with the reason on
    stderr; `undecided`: its fault decides nothing rather than allows (`hooks.faults`).
    """

    __slots__ = ("detached", "module", "name", "refusing", "undecided")

    def __init__(
        self, name: str, *, detached: bool = False, refusing: bool = False, undecided: bool = False
    ) -> None:
        self.name = name
        self.module = name.replace("-", "_")
        self.detached = detached
        self.refusing = refusing
        self.undecided = undecided


# Every hook, the one list of them: the hook process's dispatch, the detached, refusing
# and undecided sets, and `install`'s subcommands derive from it; each agent maps its own
# events onto the names (`contract.HookFile.events`), and tests/hooks/test_hook_list.py
# holds the Claude Code plugin's copies (hooks/) to it.
HOOK_ROWS = (
    Hook("stop"),
    Hook("session-start"),
    Hook("pre-compact"),
    Hook("stop-failure", detached=True),
    Hook("post-tool-use"),
    Hook("task-completed", refusing=True),
    Hook("pre-tool-use", undecided=True),
    Hook("session-end"),
    Hook("permission-request", undecided=True),
    Hook("config-change"),
)
HOOKS = tuple(row.name for row in HOOK_ROWS)


def hook(name: str) -> Hook:
    """The hook `name`; KeyError when there is none."""
    for row in HOOK_ROWS:
        if row.name == name:
            return row
    raise KeyError(f"unknown hook {name!r}; expected one of {', '.join(HOOKS)}")


def get(name: str) -> Agent:
    """The agent `name`; KeyError when there is none."""
    if name not in NAMES:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(NAMES)}")
    module = f"ralphstate.agents.{name}"
    if module not in sys.modules:
        __import__(module)
    agent: Agent = sys.modules[module].AGENT
    return agent


def every() -> dict[str, Agent]:
    """Every agent, by name, in the table's order."""
    return {name: get(name) for name in NAMES}


def variables() -> tuple[str, ...]:
    """Every variable by which an agent says which session, process and project its
    hooks and shell commands run in (`Agent.variables`)."""
    return tuple(name for agent in every().values() for name in agent.variables)


def session_from_env(environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(agent, session id) of the agent session whose shell runs this command;
    (agent, None) inside an agent that does not say its session; (None, None) outside.

    The innermost agent wins when agents are nested, as far as the variables tell:
    those that say their session are asked first, then those that only say they are
    there, and Claude Code last, because an agent started from its Bash tool inherits
    its variables."""
    agents = list(every().values())
    default = agents.pop(0)
    for agent in [*sorted(agents, key=lambda a: not a.session_env), default]:
        for name in agent.session_env:
            if environ.get(name):
                return agent.name, environ[name]
        if agent.marker_env and environ.get(agent.marker_env):
            return agent.name, None
    return None, None
