"""What an agent is to ralphstate: the one contract every module of `agents/` fills.

An agent is one `Agent` (its module's `AGENT`, listed in `agents.table`): the fields of
its hook input and the shapes of its hook output, how its transcript gives the reply
that ended a turn and the tokens it spent, the variables it gives its hooks and shell
commands, its hook file (`HookFile`), what its output under `ralphstate run` reports
(tokens, cost, the error it ended on) and the words it prints when it hits a limit.
`install`, `run`, `doctor` and the hooks read these and know no agent by name.

This module is on the hook's no-loop path (docs/explanation/design.md, "The hot path"), with the
agent's own module: they import nothing at run time but each other and `core.limits`,
and what they need to read a transcript only when it is read.
"""

from __future__ import annotations

from ralphstate.core import limits

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from ralphstate.core.decide import Decision
    from ralphstate.core.schema import AgentName

    # What a hook reads (one JSON object) and prints (one JSON object).
    HookInput = dict[str, object]
    Output = dict[str, object]
    # What one transcript entry says of the reply that ended the turn: (the search is
    # done, the reply's text); a prompt ends it with None.
    Verdict = tuple[bool, str | None]
    ReplyJudge = Callable[[dict[str, object]], Verdict]
    # The reply in a transcript: (the transcript answered, the reply's text).
    TranscriptReader = Callable[[str, HookInput], tuple[bool, str | None]]
    # One transcript line, for counting: (reply id, tokens) of the reply it belongs to.
    TokenJudge = Callable[[dict[str, object], str, str], tuple[str, int] | None]
    # What an agent's output under `ralphstate run` ends with: (tokens, cost in US
    # dollars, the error it ended on, that error's kind); from its JSON objects, last first.
    Report = tuple[int, float | None, str | None, str | None]
    RunReport = Callable[[list[dict[str, Any]]], Report | None]
    # Our handler in an agent's hook file, for one event.
    Handler = dict[str, object]

# Seconds a hook may run; the Stop hook and TaskCompleted leave room for verify-on-stop's
# budget (limits.STOP_VERIFY_BUDGET).
TIMEOUT = 30
TIMEOUTS = {
    "stop": limits.STOP_HOOK_TIMEOUT,
    "task-completed": limits.STOP_HOOK_TIMEOUT,
    "session-end": limits.SESSION_END_HOOK_TIMEOUT,
}
_INFINITY = float("inf")
# Verdicts of a transcript entry: not the end of the search, and a prompt (no reply).
GO_ON: Verdict = (False, None)
PROMPT: Verdict = (True, None)


def timeout(sub: str) -> int:
    """Seconds the hook `ralphstate hook SUB` is given in an agent's hook file."""
    return TIMEOUTS.get(sub, TIMEOUT)


def tokens(value: object, most: float = _INFINITY) -> int:
    """A count an agent wrote: a number from 0 up to (not including) `most`, else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value) if 0 <= value < most else 0


def money(value: object) -> float | None:
    """An amount in US dollars an agent wrote: a finite number from 0, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value < _INFINITY else None


def text_of(content: object) -> str | None:
    """A message's text: a string as it is, or the `text` blocks of a list of content
    blocks joined with newlines; None when there is no text (a reply that only called
    tools)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(texts) if texts else None


def older(entry: dict[str, object], started: str) -> bool:
    """A transcript line written before the loop started (compared to the second)."""
    at = entry.get("timestamp")
    return bool(started) and isinstance(at, str) and at[:19] < started[:19]


def newest(
    found: list[dict[str, Any]], read: Callable[[dict[str, Any]], Report | None]
) -> Report | None:
    """The report of the newest object `read` answers for (`found` is last first)."""
    for obj in found:
        report = read(obj)
        if report is not None:
            return report
    return None


class HookCommand:
    """What `install` gives an agent's `HookFile.handler` for one event: the hook
    subcommand, its command for sh and for PowerShell, and its time in seconds."""

    def __init__(self, sub: str, shell: str, powershell: str, seconds: int) -> None:
        self.sub = sub
        self.shell = shell
        self.powershell = powershell
        self.seconds = seconds


def command_handler(command: HookCommand) -> Handler:
    """The handler of Claude Code's shape, which Codex CLI shares: the sh command and
    its timeout in seconds."""
    return {"type": "command", "command": command.shell, "timeout": command.seconds}


class Plugin:
    """A file of ralphstate's own that the agent loads (opencode's plugin): `header`,
    its first line, by which ralphstate knows the file is its own; `text(program,
    args)`, the file that runs `program` with `args` before the subcommand; `program`,
    the (program, args) a file of ours runs, read back for `doctor`."""

    def __init__(
        self,
        header: str,
        text: Callable[[str, list[str]], str],
        program: Callable[[str], tuple[str, list[str]] | None],
    ) -> None:
        self.header = header
        self.text = text
        self.program = program


class HookFile:
    """Where and how an agent keeps its hooks, for `install` and `doctor`.

    `shape`: "grouped" (Claude Code's `{"hooks": {EVENT: [{"matcher"?, "hooks":
    [HANDLER]}]}}`), "flat" (`{"version": 1, "hooks": {EVENT: [HANDLER]}}`) or "plugin"
    (`plugin`). `project` and `local`: the file's path under the project root for those
    scopes (`local`: the person's own file, kept out of git); `user`: (the variable
    naming the directory, the directory under the home directory when it is not set,
    the file's path in it). `default_scope`: `install`'s when none is given.
    `events`: the agent's event -> `ralphstate hook` subcommand, in the order they are
    written; `task_events`: the same, written by `install --tasks`. `handler`: our
    handler for one event. `matcher_events`: the events whose group carries a matcher,
    "" (every trigger) unless `matchers` names another (its events carry one too).
    `command_keys`: where a handler
    holds its command, the first found counting. `own_file`: the file is ralphstate's
    alone, removed when an uninstall leaves it empty. `notes`: what `install` says of
    the rest of the file. `matcher_said` and `timeout_unit`: how `install` words a
    matcher it set and a timeout it raised. `trust`: what the person must do before the
    agent runs hooks it has not seen, which `install` says when it wrote new ones.
    `ceilings`: the most seconds the agent allows a hook (by subcommand), where that is
    less than ralphstate's own timeout for it.
    """

    def __init__(
        self,
        shape: str,
        *,
        project: str,
        user: tuple[str | None, str, str],
        events: dict[str, str],
        handler: Callable[[HookCommand], Handler] | None = None,
        local: str | None = None,
        default_scope: str = "project",
        task_events: dict[str, str] | None = None,
        matcher_events: frozenset[str] = frozenset(),
        matchers: dict[str, str] | None = None,
        command_keys: tuple[str, ...] = ("command",),
        own_file: bool = False,
        notes: Callable[[dict[str, Any]], list[str]] | None = None,
        matcher_said: str = "narrowed {event} hook to matcher {matcher!r} (was {was!r})",
        timeout_unit: str = "",
        plugin: Plugin | None = None,
        trust: str | None = None,
        ceilings: dict[str, int] | None = None,
    ) -> None:
        self.shape = shape
        self.project = project
        self.user = user
        self.events = events
        self.handler = handler
        self.local = local
        self.default_scope = default_scope
        self.task_events = task_events or {}
        self.matchers = matchers or {}
        self.matcher_events = matcher_events | frozenset(self.matchers)
        self.command_keys = command_keys
        self.own_file = own_file
        self.notes = notes
        self.matcher_said = matcher_said
        self.timeout_unit = timeout_unit
        self.plugin = plugin
        self.trust = trust
        self.ceilings = ceilings or {}

    def seconds(self, sub: str) -> int:
        """The timeout `ralphstate hook SUB` is given in this agent's hook file."""
        return min(timeout(sub), self.ceilings.get(sub, timeout(sub)))

    @property
    def scopes(self) -> tuple[str, ...]:
        return ("project", "local", "user") if self.local else ("project", "user")

    @property
    def all_events(self) -> dict[str, str]:
        return {**self.events, **self.task_events}


class UsageFormat:
    """How an agent's transcript gives each reply's tokens (`agents.transcript_usage`):
    `judge` reads one line, `hints` are bytes every line it counts holds (other lines
    are not parsed)."""

    def __init__(self, judge: TokenJudge, hints: tuple[bytes, ...]) -> None:
        self.judge = judge
        self.hints = hints


class CostCap:
    """A command-line option with which the agent stops itself at a cost: `option`
    takes US dollars, for `programs` run in one of `modes` (Claude Code's `-p`)."""

    def __init__(self, option: str, programs: tuple[str, ...], modes: tuple[str, ...]) -> None:
        self.option = option
        self.programs = programs
        self.modes = modes


class Agent:
    """One agent, as ralphstate reads and answers it.

    Hook input: `session_key`, `message_key` (the reply that ended the turn),
    `transcript_key` and `read_transcript` (where to find that reply when the input has
    no message field), `cwd_key` (a path, or a list of paths whose first is taken),
    `finished` (key and values meaning the turn ended by itself rather than by the
    person), `joined_replies` (the message field joins every reply of the prompt, so the
    transcript is read first and the field is only the fallback), `usage_format` (the
    transcript at `transcript_key` gives each reply's tokens: `UsageFormat`).
    Environment: `project_env` (the variable naming the project root in the hook's
    environment), `session_env` (variables carrying the session id to the agent's shell
    commands), `marker_env` (a variable saying "inside this agent"), `process_env` (the
    agent's process id, which outlives a session: Claude Code's `/clear`),
    `task_list_env` (the variable naming a task list sessions share).
    Output: `block_word` for `{"decision": WORD, "reason": ...}`, or `followup` for
    `{"followup_message": ...}`; `context_key` for the SessionStart context; `notices`:
    whether the agent shows a `systemMessage` to the person; `terminal_sequence`:
    whether it passes a `terminalSequence` (a desktop notification) to the terminal.
    Install: `hook_file`. Under `ralphstate run`: `run_report` (what its JSON output
    reports), `limit_patterns` ((limit kind, regular expression) of the words it prints
    at a limit, the specific before the general), `cost_cap`. For `doctor`: `block_cap`
    (the variable and default of how many Stop blocks in a row without a tool call the
    agent allows), `project_trust` (variables any of which set to "true" let it run a
    project's hooks in an untrusted folder, and what `doctor` says when none is).
    """

    def __init__(
        self,
        name: AgentName,
        *,
        title: str,
        hook_file: HookFile,
        session_key: str,
        message_key: str | None,
        transcript_key: str | None,
        cwd_key: str,
        read_transcript: TranscriptReader | None = None,
        project_env: str | None = None,
        finished: tuple[str, tuple[str, ...]] | None = None,
        session_env: tuple[str, ...] = (),
        marker_env: str | None = None,
        process_env: str | None = None,
        task_list_env: str | None = None,
        block_word: str = "block",
        followup: bool = False,
        context_key: str = "hookSpecificOutput",
        notices: bool = True,
        terminal_sequence: bool = False,
        joined_replies: bool = False,
        usage_format: UsageFormat | None = None,
        run_report: RunReport | None = None,
        limit_patterns: tuple[tuple[str, str], ...] = (),
        cost_cap: CostCap | None = None,
        block_cap: tuple[str, int] | None = None,
        project_trust: tuple[tuple[str, ...], str] | None = None,
    ) -> None:
        self.name = name
        self.title = title
        self.hook_file = hook_file
        self.session_key = session_key
        self.message_key = message_key
        self.transcript_key = transcript_key
        self.cwd_key = cwd_key
        self.read_transcript = read_transcript
        self.project_env = project_env
        self.finished = finished
        self.session_env = session_env
        self.marker_env = marker_env
        self.process_env = process_env
        self.task_list_env = task_list_env
        self.block_word = block_word
        self.followup = followup
        self.context_key = context_key
        self.notices = notices
        self.terminal_sequence = terminal_sequence
        self.joined_replies = joined_replies
        self.usage_format = usage_format
        self.run_report = run_report
        self.limit_patterns = limit_patterns
        self.cost_cap = cost_cap
        self.block_cap = block_cap
        self.project_trust = project_trust

    @property
    def variables(self) -> tuple[str, ...]:
        """The variables by which the agent says which session, process and project a
        hook or a shell command runs in."""
        named = (self.marker_env, self.process_env, self.project_env)
        return (*self.session_env, *(name for name in named if name))

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
        path = self._transcript(data)
        if path is None or self.read_transcript is None:
            return None
        return self.read_transcript(path, data)[1]

    def _transcript(self, data: HookInput) -> str | None:
        path = data.get(self.transcript_key) if self.transcript_key else None
        return path if isinstance(path, str) and path else None

    def _newest_of_joined(self, data: HookInput) -> str | None:
        """Gemini CLI: the newest reply from the transcript. When the transcript does
        not answer (no path, unreadable, no reply in its tail), the last line of the
        joined field: the newest reply is always at its end, so an earlier reply's
        marker is never counted (a marker on an earlier line of the newest reply is
        missed, and the block asks for it again)."""
        path = self._transcript(data)
        if path is not None and self.read_transcript is not None:
            found, reply = self.read_transcript(path, data)
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
