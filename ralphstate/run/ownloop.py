"""The one loop a `ralphstate run` drives, known by its id.

The run reads and changes `.loop/state.json` many times an iteration. Should another
loop take its place meanwhile (a state file checked out or copied in, a loop started
while `init` could not see the run), the run must not record its iteration, its
spending or its ending into that loop: every read and change through `LoopStore` first
checks the loop id, and raises `Replaced` when it is another. The run then ends as
`ended_outside`, saying so (run/endings.py).
"""

from __future__ import annotations

from typing import TypeVar

from ralphstate.core import state as st
from ralphstate.core.errors import NoLoop
from ralphstate.core.text import short_id
from ralphstate.storage.loopdir.store import Change, Event, Store

T = TypeVar("T")


class Replaced(NoLoop):
    """state.json holds another loop than the one the run drives."""


class LoopStore(Store):
    """A store that reads and changes only the loop `loop_id`."""

    def __init__(self, store: Store, loop_id: str | None) -> None:
        super().__init__(store.paths, store.lock_timeout)
        self.loop_id = loop_id

    def load(self) -> st.State:
        state = super().load()
        self.check(state)
        return state

    def update(self, change: Change[T], *, read: st.State | None = None) -> T:
        def same_loop(state: st.State, events: list[Event]) -> T:
            self.check(state)
            return change(state, events)

        return super().update(same_loop, read=read)

    def check(self, state: st.State) -> None:
        """Replaced when `state` is another loop's."""
        if state["loopId"] != self.loop_id:
            raise Replaced(
                f"the loop this run drove ({short_id(self.loop_id or '-')}) was replaced"
                f" during the run by loop {short_id(state['loopId'] or '-')}; nothing of the"
                " run was written into it"
            )
