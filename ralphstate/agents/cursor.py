"""Cursor: `stop` carries no reply, only the conversation and the transcript; a block is
a follow-up user message, and only a turn that completed by itself is followed up.

Its hooks live in `.cursor/hooks.json` (project) or `~/.cursor/hooks.json` (user), in the
flat shape, each with a `loop_limit`. Its agent transcripts have one message a line,
`{"role": "assistant"|"user", "message": {"content": [{"type": "text", "text": ...}]}}`.
"""

from __future__ import annotations

from ralphstate.agents.contract import GO_ON, PROMPT, Agent, HookFile, text_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ralphstate.agents.contract import Handler, HookCommand, HookInput, Verdict

# Cursor's cap on follow-up messages from one stop hook in a conversation; the loop's
# own `maxIterations` still applies below it. A value the person set is kept.
LOOP_LIMIT = 20


def _handler(command: HookCommand) -> Handler:
    return {"command": command.shell, "loop_limit": LOOP_LIMIT}


def reply(entry: dict[str, object]) -> Verdict:
    role = entry.get("role")
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else entry.get("content")
    if role == "assistant":
        text = text_of(content)
        return (True, text) if text and text.strip() else GO_ON
    if role == "user":
        return PROMPT
    return GO_ON


def _read_transcript(path: str, data: HookInput) -> tuple[bool, str | None]:
    from ralphstate.agents.transcripts import last_reply

    return True, last_reply(path, reply)


AGENT = Agent(
    name="cursor",
    title="Cursor",
    session_key="conversation_id",
    message_key=None,
    transcript_key="transcript_path",
    read_transcript=_read_transcript,
    cwd_key="workspace_roots",
    finished=("status", ("completed",)),
    followup=True,
    context_key="additional_context",
    notices=False,
    hook_file=HookFile(
        "flat",
        project=".cursor/hooks.json",
        user=(None, ".cursor", "hooks.json"),
        events={"stop": "stop"},
        handler=_handler,
    ),
)
