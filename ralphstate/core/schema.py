"""The state's fields in one table: a row per key of state.json, in the order the file is
written, with its default, the check that reads it, what it is for, and its roles.

Everything that lists fields by what they do is derived from the rows: the defaults and
the reading in `state.normalise`, the fields a new loop starts afresh (`RUN_FIELDS`), the
template's keys `init` reads itself (`INIT_READS`), what a new worktree's loop copies
(`COPIED`), the approved contract (`CONTRACT`, core/proof.py `contract_of`, and the CI's
trusted contract, ci/trusted.py), the loop's budgets (`BUDGETS`), the names `ralphstate
config` sets (`CONFIG_KEYS`), and the table in docs/reference/state-file.md. A new field
is a row here and its key in `state.State` (tests/core/test_schema.py holds the two
together); CONTRIBUTING.md, "A new check of the store", lists the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from ralphstate.core import checkrun, fields, scalars
from ralphstate.core.errors import CorruptState
from ralphstate.core.limits import (
    MAX_CHECK_JOBS,
    MAX_CHECK_TIMEOUT,
    MAX_ERRORS,
    MAX_GUARD_CHARS,
    MAX_GUARDS,
    MAX_ITERATIONS_CEILING,
    MAX_MIRRORED_TASKS,
    STOP_VERIFY_BUDGET,
)

SCHEMA_VERSION = 1
Status = Literal["in_progress", "paused", "complete", "cancelled"]
STATUSES: tuple[Status, ...] = ("in_progress", "paused", "complete", "cancelled")
# The agents whose sessions can own a loop: a module each in agents/, named by
# agents/table.py (tests/agents/test_table.py holds the two lists together).
AgentName = Literal["claude", "codex", "gemini", "cursor", "copilot", "opencode"]
# The agent a `sessionId` belongs to when the file does not say.
DEFAULT_AGENT: AgentName = "claude"

Raw = dict[str, Any]
# Reads one field from the raw state as read: its value, or None for its default.
Reader = Callable[[Raw, str], Any]
# Reads the fields whose values depend on one another: each of them, by key.
GroupReader = Callable[[Raw], dict[str, Any]]
# A field's value in the approved contract, from a normalised state.
InContract = Callable[[Mapping[str, Any], str], Any]


class Field:
    """One key of state.json. `default`: its value when the file lacks it (a factory,
    `list` or `dict`, for a mutable one). `read`: its check (core/scalars.py,
    core/fields.py, ...), which returns None when the field takes its default; or
    `group`: the check that reads it with the fields it depends on, named in each of
    their rows. `doc`: what it means, as docs/reference/state-file.md shows it.

    Its roles: `fresh`, a new loop starts it afresh (`init --from` ignores it in a
    template); `init_reads`, `init` reads a template's value itself, with its own
    options, rather than keep it as it is; `copied`, a new worktree's loop takes it from
    the loop it is copied from; `contract`, its value in the approved contract, whose
    weakening waits for a person's review (docs/explanation/proof.md); `budget`, the
    figure of `usage` it bounds; `config`, the name `ralphstate config` sets it by."""

    __slots__ = (
        "budget",
        "config",
        "contract",
        "copied",
        "default",
        "doc",
        "fresh",
        "group",
        "init_reads",
        "name",
        "read",
    )

    def __init__(
        self,
        name: str,
        default: Any,
        *,
        doc: str,
        read: Reader | None = None,
        group: GroupReader | None = None,
        fresh: bool = False,
        init_reads: bool = False,
        copied: bool = False,
        contract: InContract | None = None,
        budget: str | None = None,
        config: str | None = None,
    ) -> None:
        self.name = name
        self.default = default
        self.doc = doc
        self.read = read
        self.group = group
        self.fresh = fresh
        self.init_reads = init_reads
        self.copied = copied
        self.contract = contract
        self.budget = budget
        self.config = config

    def initial(self) -> Any:
        """The field's default, a new one each time for a mutable one."""
        return self.default() if callable(self.default) else self.default


def _version(raw: Raw, key: str) -> int:
    """Always SCHEMA_VERSION, once the file's version is one this ralphstate reads: a
    file without one is the seed's format, version 1; a newer one is refused, not
    misread."""
    version = raw.get(key, SCHEMA_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise fields.Invalid(f"'{key}' must be a positive whole number, not {version!r}")
    if version > SCHEMA_VERSION:
        raise CorruptState(
            f"state.json has schema version {version}, newer than this ralphstate"
            f" understands ({SCHEMA_VERSION}); upgrade ralphstate to use it"
        )
    return SCHEMA_VERSION


def _owner(raw: Raw, key: str) -> str | None:
    """An owner is a session of one agent: none without a `sessionId`, and Claude Code
    in files from before `ownerAgent`."""
    agent = scalars.opt_str(raw, key)
    return (agent or DEFAULT_AGENT) if raw.get("sessionId") else None


# -- each contract field's value in the contract, from a normalised state --------------


def _listed(state: Mapping[str, Any], key: str) -> list[str]:
    return list(state[key])


def _of_criteria(state: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The entries of a map by criterion, for the criteria with a check, in their order."""
    found = state[key]
    checks = state["checks"]
    return {c: found[c] for c in state["criteria"] if c in checks and c in found}


def _of_rubrics(state: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The rubrics of the loop's criteria, in their order."""
    found = state[key]
    return {c: found[c] for c in state["criteria"] if c in found}


def _value(state: Mapping[str, Any], key: str) -> Any:
    return state.get(key)


def _on(state: Mapping[str, Any], key: str) -> bool:
    return state.get(key) is not False  # null is the default, on


def _set(state: Mapping[str, Any], key: str) -> bool:
    return bool(state.get(key))


def _sorted(state: Mapping[str, Any], key: str) -> list[str] | None:
    value = state.get(key)
    return None if value is None else sorted(value)


def _sorted_criteria(state: Mapping[str, Any], key: str) -> list[str]:
    return sorted(c for c in state.get(key) or [] if c in state["criteria"])


_PAUSE_REASONS = (
    "`max_iterations`, `stall`, `untrusted_checks`, `review` (what proves the loop changed"
    " since a person approved it: `ralphstate review`), `user`, `agent` (the agent's own"
    " `ralphstate pause`), `budget`, `limit`, `agent_errors`, `step_retries`, `run_max`,"
    " `commit_failed`, `check_failed` (`--strict`: a check that passed broke), `check_in`"
    " (`--check-in`) (`ralphstate run`; `run_max`: a `--max N` spent before the cap;"
    " `commit_failed`: `--commit` could not commit), `blocked: WHAT` (`pause --blocked`),"
    " or your words"
)
_BUDGET = (
    ", above 0, over all the loop's runs (`ralphstate config {0}`); the loop pauses with"
    " `pauseReason: budget` once `usage` reaches it (null: no budget). A run's own `--{0}`"
    " is never written here ([Budgets](../how-to/overnight.md#budgets))"
)
_ISO = "ISO-8601 UTC, "

# fmt: off
ROWS: tuple[Field, ...] = (
    Field("version", SCHEMA_VERSION, read=_version, fresh=True,
          doc="schema version, 1; a file without it reads as 1; a file from a newer version"
              " is refused, not misread"),
    Field("spec", "", read=scalars.text, init_reads=True, config="spec",
          doc="the original request"),
    Field("criteria", list, group=fields.criteria, init_reads=True, contract=_listed,
          doc="success criteria, in order, then every key of `criteriaStatus` not among them"),
    Field("criteriaStatus", dict, group=fields.criteria,
          doc="criterion → verified; a criterion missing here counts as unmet"),
    Field("checks", dict, read=fields.checks, copied=True, contract=_of_criteria,
          doc="criterion → a command whose exit code 0 proves it (see"
              " [verify](commands.md#ralphstate-verify))"),
    Field("rubrics", dict, read=fields.rubrics, copied=True, contract=_of_rubrics,
          doc="criterion → a rubric a reviewer that is not the author grades it by at each"
              " completion, after the checks pass (`ralphstate criteria rubric`, `init --rubric`;"
              " [Graded criteria](../explanation/proof.md#graded-criteria)): such a criterion is"
              " **graded**, never verified"),
    Field("steps", list, group=fields.plan, init_reads=True,
          doc="the plan, in order"),
    Field("completedSteps", list, group=fields.plan,
          doc="the steps done, in the plan's order; a step named only here joins the plan"),
    Field("remainingSteps", list, group=fields.plan, init_reads=True,
          doc="**derived**: `steps` minus `completedSteps`, in the plan's order; always"
              " re-derived, never trusted (a step named only here joins the plan)"),
    Field("iteration", 0, read=scalars.count(0), fresh=True,
          doc="how many times the Stop hook has blocked, plus the iterations `ralphstate run`"
              f" started; 0 to {MAX_ITERATIONS_CEILING:,}"),
    Field("maxIterations", 20, read=scalars.count(1), copied=True, config="max-iterations",
          doc=f'hard cap, 1 to {MAX_ITERATIONS_CEILING:,}; there is no "unlimited" (0 is refused)'),
    Field("stallLimit", 5, read=scalars.count(1), copied=True, config="stall-limit",
          doc="blocks in a row without progress before the loop pauses"),
    Field("completionMarker", "<loop-complete>", read=scalars.marker, copied=True, config="marker",
          doc="what the agent says, outside code, to claim completion; empty or null reads as"
              " the default, only whitespace is refused"),
    Field("continueMessage", None, read=scalars.opt_str, copied=True, config="continue-message",
          doc="optional text that opens every block reason"),
    Field("status", "in_progress", read=scalars.one_of(STATUSES), fresh=True,
          doc=", ".join(f"`{status}`" for status in STATUSES)),
    Field("pauseReason", None, read=scalars.opt_str, fresh=True,
          doc=_PAUSE_REASONS),
    Field("sessionId", None, read=scalars.opt_str, fresh=True,
          doc="the agent session that owns the loop (see [Other"
              " agents](../how-to/other-agents.md),"
              " [Ownership](../explanation/design.md#ownership))"),
    Field("loopId", None, read=scalars.opt_str, fresh=True,
          doc="the loop's own id, 16 random hex digits drawn by `init`; null in a file from"
              " before it; history lines carry it (see below)"),
    Field("startedAt", None, read=scalars.opt_str, fresh=True,
          doc=_ISO + "set by `init`; with the directory, the loop's identity in the registry"),
    Field("updatedAt", None, read=scalars.opt_str, fresh=True,
          doc=_ISO + "set by every write"),
    Field("lastCheckpoint", None, read=scalars.opt_str, fresh=True,
          doc=_ISO + "set by PreCompact"),
    Field("errors", list, read=fields.errors, fresh=True,
          doc=f"recent errors (`at`, `iteration`, `message`, details), the newest {MAX_ERRORS}:"
              " `ralphstate run` records each failed or timed-out agent iteration here"),
    Field("blocksWithoutProgress", 0, read=scalars.count(0), fresh=True,
          doc="ralphstate's stall counter: blocks in a row that saw no progress"),
    Field("lastProgress", None, read=scalars.opt_str, fresh=True,
          doc="the fingerprint of the progress the last block saw, then the stamp of the"
              " project's files last taken ([Stall](../explanation/hooks.md#stall))"),
    Field("verifyOnStop", None, read=scalars.verify_on_stop, copied=True, contract=_on,
          config="verify-on-stop",
          doc="run the checks before the Stop hook allows a claimed completion (`null`: the"
              " default, on; `false`: turned off, `ralphstate config verify-on-stop false`); a"
              " `false` in a file without `noCriteria` was written before this default, and reads"
              " as `null`"),
    Field("cleanVerify", None, read=scalars.switch, copied=True, contract=_on,
          config="clean-verify",
          doc="clean-room verification (`null`: the default, on wherever the loop is in a git"
              " repository; `false`: turned off, `ralphstate config clean-verify off`): the checks"
              " that accept a completion, the Stop hook's and `ralphstate run`'s, run in a"
              " temporary worktree of the files git tracks ([Clean-room"
              " verification](../explanation/proof.md#clean-room-verification))"),
    Field("checkTimeouts", dict, read=fields.timeouts, copied=True, contract=_of_criteria,
          doc="criterion → the seconds its check may run, above 0 and at most"
              f" {MAX_CHECK_TIMEOUT:,g}"),
    Field("evidence", dict, read=fields.evidence, fresh=True,
          doc="criterion → what backs its status (see [verify](commands.md#ralphstate-verify)):"
              " `result` is `verified`, `claimed` or `failing`; in git, a check's evidence records"
              " `commit`, `dirty` and `tree` (the work tree's); `alreadyTrue` is `true` when the"
              " criterion's check passed at its first run, before the loop did any work ([Red"
              " before green](../explanation/proof.md#red-before-green)); a check that ran in a"
              " clean room has `clean: true` and `cleanTree`, the id of the tree it ran on; `by`"
              " says who ran it and `confined` whether its room was confined ([Levels of a"
              " pass](../explanation/proof.md#levels-of-a-pass)); `strength` is how many tests"
              " its output said ran (`runner`, `collected`, `ran`, `passed`, `failed`,"
              " `skipped`; null: exit code only) and `weakened` why a pass ran fewer than its"
              " baseline ([Test strength](../explanation/proof.md#test-strength))"),
    Field("ownerAgent", None, read=_owner, fresh=True,
          doc="the agent whose session `sessionId` is: `claude` (the default), `codex`,"
              " `gemini`, `cursor`, `copilot`, `opencode`; null without a `sessionId`"),
    Field("noCriteria", False, read=scalars.flag, contract=_set,
          doc="`true` when the person started the loop with `init --no-criteria`: while it has"
              " no criteria, the marker alone ends it; without it, a loop with no criteria never"
              " completes"),
    Field("usage", None, read=fields.usage, fresh=True,
          doc="what the loop has spent: `tokens`, `cost` (US dollars) and `seconds` of"
              " `ralphstate run` iterations, summed over its iterations, plus the tokens the Stop"
              " hook reads from an interactive session's transcript (null until the first)"),
    Field("maxCost", None, read=scalars.budget, budget="cost", config="max-cost",
          doc="the loop's budget in US dollars" + _BUDGET.format("max-cost")),
    Field("maxTokens", None, read=scalars.whole_budget, budget="tokens", config="max-tokens",
          doc="the loop's budget in tokens" + _BUDGET.format("max-tokens")),
    Field("maxDuration", None, read=scalars.budget, budget="seconds", config="max-duration",
          doc="the loop's budget in seconds" + _BUDGET.format("max-duration")),
    Field("lastFailure", None, read=scalars.an_object, fresh=True,
          doc="the API error the last turn ended on (`at`, `error`, `message`), written by the"
              " StopFailure hook and cleared once the next SessionStart has told it"),
    Field("tasksFile", None, read=scalars.tasks_file,
          doc="a markdown file in the project whose checkboxes are the steps (`init --task`, [A"
              " markdown task file](../how-to/task-lists.md#a-markdown-task-file)); null: the steps"
              " are kept here"),
    Field("boxCriteria", list, read=fields.str_list,
          doc="the criteria that are boxes of the task file (`init --task FILE --contract"
              " boxes`, [The task file as the"
              " contract](../how-to/task-lists.md#the-task-file-as-the-contract)): each is met when"
              " every box with its name is ticked, a claim like `criteria set`, or by its check"
              " when it has one; empty: none"),
    Field("taskList", list, read=fields.task_list, fresh=True,
          doc="the agent's task list as the PostToolUse hook mirrors it: each task's `list` and"
              " `id`, `subject`, `status` (`pending`, `in_progress`, `completed`), the `step` it is"
              " on and whether the mirror `added` that step ([Dual"
              " state](../how-to/task-lists.md#dual-state-the-agents-task-list"
              "-the-loop-and-the-task-file));"
              f" at most {MAX_MIRRORED_TASKS} tasks; a task's own extra keys are kept"),
    Field("transcriptUsage", None, read=fields.transcript_usage, fresh=True,
          doc="where the Stop hook stopped reading the session's transcript for its tokens"
              " (`session`, `file`: a hash of the path and inode, `offset`, `lastMessageId`,"
              " `resync`, `midLine`, `countedAt`: the newest reply counted, so a session that owns"
              " the loop again never counts its replies twice; see [Tokens inside a"
              " session](../explanation/hooks.md#tokens-inside-a-session))"),
    Field("guards", None, read=fields.guards, contract=_sorted,
          doc="the guarded files: git pathspecs relative to the project root (`tests/`,"
              " `:(glob)**/conftest.py`, `scripts/ci.sh`), at most"
              f" {MAX_GUARDS} of at most {MAX_GUARD_CHARS:,} characters each. `init` writes the"
              " default set (`--guard PATH` adds, `--no-guard` writes `null`), `ralphstate config"
              " guard` changes it; a completion after an approved guarded file changed, went away,"
              " or was joined by new test configuration waits for the person's review ([Guarded"
              " files](../explanation/proof.md#guarded-files)). `null`: not guarded (`init"
              " --no-guard`, and every loop from before guards)"),
    Field("expectFail", list, read=fields.str_list, copied=True, contract=_sorted_criteria,
          doc="the criteria whose check must fail once before a pass counts (`init"
              " --expect-fail`, `criteria check NAME CMD --expect-fail`; [Red before"
              " green](../explanation/proof.md#red-before-green)): a check that passes before its"
              " command ever failed proves nothing yet, so its criterion stays unmet. Whether it"
              " failed is kept outside the project, in the loop's ledger, so editing this file"
              " cannot make up a failure; dropping a criterion from it is a weakening a person"
              " must approve"),
    Field("reviewer", None, read=scalars.opt_str, copied=True, contract=_value,
          config="reviewer",
          doc="the command that grades the rubrics, reading its prompt on stdin (`ralphstate"
              " config reviewer CMD`, person-only); null: Claude Code with no tools (`claude -p"
              " --tools \"\" ...`)"),
    Field("grades", dict, read=fields.grades, fresh=True,
          doc="criterion → the reviewer's last verdict: `result` (`pass`, `fail`, `none`: no"
              " verdict could be read), `at`, `by: reviewer`, `actor` (the reviewer's `command`"
              " and `model`), `where` (`stop`, `task`, `run`), `reasons`, `seconds`, `tokens`,"
              " `cost`. Written only by ralphstate; a record to read: every completion asks the"
              " reviewer again, so a verdict written here by hand counts as none"),
    Field("ownerTimeout", None, read=scalars.seconds, config="owner-timeout",
          doc="how long the owning session may leave the loop untouched (no write to this"
              " file) before a session that starts in the project takes the loop over, in seconds:"
              " `ralphstate config owner-timeout 2h|off|default`; null: 30 minutes, 0: never"
              " ([Ownership](../explanation/design.md#ownership))"),
    Field("verifyBudget", None, read=checkrun.budget_seconds, copied=True, config="verify-budget",
          doc="the seconds the Stop hook and the task gate may spend on the checks (`null`:"
              f" {STOP_VERIFY_BUDGET:g}; `0`: none, every check that must run is verified"
              " by the hook in the background) ([Long test"
              " suites](../explanation/hooks.md#long-test-suites))"),
    Field("verifyJobs", None, read=checkrun.job_count, copied=True, config="verify-jobs",
          doc="how many checks run at once (`null`: the processors, at least 16), 1 to"
              f" {MAX_CHECK_JOBS}"),
    Field("runAlone", list, read=fields.str_list, copied=True,
          doc="the criteria whose check runs with no other beside it (`criteria check NAME"
              " --alone`)"),
    Field("verifyInterrupted", None, read=checkrun.interruption, fresh=True,
          doc="a verification stopped before its checks finished: `at`, `by` (`stop`, `task`,"
              " `verify`, `run`), `how` (`terminated`: a SIGTERM, as a client that gave up on its"
              " hook sends; `interrupted`: Ctrl-C; `killed`: killed outright, recorded by its"
              " watchdog) and the `criteria` whose check did not finish; each leaves the list when"
              " its check runs again, and the record goes with the last. `status` and SessionStart"
              " say it while it is here"),
    Field("stepRetries", dict, read=fields.step_retries, fresh=True,
          doc="step → iterations of `ralphstate run` that ended with it still the next step,"
              " kept over runs (a run that pauses and the next one count on from the same number);"
              " `step-retries` (default 10) pauses the loop with `step_retries` when one reaches"
              " it; a step done or gone loses its count ([run](run.md#retries-per-step))"),
    Field("fixSteps", list, read=fields.step_list, fresh=True,
          doc="the steps a verification added: once no other step is open, each criterion"
              " whose check failed gains the step `Fix: NAME (added by verification)`, once; it is"
              " done while its check passes and open again when it fails"
              " ([run](run.md#gaps-become-fix-steps))"),
    Field("readiness", None, read=fields.readiness,
          doc="the spec's readiness score `init` gave it: `score` (0 to 10) and `shape`, `tool`"
              " (run unattended) or `colleague` (`ralphstate run` checks in with the person); null"
              " for a loop started before it ([The spec's shape](run.md#the-specs-shape))"),
)
# fmt: on

FIELDS: dict[str, Field] = {row.name: row for row in ROWS}
FIELD_ORDER: tuple[str, ...] = tuple(FIELDS)
RUN_FIELDS: tuple[str, ...] = tuple(row.name for row in ROWS if row.fresh)
INIT_READS: tuple[str, ...] = tuple(row.name for row in ROWS if row.init_reads)
COPIED: tuple[str, ...] = tuple(row.name for row in ROWS if row.copied)
CONTRACT: tuple[Field, ...] = tuple(row for row in ROWS if row.contract)
BUDGETS: tuple[Field, ...] = tuple(row for row in ROWS if row.budget)
BUDGET_KEYS: tuple[str, ...] = tuple(row.name for row in BUDGETS)
# Field → the name `ralphstate config` sets it by.
CONFIG_KEYS: dict[str, str] = {row.name: row.config for row in ROWS if row.config}


def defaults() -> Raw:
    """Every field at its default, in the schema's order."""
    return {row.name: row.initial() for row in ROWS}
