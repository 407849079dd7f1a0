"""Who made a change to a loop: the person, an agent session, or an iteration of
`ralphstate run` (docs/explanation/proof.md, "Actors").

ralphstate tells them apart by the variables each agent gives the commands its shell
runs (`agents.table.session_from_env`), by `CLAUDECODE` and `CLAUDE_CODE_CHILD_SESSION`
(set in every process Claude Code starts), and by `RALPHSTATE_RUNNER` (set by
`ralphstate run` in the agents it starts). A command with none of them runs in the
person's own shell. The history, `log` and the report name the actor of each change.

An actor is a small dict, as it is written in the history and in the ledger:
`{"kind": "person"}`, `{"kind": "agent", "agent": NAME, "session": ID}` (the session
when the agent says it), or `{"kind": "run", "agent": NAME, "session": ID}`; a graded
criterion's verdict is the reviewer's, `{"kind": "reviewer", "command": CMD, "model": M}`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ralphstate.core.ownership import ENV_RUNNER

Actor = dict[str, str]
AgentSession = tuple[str | None, str | None]

# Variables that say "a process Claude Code started", whatever its session.
_INSIDE_CLAUDE = ("CLAUDECODE", "CLAUDE_CODE_CHILD_SESSION", "CLAUDE_CODE_SESSION_ID")

PERSON: Actor = {"kind": "person"}
# The actor of a reviewer's verdict: `{"kind": "reviewer", "command": CMD, "model": M}`,
# recorded by ralphstate alone where a completion is decided (core/grading.py).
REVIEWER = "reviewer"
# Every variable an agent sets for its shell commands begins with one of these
# (tests/core/test_actor.py holds them against `agents.table.variables`): a process whose
# environment has none runs in the person's shell, and no agent module is imported.
AGENT_PREFIXES = ("CLAUDE", "CODEX", "GEMINI", "CURSOR", "COPILOT", "OPENCODE", ENV_RUNNER)


def maybe_agent(environ: Mapping[str, str]) -> bool:
    """Whether `environ` may be an agent's: some variable begins as an agent's do."""
    return any(name.upper().startswith(AGENT_PREFIXES) for name in environ)


def from_env(environ: Mapping[str, str], found: AgentSession = (None, None)) -> Actor:
    """The actor whose process has the environment `environ`, in which the agents'
    variables found the agent session `found` (`agents.table.session_from_env`)."""
    agent, session = found
    if agent is None and any(environ.get(name) for name in _INSIDE_CLAUDE):
        agent = "claude"
    runner = bool(environ.get(ENV_RUNNER))
    if agent is None and not runner:
        return dict(PERSON)
    actor: Actor = {"kind": "run" if runner else "agent", "agent": agent or "unknown"}
    if session:
        actor["session"] = session
    return actor


_current: list[Actor] = []
_finder: list[Callable[[], Actor]] = []


def set_current(actor: Actor) -> None:
    """Make `actor` the one this process's changes are recorded as (a hook: the session
    it serves)."""
    _current[:] = [actor]


def find_with(finder: Callable[[], Actor]) -> None:
    """Have `finder` tell this process's actor when one is first asked for (the command
    line: from the environment and the agents' variables, `loop.project.current_actor`)."""
    _current.clear()
    _finder[:] = [finder]


def reset() -> None:
    """Forget the actor set or found: the next is read from the environment."""
    _current.clear()
    _finder.clear()


def current() -> Actor:
    """The actor of this process: as set or found, else read from the environment
    without the agents' own session variables."""
    if not _current:
        if _finder:
            _current.append(_finder[0]())
        else:
            import os

            return from_env(os.environ)
    return dict(_current[0])


def session(agent: str, session_id: object, runner: bool = False) -> Actor:
    """The actor of a hook: the agent session whose event it handles (inside an
    iteration of `ralphstate run` with `runner`)."""
    actor: Actor = {"kind": "run" if runner else "agent", "agent": agent}
    if isinstance(session_id, str) and session_id:
        actor["session"] = session_id
    return actor


def is_person(actor: object) -> bool:
    return isinstance(actor, dict) and actor.get("kind") == "person"


def describe(actor: object) -> str:
    """The actor in a few words: "you", "claude session 1a2b3c4d", "ralphstate run
    (claude)"; "a hand edit" for a change no ralphstate command made."""
    if not isinstance(actor, dict):
        return "someone unknown"
    kind = actor.get("kind")
    if kind == "person":
        return "you"
    if kind == "edit":
        return "a hand edit of state.json"
    if kind == REVIEWER:  # a graded criterion's reviewer (core/grading.py), run by ralphstate
        said = actor.get("model") or actor.get("command") or "its command"
        return f"the reviewer ({' '.join(str(said).split())[:60]})"
    agent = str(actor.get("agent") or "")
    sid = actor.get("session")
    if kind == "run":
        known = agent and agent != "unknown"
        return f"the agent of ralphstate run ({agent})" if known else "the agent of ralphstate run"
    if kind == "unknown":
        return "no record (the loop was first seen as it was)"
    if not agent:
        return "an agent session"
    return f"{agent} session {str(sid)[:8]}" if sid else f"a {agent} session"
