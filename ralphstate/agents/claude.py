"""Claude Code: the agent ralphstate was made for, and the default of every `--agent`.

Its hooks live in `.claude/settings.json` (project), `.claude/settings.local.json`
(local, the default: the hooks name this machine's Python) and `~/.claude/settings.json`
(user), in this shape (https://code.claude.com/docs/en/hooks):

    {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": ..., "timeout": 180}]}],
               "SessionStart": [{"matcher": "", "hooks": [...]}],
               "PreCompact": [{"matcher": "", "hooks": [...]}]}}

Stop takes no matcher; for SessionStart and PreCompact an empty matcher matches every
source and trigger. StopFailure runs instead of Stop when a turn ends on an API error
(a rate limit, an overloaded API, a billing error): the hook records it for the next
SessionStart. PreToolUse, matched to the Bash tool, has the person answer for a command
that approves what proves the loop done (`hooks.pre_tool_use`). SessionEnd hands the
owning session's loop back when it ends, for the next session to take
(`hooks.session_end`).

Its transcript (`~/.claude/projects/<project>/<session>.jsonl`) writes each content
block of a reply on a line of its own, each repeating the reply's `message.id` and
`message.usage`; tool results come back as `user` lines carrying `tool_result` blocks,
while any other `user` line is a prompt (or hook feedback) that opened the current
reply. Under `ralphstate run`, `-p --output-format json` (or `stream-json --verbose`)
ends with a `result` object: `total_cost_usd`, `usage`, `is_error`,
`api_error_status`, `api_error_type` and `result` (the error text).
"""

from __future__ import annotations

from ralphstate.agents.contract import (
    GO_ON,
    PROMPT,
    Agent,
    CostCap,
    HookFile,
    UsageFormat,
    command_handler,
    money,
    newest,
    older,
    text_of,
    tokens,
)
from ralphstate.core import limits

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Mapping
    from typing import Any

    from ralphstate.agents.contract import HookInput, Report, Verdict

# Claude Code event name -> `ralphstate hook` subcommand, in the order they are written.
EVENTS = {
    "Stop": "stop",
    "SessionStart": "session-start",
    "PreCompact": "pre-compact",
    "StopFailure": "stop-failure",
    "PreToolUse": "pre-tool-use",
    "SessionEnd": "session-end",
    "PermissionRequest": "permission-request",
    "ConfigChange": "config-change",
}
# With `install --tasks`: the hooks on Claude Code's task list
# (docs/explanation/design.md, "The task gate"): PostToolUse mirrors the task tools' calls
# into the loop's steps, TaskCompleted keeps a task open while its criterion's check fails.
TASK_EVENTS = {"PostToolUse": "post-tool-use", "TaskCompleted": "task-completed"}
# A matcher other than "" for an event: the tools whose calls run the hook.
# PreToolUse asks the person before the Bash tool runs an approval (hooks/pre_tool_use.py),
# and before a tool changes what runs ralphstate's hooks (hooks/gatefiles.py).
# PermissionRequest says so when `claude -p` cannot start a loop (hooks/permission_request.py).
MATCHERS = {
    "PostToolUse": "TaskCreate|TaskUpdate|TodoWrite",
    "PreToolUse": "Bash|Edit|Write|MultiEdit",
    "PermissionRequest": "Bash",
}
# Events whose matcher group carries `"matcher": ""` (match every source / trigger).
MATCHER_EVENTS = frozenset({"SessionStart", "PreCompact"})
# The variable that turns Claude Code's task tools on (`install --tasks` sets it in the
# settings file's `env`), and the one whose false value gives TodoWrite instead.
TASKS_ENV = "CLAUDE_CODE_ENABLE_TODO_TOOLS"
TASKS_OFF_ENV = "CLAUDE_CODE_ENABLE_TASKS"
ON = "1"
# How Claude Code reads a variable as true or as false (anything else: not set).
TRUTHY = ("1", "true", "yes", "on")
FALSY = ("0", "false", "no", "off")
# Whether a person can answer this session's permission prompts, as Claude Code tells its
# hooks: "1" in its interactive terminal and in the IDE and desktop apps, "0" under `-p`
# and the Agent SDK (docs/explanation/proof.md, "Only a person approves"). A client
# that does not say is judged by its entry point: those of `-p` and the SDK are headless.
ATTENDED_ENV = "CLAUDE_CODE_SESSION_ATTENDED"
ENTRYPOINT_ENV = "CLAUDE_CODE_ENTRYPOINT"
HEADLESS_ENTRYPOINTS = ("sdk-cli", "sdk-ts", "sdk-py")
_TOKENS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


def _notes(data: dict[str, Any]) -> list[str]:
    if data.get("disableAllHooks") is True:
        return ["note: disableAllHooks is true in this file, so Claude Code runs no hooks"]
    return []


def attended(environ: Mapping[str, str]) -> bool:
    """Whether a person can answer the permission prompts of the session whose hook
    has the environment `environ`."""
    said = environ.get(ATTENDED_ENV)
    if said in ("0", "1"):
        return said == "1"
    entry = environ.get(ENTRYPOINT_ENV)
    return bool(entry) and entry not in HEADLESS_ENTRYPOINTS


# -- the transcript ------------------------------------------------------------------


def reply(entry: dict[str, object]) -> Verdict:
    """One line of the transcript: an assistant line with text ends the search with
    that text (its text blocks joined with newlines), a prompt ends it with None."""
    if entry.get("isSidechain") is True:
        return GO_ON
    message = entry.get("message")
    if not isinstance(message, dict):
        return GO_ON
    content = message.get("content")
    kind = entry.get("type")
    if kind == "assistant":
        text = text_of(content)
        return (True, text) if text is not None else GO_ON
    if kind == "user" and entry.get("isMeta") is not True:
        if isinstance(content, list) and any(
            isinstance(block, dict) and block.get("type") == "tool_result" for block in content
        ):
            return GO_ON
        if isinstance(content, (str, list)):
            return PROMPT
    return GO_ON


def last_assistant_text(
    path: str | os.PathLike[str],
    max_bytes: int = limits.MAX_TRANSCRIPT_TAIL_BYTES,
    chunk: int = limits.TRANSCRIPT_CHUNK_BYTES,
) -> str | None:
    """The current reply's last assistant text in the transcript at `path`, read
    backwards from its end (`transcript.read_backwards`)."""
    from ralphstate.agents.transcript import read_backwards

    return read_backwards(path, reply, max_bytes, chunk)


def _read_transcript(path: str, data: HookInput) -> tuple[bool, str | None]:
    return True, last_assistant_text(path)


def replied_tokens(entry: dict[str, object], session: str, started: str) -> tuple[str, int] | None:
    """A reply's (id, input + cache creation + cache read + output tokens), as `run`
    counts a `-p` result. A line whose `requestSessionId` names another session is a
    reply copied from it (`--fork-session`) and is not counted."""
    if entry.get("type") != "assistant":
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    reply_id, usage = message.get("id"), message.get("usage")
    if not isinstance(reply_id, str) or not isinstance(usage, dict):
        return None
    if entry.get("requestSessionId") not in (None, session):
        return None  # a reply copied from the session this one was forked from
    if older(entry, started):
        return None
    return reply_id, sum(tokens(usage.get(key), 2**53) for key in _TOKENS)


# -- `ralphstate run` ----------------------------------------------------------------


def _result(obj: dict[str, Any]) -> Report | None:
    if obj.get("type") != "result" or not isinstance(obj.get("usage"), dict):
        return None
    usage = obj["usage"]
    spent = sum(tokens(usage.get(key)) for key in _TOKENS)
    error = kind = None
    if obj.get("is_error") is True:
        result = obj.get("result")
        error = result if isinstance(result, str) else "error"
        found = obj.get("api_error_type") or obj.get("api_error_status") or obj.get("subtype")
        kind = str(found) if found is not None else None
    return spent, money(obj.get("total_cost_usd")), error, kind


def report(found: list[dict[str, Any]]) -> Report | None:
    """The `result` object a `-p` run ends with: the final report wins."""
    return newest(found, _result)


AGENT = Agent(
    name="claude",
    title="Claude Code",
    session_key="session_id",
    message_key="last_assistant_message",
    transcript_key="transcript_path",
    read_transcript=_read_transcript,
    cwd_key="cwd",
    project_env="CLAUDE_PROJECT_DIR",
    session_env=("CLAUDE_CODE_SESSION_ID",),
    process_env="CLAUDE_PID",
    # Claude Code keeps a session's tasks in a list named by the session id, unless this
    # variable names a list that sessions share (then the ids are that list's).
    task_list_env="CLAUDE_CODE_TASK_LIST_ID",
    terminal_sequence=True,
    usage_format=UsageFormat(replied_tokens, (b'"assistant"', b'"usage"')),
    hook_file=HookFile(
        "grouped",
        project=".claude/settings.json",
        local=".claude/settings.local.json",
        user=("CLAUDE_CONFIG_DIR", ".claude", "settings.json"),
        default_scope="local",
        events=EVENTS,
        task_events=TASK_EVENTS,
        handler=command_handler,
        matcher_events=MATCHER_EVENTS,
        matchers=MATCHERS,
        notes=_notes,
        matcher_said="set the {event} hook's matcher to {matcher} (was {was!r})",
        timeout_unit="s",
    ),
    run_report=report,
    limit_patterns=(
        # Subscription plans: "Claude AI usage limit reached|1767261600" (older), "You've
        # hit your limit · resets 3pm (Europe/Berlin)", "5-hour limit reached ∙ resets 3pm".
        ("usage_limit", r"usage limit reached\|\d{9,11}"),
        ("usage_limit", r"(hit your limit|limit reached)\s*[·∙•-]\s*resets"),
        # "Credit balance is too low": an API key without credit.
        ("billing", r"credit balance is too low"),
    ),
    # In print mode, what is left of the cost budget becomes its own `--max-budget-usd`.
    cost_cap=CostCap("--max-budget-usd", ("claude", "claude.exe"), ("-p", "--print")),
    # It lets a turn end after this many Stop blocks in a row without a tool call.
    block_cap=("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", 8),
)
