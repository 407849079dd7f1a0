"""Every bound ralphstate enforces, in one place, each tested at its boundary."""

from __future__ import annotations

# The most read of a per-user JSON file (the loop registry, the trust store); a larger
# one cannot be used, and is kept aside when it would be rewritten.
MAX_USER_FILE_BYTES = 8 * 1024 * 1024
# The most loops the per-user registry keeps (an entry is at most about 1.5 KB, so the
# file stays well under MAX_USER_FILE_BYTES); recording one more forgets first the loops
# whose directory is gone, then the finished ones, then those updated longest ago.
MAX_REGISTRY_LOOPS = 2000
# The most read of a settings file ralphstate reads but does not own (`.loop/config.toml`,
# `[tool.ralphstate.run]` in pyproject.toml, an agent's settings JSON); a larger one is
# refused. Templates (`init --from`) are bounded by MAX_STATE_BYTES.
MAX_SETTINGS_BYTES = 1024 * 1024
# Hook stdin larger than this is refused without being read in full.
MAX_HOOK_INPUT_BYTES = 4 * 1024 * 1024
# A state file larger than this is not read (it is a mistake or an attack).
MAX_STATE_BYTES = 2 * 1024 * 1024
# The most of a markdown task file (`tasksFile`) that is read; a bigger one is refused.
MAX_TASKS_FILE_BYTES = 1024 * 1024
# The agent's task list as the loop mirrors it (`taskList`, docs/explanation/design.md,
# "Task tools"): how many tasks are kept, and the longest subject and id kept of each (a
# longer subject is clipped, a task whose id is longer is not mirrored, a longer shared
# list's name is not used).
MAX_MIRRORED_TASKS = 100
MAX_TASK_SUBJECT_CHARS = 300
MAX_TASK_ID_CHARS = 100
# Room kept below MAX_STATE_BYTES for the loop's bookkeeping (status, owner, iteration,
# errors, ...): a change that adds to the loop itself (spec, criteria, steps, checks,
# evidence, unknown keys) may not bring state.json past MAX_STATE_BYTES minus this, so
# `pause`, `cancel`, `resume` and the hooks always have room on a file ralphstate wrote.
STATE_HEADROOM_BYTES = 64 * 1024
# The deepest a value in state.json may be nested (the file's own object is level 1):
# orjson writes no deeper than 254 levels, so a deeper file could be read but never
# written back; it is refused when read instead.
MAX_STATE_DEPTH = 100
# A state file that does not parse is read again after STATE_REREAD_PAUSE seconds, and
# again while it keeps changing (an editor saving it in place), for at most
# STATE_SETTLE_SECONDS, before it is called broken.
STATE_REREAD_PAUSE = 0.01
STATE_SETTLE_SECONDS = 0.5
# How far back from the end of a transcript the Stop hook looks for the last reply.
MAX_TRANSCRIPT_TAIL_BYTES = 4 * 1024 * 1024
# The most of a transcript the Stop hook reads at one stop to count the tokens of the
# replies appended since the last stop (agents/transcript_usage.py); what is left is
# read at the next stop. A line longer than this is passed over unread.
MAX_TRANSCRIPT_USAGE_BYTES = 4 * 1024 * 1024
# How much of a transcript's end is read to tell a hook the client ran from one a shell
# ran (hooks/forged.py): a tool call still waiting for its result there is a shell's.
FORGED_TAIL_BYTES = 256 * 1024
# The most of a project's other transcripts looked at for a session in the middle of a
# tool call when a new session takes a loop (hooks/forged.py), newest first.
FORGED_SIBLINGS = 8
# The chunk the transcript is read in, backwards.
TRANSCRIPT_CHUNK_BYTES = 64 * 1024
# Longest block reason the Stop hook emits.
MAX_REASON_CHARS = 4000
# Longest SessionStart additionalContext (Claude Code caps it at 10,000).
MAX_CONTEXT_CHARS = 8000
# Longest single free-text item (criterion, step, spec) quoted into reason or context.
MAX_ITEM_CHARS = 300
MAX_SPEC_CHARS = 2000
# A completion marker, at most: the model repeats it exactly (core/marker.py).
MAX_MARKER_CHARS = 100
# How many list items a reason or context shows before summarising the rest.
MAX_LIST_ITEMS = 15
# Most history lines `ralphstate log` prints.
MAX_LOG_LINES = 10000
# The most of history.jsonl read at once, from its end (`log`, `watch`, `run`): a line
# that does not fit whole is left out.
MAX_HISTORY_TAIL_BYTES = 4 * 1024 * 1024
# The longest history line ralphstate writes: past it, lists keep their first
# MAX_HISTORY_LIST_ITEMS items and texts their first MAX_HISTORY_TEXT_CHARS characters
# (`"clipped": true` says so), and if that is still too long only the event is kept.
MAX_HISTORY_LINE_BYTES = 16 * 1024
MAX_HISTORY_LIST_ITEMS = 20
MAX_HISTORY_TEXT_CHARS = 500
# How many recent errors `errors` keeps in state.json.
MAX_ERRORS = 20
# The most a loop's iteration, its cap (`maxIterations`) and its stall limit may be: the
# cap exists to be a cap, so more is refused.
MAX_ITERATIONS_CEILING = 100_000
# Longest description of what is wrong with a state file (it quotes the file's values).
MAX_PROBLEM_CHARS = 300
# Seconds to wait for .loop/state.lock: the CLI, then the hooks.
LOCK_TIMEOUT = 5.0
HOOK_LOCK_TIMEOUT = 2.0
# What the hooks remember of the faults they told the person about (storage/peruser/notices.py):
# (session, fault) pairs per loop, and loops.
MAX_NOTICES_PER_LOOP = 50
MAX_NOTICE_LOOPS = 100
# The error log is rotated when it grows past this.
MAX_LOG_FILE_BYTES = 512 * 1024
# Checks (`ralphstate verify`, verify-on-stop): how long one check may run unless its
# criterion says otherwise (`checkTimeouts`), and the most a criterion may ask for.
CHECK_TIMEOUT = 600.0
MAX_CHECK_TIMEOUT = 86400.0
# What is kept of a check's output: the last lines of the last bytes, read as it runs.
MAX_CHECK_OUTPUT_BYTES = 4096
MAX_CHECK_OUTPUT_LINES = 40
# The most of one line of a check's output read for how many tests ran
# (verify/strength.py); the rest of a longer line is passed over.
MAX_COUNT_LINE_BYTES = 512
# The Stop hook's total time for running checks before it allows a claimed completion;
# `ralphstate install` gives the Stop hook STOP_HOOK_TIMEOUT, which leaves room for it.
STOP_VERIFY_BUDGET = 120.0
STOP_HOOK_TIMEOUT = 180
# The SessionEnd hook's time (Claude Code gives SessionEnd hooks 1.5 s in all unless a
# hook's `timeout` in a settings file raises it): room for a slow start on a busy
# machine, and no more, since the client waits for it as it exits.
SESSION_END_HOOK_TIMEOUT = 10
# The most a loop may give its Stop hook for checks (`verifyBudget`; above the default,
# the agent's own timeout for the hook must be raised with it).
MAX_STOP_VERIFY_BUDGET = 3600.0
# How many checks run at once (`verifyJobs`): by default the processors, at least
# MIN_CHECK_JOBS; a loop may ask for 1 to MAX_CHECK_JOBS.
MIN_CHECK_JOBS = 16
MAX_CHECK_JOBS = 64
# How much of a block reason the failing checks' output may take, all together.
MAX_REASON_OUTPUT_CHARS = 2400
# `ralphstate run`: the spec, each criterion or step, and how many of each, as the
# prompt quotes them; how much of each --context file, and of all of them together.
RUN_SPEC_CHARS = 20_000
RUN_ITEM_CHARS = 1000
RUN_LIST_ITEMS = 100
RUN_CONTEXT_FILE_CHARS = 20_000
RUN_CONTEXT_CHARS = 60_000
# Seconds between the stages of stopping an agent (interrupt, terminate, kill), unless
# the run's `grace` says otherwise; and how long its output may go on after it exits.
RUN_GRACE_SECONDS = 3.0
RUN_DRAIN_SECONDS = 2.0
# How many iterations one `ralphstate run` may be given (--max).
RUN_MAX_ITERATIONS = 10_000
# How much of the end of an iteration's output is read for the agent's own report of
# its tokens, cost and errors (`run/usage.py`, `run/ratelimits.py`).
RUN_USAGE_TAIL_BYTES = 1024 * 1024
# The figures of one iteration an agent's report gives (`run/usage.py`) and a history
# line holds (`report/story.py`): tokens, a cost in US dollars, a duration in seconds.
# One that is not a finite number from 0 up to its bound is not believed: the iteration
# counts as not having reported it (`run` says so).
MAX_ITERATION_TOKENS = 10**12
MAX_ITERATION_COST = 1_000_000.0
MAX_ITERATION_SECONDS = 366 * 86400.0
# The loop's `usage` sums stop growing at these (the largest `max-tokens` budget is
# MAX_USAGE_TOKENS), so no total ever becomes a figure state.json cannot hold.
MAX_USAGE_TOKENS = 10**15
MAX_USAGE_COST = 1_000_000_000.0
MAX_USAGE_SECONDS = 100 * 366 * 86400.0
# A usage limit's reset that an agent says lies further away than this is read as this
# far: the run pauses rather than wait (it waits a day at most, run/ratelimits.py).
MAX_RESET_SECONDS = 366 * 86400.0
# The longest prompt `--prompt-mode arg` passes: one argument of at most 128 KiB with
# its terminating NUL (Linux's MAX_ARG_STRLEN; macOS allows more, Windows 32,767
# characters for the whole command line).
RUN_ARG_PROMPT_BYTES = 128 * 1024 - 1
RUN_ARG_PROMPT_CHARS_WINDOWS = 30_000
# How much of .loop/lessons.md goes into every run prompt and the SessionStart
# restore (its end: the newest lessons).
LESSONS_CHARS = 4000
# How long a run's notifier (`notify`) may take before it is killed.
NOTIFY_SECONDS = 10.0
# How often `ralphstate watch` looks at the state file, unless told otherwise.
WATCH_INTERVAL = 0.5
# How long one git command may run, and how much of its output is kept.
GIT_TIMEOUT = 60.0
MAX_GIT_OUTPUT_BYTES = 256 * 1024
# All the git commands of one snapshot of the work tree's tree (storage/repo/git.py), which a
# Stop hook may take twice around its checks: 2 x 20 + STOP_VERIFY_BUDGET stays below
# STOP_HOOK_TIMEOUT.
GIT_SNAPSHOT_SECONDS = 20.0
# What the Stop hook looks at to tell a turn that changed the project's files from one
# that did not (storage/repo/filestamp.py): the most files it stats (in git, of the paths
# `git status` lists; outside git, of the project's files in breadth-first order), and
# how long its `git status` may take (past it, the turn is taken to have changed none).
MAX_STAMP_FILES = 2000
STAMP_SECONDS = 10.0
# A snapshot reads an untracked file up to this size; a larger one is summarised by its
# size and times instead (storage/system/scratch.py; `git config ralphstate.bigFileThreshold`
# sets another size). The most of the untracked files' names it holds at once: past it,
# git reads them all.
SNAPSHOT_BIG_FILE_BYTES = 1024 * 1024
MAX_UNTRACKED_LIST_BYTES = 16 * 1024 * 1024
# Repositories inside the work tree (submodules, and repositories in untracked
# directories): a snapshot reads each one's work tree, to this depth and at most this
# many per repository; more, and the snapshot is unknown (the checks run again).
MAX_NESTED_REPOS = 64
MAX_NESTED_DEPTH = 3
# The guarded files (`guards`, storage/repo/guarded.py): how many pathspecs a loop may
# guard, the longest one, and the most of a guarded files' diff `review` shows.
MAX_GUARDS = 200
MAX_GUARD_CHARS = 1000
MAX_GUARD_DIFF_BYTES = 64 * 1024
# A clean room (storage/repo/cleanroom.py): the most its making may take (inside a Stop hook,
# the checks' budget bounds it too), and its removal afterwards: 2 x 20 + STOP_VERIFY_BUDGET
# + 20 still stays below STOP_HOOK_TIMEOUT. How much of the restored paths' index entries
# (`git ls-files -s`, some 100 bytes a file) it reads.
CLEAN_ROOM_SECONDS = 60.0
CLEAN_ROOM_REMOVE_SECONDS = 20.0
MAX_RESTORE_INDEX_BYTES = 64 * 1024 * 1024
# How many of the newest history lines `ralphstate report` reads.
MAX_REPORT_HISTORY_LINES = 20_000
