"""Codex CLI: Claude Code's shapes.

Its hooks live in `.codex/hooks.json` (project) or `$CODEX_HOME/hooks.json` (user,
`~/.codex` when unset), grouped as Claude Code's are. `last_assistant_message` is always
sent (null for a reply without text), so its own transcript is never read. It gives its
shell commands the session in `CODEX_SESSION_ID` (and `CODEX_THREAD_ID`). Under
`ralphstate run`, `exec --json` prints `turn.completed` events with `usage`, and
`turn.failed` or `error` events with the message.
"""

from __future__ import annotations

from ralphstate.agents.contract import Agent, HookFile, command_handler, tokens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ralphstate.agents.contract import Report


def report(found: list[dict[str, Any]]) -> Report | None:
    """Every turn's tokens (input + output), and the error a turn failed on."""
    spent = 0
    seen = False
    error = None
    for obj in found:
        kind = obj.get("type")
        if kind == "turn.completed" and isinstance(obj.get("usage"), dict):
            usage = obj["usage"]
            spent += tokens(usage.get("input_tokens")) + tokens(usage.get("output_tokens"))
            seen = True
        elif kind == "turn.failed" and isinstance(obj.get("error"), dict):
            message = obj["error"].get("message")
            if error is None and isinstance(message, str):
                error = message
            seen = True
        elif kind == "error" and isinstance(obj.get("message"), str):
            error = error or obj["message"]
            seen = True
    if not seen:
        return None
    return spent, None, error, "turn.failed" if error else None


# Codex gives a SessionEnd hook at most 3 s and warns about a longer `timeout` at every
# exit (the pinned client 0.169.0: "... sessionend hook timeout to 3s in .../hooks.json").
SESSION_END_MOST = 3


AGENT = Agent(
    name="codex",
    title="Codex CLI",
    session_key="session_id",
    message_key="last_assistant_message",
    transcript_key=None,
    cwd_key="cwd",
    session_env=("CODEX_SESSION_ID", "CODEX_THREAD_ID"),
    hook_file=HookFile(
        "grouped",
        project=".codex/hooks.json",
        user=("CODEX_HOME", ".codex", "hooks.json"),
        events={
            "Stop": "stop",
            "SessionStart": "session-start",
            "PreCompact": "pre-compact",
            "SessionEnd": "session-end",
        },
        handler=command_handler,
        ceilings={"session-end": SESSION_END_MOST},
        matcher_events=frozenset({"SessionStart", "PreCompact"}),
        # Codex runs a hook only once the person trusted it (by its hash: a changed
        # command is new again), and a project's hooks only in a trusted project; an
        # untrusted one is skipped without a word, `codex exec` included.
        trust=(
            "Codex CLI runs new or changed hooks only once you trust them, and a project's"
            " only in a trusted project: start `codex` here, trust the folder and these"
            " hooks when it asks (or in /hooks); until then it skips them without a word"
        ),
    ),
    run_report=report,
    limit_patterns=(
        # "You've hit your usage limit. ... try again at Jan 1st, 2027 10:00 AM."
        ("usage_limit", r"hit your usage limit"),
        # "Quota exceeded. Check your plan and billing details." (the API's
        # insufficient_quota: no credit left), and "Selected model is at capacity. Please
        # try a different model." (the stream failed with server_is_overloaded).
        ("billing", r"quota exceeded\. check your plan and billing"),
        ("overloaded", r"selected model is at capacity"),
    ),
)
