"""`ralphstate statusline [--wrap ORIGINAL]`: the loop in Claude Code's status line.

Claude Code runs the status line command after each assistant message with a JSON
object on stdin (`workspace.project_dir`, `workspace.current_dir`, `cwd`, ...). This
prints one short line for the loop of that project,

    loop 3/20 · 2/5 verified · next: wire the button · $0.42

(the cost is Claude Code's own `cost.total_cost_usd` for the session), or
`loop paused (stall) · 2/5 verified`, and nothing when no loop runs there (none, or
complete, or cancelled). A running loop whose session runs outside Claude Code's own
sandbox (its settings' `sandbox.enabled` is not true: loop/clientbox.py) says
`unconfined`, unless `ralphstate run` drives it. A running loop that nothing will
enforce (no agent's hook, no plugin, no `ralphstate run`: `loop.enforcement`) ends its
line by saying so, and what to run. It runs as often as a hook and is held to the no-loop hook's
cost: nothing is imported before a loop is known to exist (docs/explanation/design.md, "The hot
path"), and any fault prints nothing.

`--wrap ORIGINAL` (written by `ralphstate install --statusline` over a status line the
person already had): ORIGINAL is their `statusLine` object, JSON in base64; their
command runs first with the same input and its output is printed as it is, then ours
on a line of its own.
"""

from __future__ import annotations

import os
import stat  # already imported by os: free
import sys

from ralphstate.core import limits
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.system import paths

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from ralphstate.core.fields import Evidence
    from ralphstate.core.state import State

USAGE = (
    "usage: ralphstate statusline [--wrap ORIGINAL]\n"
    "Run by Claude Code's status line with its JSON on stdin; prints one line about the"
    " project's loop, or nothing.\n"
    "Example:\n"
    "  ralphstate install --statusline"
)
MAX_NEXT = 40
# The most our line shows: a status line is one short line, whatever the state holds.
MAX_LINE = 160
# What the line says of a `.loop/` or state file that leads out of the project, which
# `status` and the hooks refuse too (storage/paths.check_safe).
REFUSED = "ralphstate: this loop's files lead outside the project; refused"
WRAPPED_TIMEOUT = 10.0
WRAPPED_OUTPUT_BYTES = 64 * 1024  # of the wrapped command's output, the most kept
SEPARATOR = " · "
# What a running loop's line ends with while the session's agent runs outside Claude
# Code's own sandbox (`sandbox.enabled` off or unset: loop/clientbox.py). A loop
# `ralphstate run` drives is confined, or not, by its run, whose summary says which.
UNCONFINED = "unconfined"


def main(args: list[str] | None = None) -> None:
    """The status line process: print the line, then end (see hooks.entry.main)."""
    code = run(sys.argv[1:] if args is None else args)
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def run(args: list[str]) -> int:
    if args[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE + "\n")
        return 0
    try:
        data = sys.stdin.buffer.read(limits.MAX_HOOK_INPUT_BYTES) if sys.stdin else b""
    except (OSError, ValueError):
        data = b""
    lines = []
    if len(args) >= 2 and args[0] == "--wrap":
        theirs = _wrapped(args[1], data)
        if theirs:
            lines.append(theirs)
    try:
        ours = line_for(data)
    except Exception:  # noqa: BLE001 - a status line never shows a fault
        ours = None
    if ours:
        lines.append(ours if len(ours) <= MAX_LINE else ours[: MAX_LINE - 1] + "…")
    if lines:
        try:
            sys.stdout.write("\n".join(lines) + "\n")
        except (OSError, ValueError):
            pass
    return 0


def line_for(data: bytes) -> str | None:
    """The status line for the input `data`, None when no loop runs in its project."""
    start = _start(data)
    loop_dir = paths.find_dir(start) if start else None
    if loop_dir is None:
        return None
    try:
        paths.check_safe(paths.at(loop_dir))
    except RalphstateError:
        return REFUSED
    # Not blocking on a FIFO or a device where the state belongs (fsio.read_regular,
    # without importing pathlib onto this path).
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    with os.fdopen(os.open(os.path.join(loop_dir, "state.json"), flags), "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        raw = f.read(limits.MAX_STATE_BYTES + 1)
    if len(raw) > limits.MAX_STATE_BYTES:
        return None
    from ralphstate.core import state as st

    loop = st.parse(raw)
    if loop["status"] in ("complete", "cancelled"):
        return _ended(loop_dir, loop)
    if loop["grades"]:  # a verdict written by hand is not shown as graded
        from ralphstate.storage.peruser import ledger

        ledger.disown_grades(paths.at(loop_dir), loop)
    line = render(loop, _number_after(data, b'"total_cost_usd"'))
    if line and loop["status"] == "in_progress":
        from ralphstate.loop import enforcement

        root = os.path.dirname(loop_dir)
        roots = [root, paths.git_top(root) or root, start or root]
        if not enforcement.driven_by_run(loop_dir):
            from ralphstate.loop import clientbox

            if not clientbox.enabled(roots):
                line += SEPARATOR + UNCONFINED
        if enforcement.enforcer(roots, loop_dir) is None:
            from ralphstate.loop import gateoff

            said = gateoff.short(paths.at(loop_dir), loop)  # hooks enforced it once
            line += SEPARATOR + (said or enforcement.SHORT)
    return line


def _ended(loop_dir: str, loop: State) -> str | None:
    """A finished loop shows nothing, unless it ended outside ralphstate (a hand edit
    of state.json): then the line says it is not verified (storage/peruser/ledger.py)."""
    from ralphstate.storage.peruser import ledger

    if ledger.ended_outside(paths.at(loop_dir), loop):
        return f"loop {loop['status']} outside ralphstate: NOT verified"
    return None


def _how(evidence: dict[str, Evidence], proven: list[str]) -> str:
    """How the verified criteria were verified: ` (sealed)`, or each level counted when
    they differ (core/provenance.py); "" when none is."""
    from ralphstate.core import provenance

    levels = [provenance.of_evidence(evidence[c]) for c in proven]
    if not levels:
        return ""
    if len(set(levels)) == 1:
        return f" ({provenance.WORDS[levels[0]]})"
    shown = [
        f"{levels.count(lv)} {provenance.WORDS[lv]}" for lv in provenance.LEVELS if lv in levels
    ]
    return f" ({', '.join(shown)})"


def _graded(loop: State, name: str) -> bool:
    """A met criterion with a rubric its reviewer last passed (core/grading.py)."""
    grade = loop["grades"].get(name, {}) if name in loop["rubrics"] else {}
    return grade.get("result") == "pass"


def render(loop: State, cost: float | None = None) -> str | None:
    """The line for the loop `loop`; None when it is finished. `cost` is Claude Code's
    own figure for the session (`cost.total_cost_usd`), shown when it gives one."""
    from ralphstate.core.text import visible

    criteria = loop["criteria"]
    met = [c for c in criteria if loop["criteriaStatus"].get(c)]
    evidence = loop["evidence"]
    proven = [
        c
        for c in met
        if evidence.get(c, {}).get("result") == "verified" and c not in loop["rubrics"]
    ]
    verified = len(proven)
    counts = f"{verified}/{len(criteria)} verified{_how(evidence, proven)}"
    graded = sum(1 for c in met if c not in proven and _graded(loop, c))
    if graded:
        counts += f", {graded} graded"
    if len(met) > verified + graded:
        counts += f", {len(met) - verified - graded} claimed"
    if loop["status"] == "paused":
        reason = visible(" ".join((loop["pauseReason"] or "user").split()))
        if len(reason) > MAX_NEXT:
            reason = reason[: MAX_NEXT - 1] + "…"
        return SEPARATOR.join([f"loop paused ({reason})", counts])
    if loop["status"] != "in_progress":
        return None
    parts = [f"loop {loop['iteration']}/{loop['maxIterations']}", counts]
    remaining = loop["remainingSteps"]  # derived on reading: no scan per step
    if remaining:
        step = visible(" ".join(remaining[0].split()))  # a newline is a space here
        if len(step) > MAX_NEXT:
            step = step[: MAX_NEXT - 1] + "…"
        parts.append(f"next: {step}")
    if cost is not None:
        parts.append(f"${cost:.2f}")
    return SEPARATOR.join(parts)


def _number_after(data: bytes, key: bytes) -> float | None:
    """The JSON number that follows `key` in `data`, or None (read as `_string_after`
    reads strings: the input is not parsed whole)."""
    rest = _value_after(data, key)
    if rest is None:
        return None
    end = 0
    while end < len(rest) and end < 32 and rest[end : end + 1] in b"0123456789.eE+-":
        end += 1
    try:
        value = float(rest[:end])
    except ValueError:
        return None
    return value if 0 <= value < 1e9 else None


def _start(data: bytes) -> str | None:
    """Where to look for the loop: the input's project directory, else its current
    directory, else this process's. The input is not parsed whole: importing a JSON
    parser would cost more than the rest of the no-loop path (docs/explanation/design.md, "The hot
    path"); the strings are read where their keys are."""
    for key in (b'"project_dir"', b'"current_dir"', b'"cwd"'):
        found = _string_after(data, key)
        if found:
            return found
    return os.getcwd()


def _value_after(data: bytes, key: bytes) -> bytes | None:
    """What follows the colon after the first `key` (a key in quotes) in `data`, its
    leading whitespace dropped; None when `key` is missing or no colon follows it."""
    at = data.find(key)
    if at < 0:
        return None
    rest = data[at + len(key) :].lstrip()
    if not rest.startswith(b":"):
        return None
    return rest[1:].lstrip()


_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _string_after(data: bytes, key: bytes) -> str | None:
    """The JSON string value that follows `key` (a key in quotes) in `data`, or None."""
    rest = _value_after(data, key)
    if rest is None or not rest.startswith(b'"'):
        return None
    text = rest[1:].decode("utf-8", "replace")
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == '"':
            value = "".join(out)
            try:
                return value.encode("utf-16", "surrogatepass").decode("utf-16")
            except UnicodeError:
                return None
        if char == "\\":
            code = text[i + 1 : i + 2]
            if code == "u":
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                except ValueError:
                    return None
                i += 6
                continue
            out.append(_ESCAPES.get(code, code))
            i += 2
            continue
        out.append(char)
        i += 1
    return None


def _wrapped(original: str, data: bytes) -> str | None:
    """What the person's own status line command prints for `data` (stripped of its
    final newline), None when it prints nothing or cannot run."""
    from ralphstate.storage.system import children

    command = wrapped_command(original)
    if not command:
        return None
    try:
        done = children.run(
            shell_words(command), input=data, timeout=WRAPPED_TIMEOUT, limit=WRAPPED_OUTPUT_BYTES
        )
    except OSError:
        return None
    if done.code is None:  # killed at its timeout
        return None
    text = done.out.decode("utf-8", "replace").rstrip("\r\n")
    return text or None


def wrapped_command(argument: str) -> str | None:
    from ralphstate.core.wrapping import decode

    original = decode(argument)
    command = original.get("command") if original else None
    return command if isinstance(command, str) and command.strip() else None


def shell_words(command: str) -> list[str]:
    """How Claude Code runs a status line command: sh (Git Bash's on Windows)."""
    if os.name == "nt":
        import shutil

        bash = shutil.which("bash")
        return [bash, "-c", command] if bash else ["cmd", "/c", command]
    return ["/bin/sh", "-c", command]
