"""How each agent's hook input maps onto the one decision, and how the decision
is rendered in that agent's output shape. An adapter is a small table."""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time: docs/design.md, "The hot path"
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ralphstate.core.decide import Decision
    from ralphstate.core.state import AgentName

    # What a hook reads (one JSON object) and prints (one JSON object).
    HookInput = dict[str, object]
    Output = dict[str, object]


# The hooks ralphstate has, by the name `ralphstate hook NAME` and the installed
# command take; each agent maps its own events onto them (install/agents.py).
HOOKS = (
    "stop",
    "session-start",
    "pre-compact",
    "stop-failure",
    "post-tool-use",
    "task-completed",
)


class Agent:
    """One agent's field names and output shapes.

    Input: `session_key`, `message_key` (the reply that ended the turn), `transcript_key`
    and `transcript_format` (where to find that reply when the input has no message
    field), `cwd_key` (a path, or a list of paths whose first is taken), `project_env`
    (the variable naming the project root in the hook's environment), `finished`
    (key and values meaning the turn ended by itself rather than by the person),
    `joined_replies` (the message field joins every reply of the prompt, so the
    transcript is read first and the field is only the fallback), `usage_format` (the
    transcript at `transcript_key` gives each reply's tokens in this shape:
    agents/transcript_usage.py).
    Environment of the agent's own shell commands: `session_env` (variables carrying
    the session id), `marker_env` (a variable saying "inside this agent"), `process_env`
    (the agent's process id, which outlives a session: Claude Code's `/clear`).
    Output: `block_word` for `{"decision": WORD, "reason": ...}`, or `followup` for
    `{"followup_message": ...}`; `context_key` for the SessionStart context;
    `notices`: whether the agent shows a `systemMessage` to the person.
    """

    def __init__(
        self,
        name: AgentName,
        *,
        session_key: str,
        message_key: str | None,
        transcript_key: str | None,
        cwd_key: str,
        transcript_format: str = "claude",
        project_env: str | None = None,
        finished: tuple[str, tuple[str, ...]] | None = None,
        session_env: tuple[str, ...] = (),
        marker_env: str | None = None,
        process_env: str | None = None,
        block_word: str = "block",
        followup: bool = False,
        context_key: str = "hookSpecificOutput",
        notices: bool = True,
        transcript_wait: float = 0.0,
        joined_replies: bool = False,
        usage_format: str | None = None,
    ) -> None:
        self.name = name
        self.session_key = session_key
        self.message_key = message_key
        self.transcript_key = transcript_key
        self.cwd_key = cwd_key
        self.transcript_format = transcript_format
        self.project_env = project_env
        self.finished = finished
        self.session_env = session_env
        self.marker_env = marker_env
        self.process_env = process_env
        self.block_word = block_word
        self.followup = followup
        self.context_key = context_key
        self.notices = notices
        self.transcript_wait = transcript_wait
        self.joined_replies = joined_replies
        self.usage_format = usage_format

    def session_id(self, data: HookInput) -> str | None:
        value = data.get(self.session_key)
        return value if isinstance(value, str) and value else None

    def cwd(self, data: HookInput) -> str | None:
        value = data.get(self.cwd_key)
        if isinstance(value, list):
            value = value[0] if value else None
        return value if isinstance(value, str) and value else None

    def process_id(self, environ: Mapping[str, str]) -> str | None:
        """The id of the agent process this hook or command runs under, when it says."""
        return (environ.get(self.process_env) or None) if self.process_env else None

    def project_dir(self, environ: Mapping[str, str]) -> str | None:
        return (environ.get(self.project_env) or None) if self.project_env else None

    def turn_finished(self, data: HookInput) -> bool:
        """False when the person stopped the turn (Cursor's `status: aborted`)."""
        if self.finished is None:
            return True
        key, values = self.finished
        return data.get(key, values[0]) in values

    def last_message(self, data: HookInput) -> str | None:
        """The reply that ended the turn; the transcript's tail only when the field is
        absent, or first when the field joins several replies (`joined_replies`)."""
        if self.joined_replies:
            return self._newest_of_joined(data)
        if self.message_key and self.message_key in data:
            value = data[self.message_key]
            return value if isinstance(value, str) else None
        path = data.get(self.transcript_key) if self.transcript_key else None
        if not isinstance(path, str) or not path:
            return None
        if self.transcript_format != "claude":
            from ralphstate.agents.transcripts import last_reply

            return last_reply(
                path,
                self.transcript_format,
                anchor=data.get("timestamp"),
                wait=self.transcript_wait,
            )
        from ralphstate.agents.transcript import last_assistant_text

        return last_assistant_text(path)

    def _newest_of_joined(self, data: HookInput) -> str | None:
        """Gemini CLI: the newest reply from the transcript. When the transcript does
        not answer (no path, unreadable, no reply in its tail), the last line of the
        joined field: the newest reply is always at its end, so an earlier reply's
        marker is never counted (a marker on an earlier line of the newest reply is
        missed, and the block asks for it again)."""
        path = data.get(self.transcript_key) if self.transcript_key else None
        if isinstance(path, str) and path:
            from ralphstate.agents.transcripts import newest_reply

            found, reply = newest_reply(path, self.transcript_format)
            if found:
                return reply
        value = data.get(self.message_key) if self.message_key else None
        if not isinstance(value, str):
            return None
        return value.rsplit("\n", 1)[-1]

    def render_stop(self, decision: Decision) -> Output | None:
        notice = decision.system_message if self.notices else None
        if decision.block:
            if self.followup:
                return {"followup_message": decision.reason}
            out: Output = {"decision": self.block_word, "reason": decision.reason}
            if notice:
                out["systemMessage"] = notice
            return out
        if notice:
            return {"systemMessage": notice}
        return None

    def render_context(self, context: str, message: str | None) -> Output:
        out: Output
        if self.context_key == "hookSpecificOutput":
            out = {
                "hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": context,
                }
            }
        else:
            out = {self.context_key: context}
        if message and self.notices:
            out["systemMessage"] = message
        return out

    def render_notice(self, message: str) -> Output | None:
        return {"systemMessage": message} if self.notices else None


CLAUDE = Agent(
    name="claude",
    session_key="session_id",
    message_key="last_assistant_message",
    transcript_key="transcript_path",
    cwd_key="cwd",
    project_env="CLAUDE_PROJECT_DIR",
    session_env=("CLAUDE_CODE_SESSION_ID",),
    process_env="CLAUDE_PID",
    usage_format="claude",
)
# Codex CLI: Claude Code's shapes. `last_assistant_message` is always sent (null for a
# reply without text), so its own transcript format is never read.
CODEX = Agent(
    name="codex",
    session_key="session_id",
    message_key="last_assistant_message",
    transcript_key=None,
    cwd_key="cwd",
    session_env=("CODEX_SESSION_ID", "CODEX_THREAD_ID"),
)
# Gemini CLI: the turn end is AfterAgent; "deny" sends the reason back as the next
# prompt. Its `prompt_response` joins every reply of the prompt with newlines (a marker
# refused at the first reply would still be there later), so the newest reply is read
# from the transcript, which holds it when the hook runs.
GEMINI = Agent(
    name="gemini",
    session_key="session_id",
    message_key="prompt_response",
    transcript_key="transcript_path",
    transcript_format="gemini",
    cwd_key="cwd",
    project_env="GEMINI_PROJECT_DIR",
    marker_env="GEMINI_CLI",
    block_word="deny",
    joined_replies=True,
    usage_format="gemini",
)
# Cursor: `stop` carries no reply, only the conversation and the transcript; a block
# is a follow-up user message, and only a turn that completed by itself is followed up.
CURSOR = Agent(
    name="cursor",
    session_key="conversation_id",
    message_key=None,
    transcript_key="transcript_path",
    transcript_format="cursor",
    cwd_key="workspace_roots",
    finished=("status", ("completed",)),
    followup=True,
    context_key="additional_context",
    notices=False,
)
# GitHub Copilot CLI: camelCase input, no reply field (the transcript has it).
COPILOT = Agent(
    name="copilot",
    session_key="sessionId",
    message_key=None,
    transcript_key="transcriptPath",
    transcript_format="copilot",
    cwd_key="cwd",
    project_env="COPILOT_PROJECT_DIR",
    session_env=("COPILOT_AGENT_SESSION_ID",),
    context_key="additionalContext",
    notices=False,
    transcript_wait=2.0,  # the events file lags the hook (see agent_transcripts)
)

# opencode: no hook can hold a stop; ralphstate's plugin (install/opencode.py) answers
# `session.idle` by running this hook with Claude Code's field names, the newest reply
# read by the plugin, and prompts the session again with a block's reason. It shows no
# `systemMessage`.
OPENCODE = Agent(
    name="opencode",
    session_key="session_id",
    message_key="last_assistant_message",
    transcript_key=None,
    cwd_key="cwd",
    notices=False,
)

AGENTS: dict[str, Agent] = {a.name: a for a in (CLAUDE, CODEX, GEMINI, CURSOR, COPILOT, OPENCODE)}
# Which agent a shell command runs inside: Claude Code last, because an agent started
# from Claude Code's Bash tool inherits its variables.
_DETECT_ORDER = (CODEX, COPILOT, GEMINI, CURSOR, OPENCODE, CLAUDE)


def session_from_env(environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(agent, session id) of the agent session whose shell runs this command;
    (agent, None) inside an agent that does not say its session; (None, None) outside."""
    for agent in _DETECT_ORDER:
        for name in agent.session_env:
            if environ.get(name):
                return agent.name, environ[name]
        if agent.marker_env and environ.get(agent.marker_env):
            return agent.name, None
    return None, None


def get(name: str) -> Agent:
    try:
        return AGENTS[name]
    except KeyError:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(AGENTS)}") from None
