"""A gate switched off: a loop that hooks enforced once and that nothing enforces now
(docs/explanation/proof.md, "The gate switched off").

The agent can edit the files that run ralphstate's hooks (Claude Code's settings, its
`disableAllHooks` and `enabledPlugins`, the other agents' hook files). PreToolUse asks
the person before a tool call of its own does (hooks/gatefiles.py); what it cannot see
(a program the agent wrote, a tool of another agent) is told here, after the fact.

What enforced the loop is remembered in the loop's ledger entry
(storage/peruser/ledger.py: `enforcedBy`, `enforcedAt`) when the loop starts and at
each session's start, where the hooks run by definition. A loop remembered enforced
that nothing enforces now is said by `status`, every command of a loop, the status
line and the next session's start: since when (the newest change to the hook files),
by what file, and which session owned the loop then. Who made the change no file
says: never the agent's name where only its session owned the loop.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path

from ralphstate.core import clock
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible
from ralphstate.loop import enforcement
from ralphstate.storage.system.paths import LoopPaths, git_top

# The ledger's keys: what enforced the loop, and when that was last seen.
ENFORCED_BY = "enforcedBy"
ENFORCED_AT = "enforcedAt"
# The ledger's key: the times the loop was seen not enforced (`since`, by what `file`,
# `until` it was again), its last few; the report and the completion say them.
GATE_OFF = "gateOff"
_KEPT_TIMES = 10


def roots_of(paths: LoopPaths) -> list[str]:
    """Where the loop's hook files are looked for: its project, the git work tree's
    top and the project root (`loop.project.project_root`)."""
    from ralphstate.loop.project import project_root

    root = str(paths.root)
    return [root, git_top(root) or root, str(project_root(root))]


def remember(paths: LoopPaths, by: str | None = None) -> None:
    """Record in the loop's ledger what enforces it now (`by`, else what
    `enforcement.enforcer` finds); nothing when nothing does or nothing changed. A
    ledger that cannot be written is left as it is: the gate is then not watched. The
    loop's trace is left too (`paths.leave_trace`)."""
    from ralphstate.storage.peruser import ledger
    from ralphstate.storage.system.paths import leave_trace

    leave_trace(paths.dir)  # a loop here: its deletion is said at the next stop
    found = by or enforcement.enforcer(roots_of(paths), str(paths.dir))
    if found is None:
        return
    entry = ledger.read(paths) or {}
    if entry.get(ENFORCED_BY) == found and not _open(entry):
        return

    def edit(current: ledger.Entry) -> None:
        current[ENFORCED_BY] = found
        current[ENFORCED_AT] = clock.now_iso()
        last = _open(current)
        if last is not None:  # enforced again: the time it was off ends
            last["until"] = clock.now_iso()

    with contextlib.suppress(RalphstateError, OSError):
        ledger.change(paths, edit)


def no_longer(paths: LoopPaths, state: st.State) -> str | None:
    """The sentence for a loop not over that hooks enforced once and nothing enforces
    now, saying since when and by what file; None otherwise."""
    found = switched_off(paths, state)
    if found is None:
        return None
    was, changed, when, off = found
    what = f"{visible(changed)} sets `disableAllHooks`" if off else f"{visible(changed)} changed"
    owner = state.get("sessionId")
    whose = ""
    if owner:
        from ralphstate.core.ownership import owner_agent

        whose = f"; the loop's owner: the {owner_agent(state)} session {visible(str(owner))[:40]}"
    return (
        f"ralphstate: this loop is no longer enforced: {visible(was)} enforced it, and since"
        f" {when} nothing does ({what}, not by ralphstate{whose}). Until its hooks run again"
        " the agent may stop unchecked: `ralphstate install` puts them back, `ralphstate"
        " doctor` says what is missing."
    )


def _open(entry: dict[str, object]) -> dict[str, object] | None:
    """The ledger entry's last time off, when it has not ended."""
    times = entry.get(GATE_OFF)
    last = times[-1] if isinstance(times, list) and times else None
    return last if isinstance(last, dict) and "until" not in last else None


def _note_off(paths: LoopPaths, changed: str, when: str) -> None:
    """Remember in the loop's ledger that it was seen not enforced (once a time off),
    so that its report and its completion say so after its hooks are back."""
    from ralphstate.storage.peruser import ledger

    def edit(current: ledger.Entry) -> None:
        if _open(current) is None:
            times = [t for t in current.get(GATE_OFF) or [] if isinstance(t, dict)]
            times.append({"since": when, "file": changed, "seen": clock.now_iso()})
            current[GATE_OFF] = times[-_KEPT_TIMES:]

    if _open(ledger.read(paths) or {}) is None:
        with contextlib.suppress(RalphstateError, OSError):
            ledger.change(paths, edit)


def was_off(entry: dict[str, object]) -> str | None:
    """The sentence for a loop whose gate was off for part of its life (its ledger
    `entry`'s `gateOff`): since when, by what file, until when; None when it never was."""
    raw = entry.get(GATE_OFF)
    times = [t for t in raw if isinstance(t, dict)] if isinstance(raw, list) else []
    if not times:
        return None
    said = [
        f"since {visible(str(t.get('since')))} ({visible(str(t.get('file')))} changed)"
        + (f" until {visible(str(t['until']))}" if "until" in t else "")
        for t in times[-3:]
    ]
    more = f" and {len(times) - 3} more time(s)" if len(times) > 3 else ""
    return (
        f"Its gate was off for part of its life, nothing enforcing it: {'; '.join(said)}{more};"
        " its agent could stop unchecked then."
    )


def short(paths: LoopPaths, state: st.State) -> str | None:
    """The status line's few words for `no_longer`: since when."""
    found = switched_off(paths, state)
    return None if found is None else f"NOT enforced since {found[2]}: hooks switched off"


def switched_off(paths: LoopPaths, state: st.State) -> tuple[str, str, str, bool] | None:
    """For a loop not over that hooks enforced once and nothing enforces now: what
    enforced it, the hook file changed last, the local time of that change, and whether
    that file sets `disableAllHooks` (remembered in the ledger: `gateOff`); None
    otherwise (a time off remembered then ends)."""
    if state["status"] not in st.ACTIVE:
        return None
    from ralphstate.storage.peruser import ledger

    entry = ledger.read(paths) or {}
    was = entry.get(ENFORCED_BY)
    if not isinstance(was, str) or entry.get("loop") not in (None, state["loopId"]):
        return None
    roots = roots_of(paths)
    if enforcement.enforcer(roots, str(paths.dir)) is not None:
        if _open(entry) is not None:
            remember(paths)  # enforced again: the time it was off ends
        return None
    off = enforcement.hooks_switched_off(roots)
    changed, when = _newest_change(roots, off)
    _note_off(paths, changed, when)
    return was, changed, when, off is not None


def _newest_change(roots: list[str], off: str | None) -> tuple[str, str]:
    """The hook file changed last (`off`, when a file switches every hook off) and the
    local time of that change; a project's file that is gone is dated by its directory."""
    newest: tuple[float, str] | None = None
    candidates = [off] if off else [path for _a, _s, path in enforcement.hook_files(roots)]
    for path in candidates:
        probe = Path(path)
        if not probe.exists() and any(Path(root) in probe.parents for root in roots):
            probe = probe.parent
        try:
            mtime = probe.stat().st_mtime
        except OSError:
            continue
        if newest is None or mtime > newest[0]:
            newest = (mtime, path)
    if newest is None:
        return (off or "the hook files"), "an unknown time"
    at = dt.datetime.fromtimestamp(newest[0], tz=dt.timezone.utc).astimezone()
    return newest[1], at.strftime("%Y-%m-%d %H:%M")
