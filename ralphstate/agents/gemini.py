"""Gemini CLI: the turn ends at AfterAgent, and "deny" sends the reason back as the
next prompt.

Its hooks live in `.gemini/settings.json` (project) or `~/.gemini/settings.json` (user),
grouped, each named, with timeouts in milliseconds; on Windows it runs them with
PowerShell. Its `prompt_response` joins every reply of the prompt with newlines (a
marker refused at the first reply would still be there later), so the newest reply is
read from the transcript, which holds it when the hook runs.

The transcript (`~/.gemini/tmp/<project>/chats/session-*.jsonl`) has one record a line:
`{"type": "gemini", "content": TEXT, "id": ..., "tokens": {"total": ...}}` is a model
reply (written before `AfterAgent` runs; a reply that called tools is written again
with its `toolCalls`), `{"type": "user", "content": [{"text": ...}]}` a prompt or a
block's reason, and a `user` record of `functionResponse` parts a tool's result;
`{"$set": ...}` lines update the session's metadata. Under `ralphstate run`,
`--output-format json` prints one (indented) object with `stats.models.*.tokens` and,
on a failure, `error`.
"""

from __future__ import annotations

import os

from ralphstate.agents.contract import (
    GO_ON,
    PROMPT,
    Agent,
    HookFile,
    UsageFormat,
    newest,
    older,
    text_of,
    tokens,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ralphstate.agents.contract import Handler, HookCommand, HookInput, Report, Verdict


def _handler(command: HookCommand) -> Handler:
    windows = os.name == "nt"  # Gemini CLI runs PowerShell there
    return {
        "type": "command",
        "name": f"ralphstate-{command.sub}",
        "command": command.powershell if windows else command.shell,
        "timeout": command.seconds * 1000,  # milliseconds
    }


def reply(entry: dict[str, object]) -> Verdict:
    """One record: the newest `gemini` reply is the one that ended the turn (AfterAgent
    runs only once no tool call is pending); a reply without text is answered as none."""
    kind = entry.get("type")
    if kind == "gemini":
        text = text_of(entry.get("content"))
        return True, text if text and text.strip() else None
    if kind == "user":
        content = entry.get("content")
        if (
            isinstance(content, list)
            and content
            and all(isinstance(part, dict) and "functionResponse" in part for part in content)
        ):
            return GO_ON  # a tool's result, within the reply
        return PROMPT
    return GO_ON


def _read_transcript(path: str, data: HookInput) -> tuple[bool, str | None]:
    from ralphstate.agents.transcripts import newest_reply

    return newest_reply(path, reply)


def replied_tokens(entry: dict[str, object], session: str, started: str) -> tuple[str, int] | None:
    """A reply's (id, `tokens.total`): each `gemini` record of it has the same both."""
    reply_id, counted = entry.get("id"), entry.get("tokens")
    if entry.get("type") != "gemini" or not isinstance(reply_id, str):
        return None
    if not isinstance(counted, dict) or older(entry, started):
        return None
    return reply_id, tokens(counted.get("total"), 2**53)


def _stats(obj: dict[str, Any]) -> Report | None:
    stats = obj.get("stats")
    failure = obj.get("error")
    if not isinstance(stats, dict) and not isinstance(failure, dict):
        return None
    spent = 0
    models = stats.get("models") if isinstance(stats, dict) else None
    if isinstance(models, dict):
        for model in models.values():
            counted = model.get("tokens") if isinstance(model, dict) else None
            if isinstance(counted, dict):
                spent += tokens(counted.get("total"))
    error = kind = None
    if isinstance(failure, dict):
        message = failure.get("message")
        error = message if isinstance(message, str) else "error"
        found = failure.get("code") or failure.get("type")
        kind = str(found) if found is not None else None
    return spent, None, error, kind


def report(found: list[dict[str, Any]]) -> Report | None:
    """The object `--output-format json` prints: its models' tokens, and its error."""
    return newest(found, _stats)


AGENT = Agent(
    name="gemini",
    title="Gemini CLI",
    session_key="session_id",
    message_key="prompt_response",
    transcript_key="transcript_path",
    read_transcript=_read_transcript,
    cwd_key="cwd",
    project_env="GEMINI_PROJECT_DIR",
    marker_env="GEMINI_CLI",
    block_word="deny",
    joined_replies=True,
    usage_format=UsageFormat(replied_tokens, (b'"gemini"', b'"tokens"')),
    hook_file=HookFile(
        "grouped",
        project=".gemini/settings.json",
        user=(None, ".gemini", "settings.json"),
        events={
            "AfterAgent": "stop",
            "SessionStart": "session-start",
            "PreCompress": "pre-compact",
            "SessionEnd": "session-end",
        },
        handler=_handler,
        matcher_events=frozenset({"SessionStart", "PreCompress"}),
        # Gemini CLI fires PreCompress with `trigger: "auto"` before every model call,
        # whether or not it then compresses: the checkpoint is taken at `/compress` only,
        # so no process starts and nothing is written at each call (docs/how-to/other-agents.md).
        matchers={"PreCompress": "manual"},
    ),
    run_report=report,
    limit_patterns=(
        # "You have exhausted your capacity ... Your quota will reset after 2h14m." and, on
        # the API's per-day quota, "You have exhausted your daily quota on this model."
        ("usage_limit", r"quota will reset after|exhausted your (daily )?(capacity|quota)"),
    ),
)
