"""The rubrics of graded criteria, set by the person alone (core/grading.py).

`ralphstate criteria rubric NAME "TEXT"` gives a criterion a rubric a reviewer grades it
by; `--remove` takes it off. Only the person may do either (loop/person.py): the rubric
is part of what proves the loop done, and an agent that wrote its own would grade its
own work. A rubric changed or removed in state.json by hand is a weakening the person
reviews (core/proof.py)."""

from __future__ import annotations

from ralphstate.core import grading
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.text import visible, visible_lines
from ralphstate.loop.checklist import find_criterion
from ralphstate.loop.person import require_person
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import ledger
from ralphstate.storage.repo import git
from ralphstate.storage.system.paths import LoopPaths


def set_rubric(store: Store, name: str, text: str | None) -> tuple[str, bool]:
    """Give criterion `name` (or its number) the rubric `text`, or remove it (None):
    (the criterion, whether anything changed)."""
    if text is not None and not text.strip():
        raise RalphstateError("a rubric needs some text, not only spaces.")
    if text is not None and len(text) > grading.MAX_RUBRIC_CHARS:
        raise RalphstateError(f"a rubric has at most {grading.MAX_RUBRIC_CHARS:,} characters.")
    require_person(store.paths, "`ralphstate criteria rubric`")

    def fn(state: st.State, events: list[Event]) -> tuple[str, bool]:
        crit = find_criterion(state, name)
        old = state["rubrics"].get(crit)
        if old == text:
            return crit, False
        if text is None:
            state["rubrics"].pop(crit, None)
            events.append({"event": "rubric_removed", "criterion": crit})
        else:
            state["rubrics"][crit] = text
            events.append({"event": "rubric_set", "criterion": crit, "rubric": text[:500]})
        return crit, True

    return store.update(fn)


def describe(state: st.State, name: str) -> str:
    """The criterion's rubric and who grades it, as the person reads it."""
    crit = find_criterion(state, name)
    rubric = state["rubrics"].get(crit)
    if rubric is None:
        return f"criterion '{visible(crit)}' has no rubric"
    who = visible(grading.reviewer_of(state))
    return (
        f"criterion '{visible(crit)}' is graded by a reviewer ({who}) against this rubric:\n"
        + visible_lines(rubric)
    )


def note_base(paths: LoopPaths, kept: dict[str, object] | None = None) -> None:
    """Keep the commit a new loop starts on in its ledger: the diff a reviewer reads
    begins there. A loop that replaces one not yet over keeps that loop's base."""
    base = kept.get("baseCommit") if kept else None
    if not isinstance(base, str):
        base = git.head(paths.root)
    ledger.change(paths, lambda entry: entry.update(baseCommit=base))
