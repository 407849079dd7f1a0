"""Every bound ralphstate enforces, in one place, each tested at its boundary."""

from __future__ import annotations

# Hook stdin larger than this is refused without being read in full.
MAX_HOOK_INPUT_BYTES = 4 * 1024 * 1024
# A state file larger than this is not read (it is a mistake or an attack).
MAX_STATE_BYTES = 2 * 1024 * 1024
# How far back from the end of a transcript the Stop hook looks for the last reply.
MAX_TRANSCRIPT_TAIL_BYTES = 4 * 1024 * 1024
# The chunk the transcript is read in, backwards.
TRANSCRIPT_CHUNK_BYTES = 64 * 1024
# Longest block reason the Stop hook emits.
MAX_REASON_CHARS = 4000
# Longest SessionStart additionalContext (Claude Code caps it at 10,000).
MAX_CONTEXT_CHARS = 8000
# Longest single free-text item (criterion, step, spec) quoted into reason or context.
MAX_ITEM_CHARS = 300
MAX_SPEC_CHARS = 2000
# How many list items a reason or context shows before summarising the rest.
MAX_LIST_ITEMS = 15
# Most history lines `ralphstate log` prints.
MAX_LOG_LINES = 10000
# How many recent errors `errors` keeps in state.json.
MAX_ERRORS = 20
# Seconds to wait for .loop/state.lock: the CLI, then the hooks.
LOCK_TIMEOUT = 5.0
HOOK_LOCK_TIMEOUT = 2.0
# The error log is rotated when it grows past this.
MAX_LOG_FILE_BYTES = 512 * 1024
