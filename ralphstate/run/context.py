"""What the parts of one `ralphstate run` share: where it speaks (`Reporter`), the
loop's store and the plan, the iterations recorded so far, and the loop as last read.

The runner's outline (`runner`) owns one `Context`; the steps it takes (`bookkeeping`,
`agentrun`, `progress`, `limitwait`, `endings`) read and update it.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.run.plan import Plan
from ralphstate.run.result import IterationRecord
from ralphstate.run.spawn import Interrupts
from ralphstate.sandbox.modes import Box
from ralphstate.storage.loopdir.store import Event, Store, append_history


class Reporter(Protocol):
    """Where the run speaks: progress lines, and the agent's output as it comes."""

    def line(self, text: str) -> None: ...

    def output(self, data: bytes) -> None: ...


@dataclass
class Context:
    """One run's shared parts, and what it has learned so far."""

    store: Store
    plan: Plan
    report: Reporter
    interrupts: Interrupts
    # The iteration's log (the runs directory before the first iteration).
    log: Path
    started: float = field(default_factory=time.monotonic)
    records: list[IterationRecord] = field(default_factory=list)
    # The loop as the run last read or wrote it.
    state: st.State | None = None
    # What the ending's reason is about, and whose budget ended it (budgets.LOOPS, budgets.RUNS).
    detail: str | None = None
    over: str | None = None
    # The sandbox every iteration runs in (None: the run was given no sandbox mode).
    box: Box | None = None

    def note(
        self, events: list[Event], of: st.State | None = None, number: int | None = None
    ) -> None:
        """Append `events` to history under iteration `number` of the loop `of` (by
        default, the loop as last read); a history that cannot be written does not stop
        the run."""
        state = of if of is not None else self.state
        if number is None:
            number = state["iteration"] if state is not None else 0
        loop_id = state["loopId"] if state is not None else None
        with contextlib.suppress(RalphstateError):
            append_history(self.store.paths.history, events, number, loop_id=loop_id)
