"""How each agent's hook input maps onto the one decision, and how the decision
is rendered in that agent's output shape. An adapter is a small table."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ralphstate.decide import Decision

    Output = dict[str, Any]


class Agent:
    """One agent's field names and output shapes."""

    def __init__(
        self,
        name: str,
        *,
        session_key: str,
        message_key: str | None,
        transcript_key: str | None,
        cwd_key: str,
    ) -> None:
        self.name = name
        self.session_key = session_key
        self.message_key = message_key
        self.transcript_key = transcript_key
        self.cwd_key = cwd_key

    def session_id(self, data: dict[str, Any]) -> str | None:
        value = data.get(self.session_key)
        return value if isinstance(value, str) and value else None

    def cwd(self, data: dict[str, Any]) -> str | None:
        value = data.get(self.cwd_key)
        return value if isinstance(value, str) and value else None

    def last_message(self, data: dict[str, Any]) -> str | None:
        """The reply that ended the turn; the transcript's tail only when the field is absent."""
        if self.message_key and self.message_key in data:
            value = data[self.message_key]
            return value if isinstance(value, str) else None
        path = data.get(self.transcript_key) if self.transcript_key else None
        if not isinstance(path, str) or not path:
            return None
        from ralphstate.transcript import last_assistant_text

        return last_assistant_text(path)

    def render_stop(self, decision: Decision) -> Output | None:
        if decision.block:
            out: Output = {"decision": "block", "reason": decision.reason}
            if decision.system_message:
                out["systemMessage"] = decision.system_message
            return out
        if decision.system_message:
            return {"systemMessage": decision.system_message}
        return None

    def render_context(self, context: str, message: str | None) -> Output:
        out: Output = {
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": context,
            }
        }
        if message:
            out["systemMessage"] = message
        return out

    def render_notice(self, message: str) -> Output:
        return {"systemMessage": message}


CLAUDE = Agent(
    name="claude",
    session_key="session_id",
    message_key="last_assistant_message",
    transcript_key="transcript_path",
    cwd_key="cwd",
)

AGENTS = {agent.name: agent for agent in (CLAUDE,)}


def get(name: str) -> Agent:
    try:
        return AGENTS[name]
    except KeyError:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(AGENTS)}") from None
