"""The loop's criteria and steps, changed by the agent's own commands (`criteria
add|set|remove`, `step add|done|undo`): each found by its text or its number, changed
through the store (locked, atomic, logged to history)."""

from __future__ import annotations

from ralphstate.core import clock, queries
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.typos import pick
from ralphstate.loop import taskfile
from ralphstate.storage.loopdir.store import Event, Store
from ralphstate.storage.peruser import truststore


def find_criterion(state: st.State, name: str) -> str:
    """The criterion `name` names: its text, or its 1-based number."""
    return pick(state["criteria"], name, "criterion", "criteria")


def find_step(state: st.State, ref: str) -> str:
    """The step `ref` names: its text, or its 1-based number."""
    return pick(state["steps"], ref, "step", "steps")


# -- criteria --------------------------------------------------------------------


def criteria_add(store: Store, name: str, check: str | None = None) -> st.State:
    before: dict[str, str] = {}

    def fn(state: st.State, events: list[Event]) -> st.State:
        if name in state["criteria"]:
            raise RalphstateError(f"criterion {name!r} is already in this loop.")
        before.clear()
        before.update(truststore.armed(state))
        state["criteria"].append(name)
        state["criteriaStatus"][name] = False
        state["evidence"].pop(name, None)
        if check:
            state["checks"][name] = check
        events.append({"event": "criterion_added", "criterion": name})
        return state

    if st.blank(name):
        raise RalphstateError(st.BLANK["criterion"])
    new = store.update(fn)
    from ralphstate.loop import person

    if person.confirm_first_checks(store.paths, before, new, "`ralphstate criteria add`"):
        truststore.carry(store.paths, before, new, {name} if check else set())
    return new


def criteria_set(store: Store, name: str, value: bool, note: str | None = None) -> tuple[str, bool]:
    def fn(state: st.State, events: list[Event]) -> str:
        found = find_criterion(state, name)
        if found in state["boxCriteria"] and found not in state["checks"]:
            raise RalphstateError(
                f"{found!r} is a box of {state['tasksFile']}, the loop's contract: tick it"
                " there (`ralphstate step done` ticks it); a tick is the claim."
            )
        before = queries.met(state, found)
        if before == value and found in state["criteriaStatus"]:
            return found
        state["criteriaStatus"][found] = value
        entry: Event = {"event": "criterion_set", "criterion": found, "value": value}
        if value:  # said, not proven: `ralphstate verify` proves it
            state["evidence"][found] = {"result": "claimed", "at": clock.now_iso()}
            entry["evidence"] = "claimed"
        else:
            state["evidence"].pop(found, None)
        if note:
            entry["note"] = note
        events.append(entry)
        return found

    return store.update(fn), value


def criteria_remove(store: Store, name: str) -> str:
    before: dict[str, str] = {}

    def fn(state: st.State, events: list[Event]) -> tuple[str, st.State]:
        found = find_criterion(state, name)
        before.clear()
        before.update(truststore.armed(state))
        state["criteria"].remove(found)
        state["criteriaStatus"].pop(found, None)
        state["checks"].pop(found, None)
        state["checkTimeouts"].pop(found, None)
        state["evidence"].pop(found, None)
        events.append({"event": "criterion_removed", "criterion": found})
        return found, state

    found, new = store.update(fn)
    truststore.carry(store.paths, before, new, {found})
    return found


# -- steps -----------------------------------------------------------------------


def step_add(store: Store, text: str) -> str:
    name = store.load()["tasksFile"]
    if name:
        raise RalphstateError(
            f"this loop's steps are the checkboxes of {name}; add a line `- [ ] {text}` there."
        )
    if st.blank(text):
        raise RalphstateError(st.BLANK["step"])

    def fn(state: st.State, events: list[Event]) -> None:
        if text in state["steps"]:
            raise RalphstateError(f"step {text!r} is already in this loop.")
        st.set_steps(state, [*state["steps"], text], state["completedSteps"])
        events.append({"event": "step_added", "step": text})

    store.update(fn)
    return text


def step_mark(store: Store, ref: str, done: bool) -> str:
    def fn(state: st.State, events: list[Event]) -> str:
        name = state["tasksFile"]
        if name:  # the box in the task file is the truth: tick it, then read it back
            root = store.paths.root
            taskfile.sync(state, root)
            found = find_step(state, ref)
            if taskfile.tick(root, name, found, done):
                events.append({"event": "step_done" if done else "step_undone", "step": found})
            taskfile.sync(state, root)
            return found
        found = find_step(state, ref)
        if (found in state["completedSteps"]) == done:
            return found
        completed = [s for s in state["completedSteps"] if s != found]
        if done:
            completed.append(found)
        st.set_steps(state, state["steps"], completed)
        events.append({"event": "step_done" if done else "step_undone", "step": found})
        return found

    return store.update(fn)


def tasks_refresh(store: Store) -> st.State:
    """Re-read the loop's task file into its steps (a box checked by a person or the
    agent is a step done); the state as it now is. TaskFileError when it cannot be read."""

    def fn(state: st.State, events: list[Event]) -> st.State:
        taskfile.sync(state, store.paths.root)
        return state

    return store.update(fn)
