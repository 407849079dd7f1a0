"""GitHub Copilot CLI: camelCase input, and no reply field (the transcript has it).

Its hooks live in `.github/hooks/ralphstate.json` (project; a file of ralphstate's own)
or `$COPILOT_HOME/hooks/ralphstate.json` (user, `~/.copilot` when unset), in the flat
shape, each with the command for bash and for PowerShell. Its events file
(`~/.copilot/session-state/<session>/events.jsonl`) has one event a line: `{"type":
"assistant.message", "data": {"content": TEXT}}` is a reply, `{"type": "user.message",
...}` a prompt, and `{"type": "hook.start", "data": {"input": HOOK_INPUT}}` a hook that
started. The client writes that file behind the hook: the reply that ended the turn
may reach it after `agentStop` starts, so the reply read is the one before this very
hook's `hook.start` (matched by the input's `timestamp`), waited for a little.
"""

from __future__ import annotations

from ralphstate.agents.contract import GO_ON, PROMPT, Agent, HookFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ralphstate.agents.contract import Handler, HookCommand, HookInput, Verdict
    from ralphstate.agents.transcripts import Anchor

# Seconds the Stop hook waits for its own `hook.start` in the events file.
TRANSCRIPT_WAIT = 2.0


def _handler(command: HookCommand) -> Handler:
    return {
        "type": "command",
        "bash": command.shell,
        "powershell": command.powershell,
        "timeoutSec": command.seconds,
    }


def reply(entry: dict[str, object]) -> Verdict:
    kind = entry.get("type")
    data = entry.get("data")
    if not isinstance(data, dict):
        return GO_ON
    if kind == "assistant.message":
        content = data.get("content")
        if isinstance(content, str) and content.strip():
            return True, content
        return GO_ON  # a reply that only called tools
    if kind == "user.message":
        return PROMPT
    return GO_ON


def hook_start(stamp: object) -> Anchor:
    """The `hook.start` event of the hook whose input has the `timestamp` `stamp`."""

    def anchor(entry: dict[str, object]) -> bool:
        data = entry.get("data")
        if entry.get("type") != "hook.start" or not isinstance(data, dict):
            return False
        hook_input = data.get("input")
        return isinstance(hook_input, dict) and hook_input.get("timestamp") == stamp

    return anchor


def _read_transcript(path: str, data: HookInput) -> tuple[bool, str | None]:
    from ralphstate.agents.transcripts import last_reply

    stamp = data.get("timestamp")
    anchor = None if stamp is None else hook_start(stamp)
    return True, last_reply(path, reply, anchor=anchor, wait=TRANSCRIPT_WAIT)


AGENT = Agent(
    name="copilot",
    title="GitHub Copilot CLI",
    session_key="sessionId",
    message_key=None,
    transcript_key="transcriptPath",
    read_transcript=_read_transcript,
    cwd_key="cwd",
    project_env="COPILOT_PROJECT_DIR",
    session_env=("COPILOT_AGENT_SESSION_ID",),
    context_key="additionalContext",
    notices=False,
    hook_file=HookFile(
        "flat",
        project=".github/hooks/ralphstate.json",
        user=("COPILOT_HOME", ".copilot", "hooks/ralphstate.json"),
        events={
            "agentStop": "stop",
            "sessionStart": "session-start",
            "preCompact": "pre-compact",
            "sessionEnd": "session-end",
        },
        handler=_handler,
        command_keys=("bash", "command", "powershell"),
        own_file=True,
    ),
    # Either makes `copilot -p` load a repository's hooks without the folder's trust,
    # which it otherwise needs, and says nothing when it is missing (docs/how-to/other-agents.md).
    project_trust=(
        ("GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS", "COPILOT_ALLOW_ALL"),
        (
            "Copilot CLI runs the hooks in {path} in `copilot -p` only in a trusted folder"
            " (--trust-folder, a folder trusted in its interactive session, or"
            " GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true); elsewhere it runs without them"
            " and the loop is not enforced. Hooks installed with `--scope user` run in every"
            " folder."
        ),
    ),
)
