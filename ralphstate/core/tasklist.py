"""The agent's task list, mirrored into the loop's steps (docs/explanation/design.md, "Task tools").

Claude Code's task tools keep the model's plan in a list that neither the Stop hook can
read nor a new session keeps. After each call of one (`TaskCreate`, `TaskUpdate`, or
the older `TodoWrite`), the PostToolUse hook hands the call to `mirror`, which records
each task in `taskList` and keeps the steps with it:

- a created task is a step (its subject), added at the end of the plan unless a step
  with that text is there already;
- a completed task makes its step done (once every task on that step is completed); a
  reopened one makes it not done again; a started one changes only the task's status;
- a deleted task takes its step with it, only when the mirror added that step, no
  other task is on it and it is not done: a step the person wrote is never removed, and
  work done stays recorded.

With a task file (`tasksFile`) the file's boxes are the steps: a task is on the box with
its subject, if there is one; completing it asks for that box to be ticked (the caller
ticks it in the file), and nothing else changes the steps.

Pure: the state and the history events are edited in place, nothing is read or written.
"""

from __future__ import annotations

from typing import Any

from ralphstate.core import state as st
from ralphstate.core.fields import TASK_STATUSES, Task
from ralphstate.core.limits import MAX_MIRRORED_TASKS, MAX_TASK_ID_CHARS, MAX_TASK_SUBJECT_CHARS

# The tools whose calls are mirrored; any other tool is left alone.
TOOLS = ("TaskCreate", "TaskUpdate", "TodoWrite")
Event = dict[str, object]


def subject(value: object) -> str | None:
    """A task's subject as the loop keeps it: one line, at most MAX_TASK_SUBJECT_CHARS;
    None for what is not text or only spaces."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if not text:
        return None
    if len(text) > MAX_TASK_SUBJECT_CHARS:
        text = text[: MAX_TASK_SUBJECT_CHARS - 1] + "…"
    return text


def ident(value: object) -> str | None:
    """A task's id (or a list's) as text; None when there is none or it is too long."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value)
    return text if text and len(text) <= MAX_TASK_ID_CHARS else None


def mirror(
    state: st.State,
    events: list[Event],
    tool: str,
    tool_input: Any,
    tool_response: Any,
    list_id: str,
    boxes: list[str] | None = None,
) -> list[str]:
    """Mirror one call of a task tool into `state`, appending what changed to `events`.
    `list_id` names the task list the call worked on; `boxes` are the task file's box
    texts when the loop has one (its steps are then left to the file). Returns the boxes
    to tick, for the caller to tick in the file. A call that cannot be read is ignored."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    tool_response = tool_response if isinstance(tool_response, dict) else {}
    tasks = _Mirror(state, events, list_id, boxes)
    if tool == "TaskCreate":
        task = tool_response.get("task")
        task_id = ident(task.get("id")) if isinstance(task, dict) else None
        if isinstance(task, dict) and task_id is not None:  # a task is known by its id
            tasks.create(task_id, subject(task.get("subject")), "pending", False)
    elif tool == "TaskUpdate":
        tasks.update(tool_input, tool_response)
    elif tool == "TodoWrite":
        tasks.todos(tool_response.get("oldTodos"), tool_response.get("newTodos"))
    return tasks.ticks


class _Mirror:
    def __init__(
        self, state: st.State, events: list[Event], list_id: str, boxes: list[str] | None
    ) -> None:
        self.state = state
        self.events = events
        self.list = list_id
        self.boxes = None if boxes is None else set(boxes)
        self.ticks: list[str] = []

    # -- finding tasks ------------------------------------------------------------

    def find(self, task_id: str | None, text: str | None = None) -> Task | None:
        """The task `task_id` of this list; a TodoWrite item (no id) by its subject."""
        for task in self.state["taskList"]:
            if task["list"] != self.list or task["id"] != task_id:
                continue
            if task_id is not None or task["subject"] == text:
                return task
        return None

    def _others(self, task: Task) -> list[Task]:
        """The other tasks on the same step."""
        return [t for t in self.state["taskList"] if t is not task and t["step"] == task["step"]]

    def _note(self, action: str, task: Task, **details: object) -> None:
        event: Event = {"event": "task", "action": action, "subject": task["subject"]}
        if task["id"] is not None:
            event["id"] = task["id"]
        event.update(details)
        self.events.append(event)

    # -- the calls ----------------------------------------------------------------

    def create(self, task_id: str | None, text: str | None, status: str, todo: bool) -> None:
        """A created task (`todo`: a TodoWrite item, which has its status with it). A
        task this list already has is only a repeat: a TaskCreate changes nothing, a todo
        item its status."""
        if text is None:
            return
        task = self.find(task_id, text)
        fresh = task is None
        if task is None:
            task = self._relink(task_id, text) or self._new(task_id, text)
            if task is None:
                return
        if todo or fresh:
            # a task created again never undoes its step: the work was done
            self.status(task, status, created=fresh)

    def _relink(self, task_id: str | None, text: str) -> Task | None:
        """A task of an earlier list (a session before /clear, or another) with the same
        subject: the model recreated its plan, so the task is the same one."""
        for task in self.state["taskList"]:
            if task["list"] != self.list and task["subject"] == text:
                task["list"], task["id"] = self.list, task_id
                self._note("relinked", task)
                return task
        return None

    def _new(self, task_id: str | None, text: str) -> Task | None:
        listed = self.state["taskList"]
        if len(listed) >= MAX_MIRRORED_TASKS and not self._evict():
            self.events.append({"event": "task", "action": "not_mirrored", "subject": text})
            return None
        step: str | None = text
        added = False
        if self.boxes is not None:
            step = text if text in self.boxes else None
        elif text not in self.state["steps"]:
            st.set_steps(self.state, [*self.state["steps"], text], self.state["completedSteps"])
            added = True
            self.events.append({"event": "step_added", "step": text, "by": "task"})
        task: Task = {
            "list": self.list,
            "id": task_id,
            "subject": text,
            "status": "pending",
            "step": step,
            "added": added,
        }
        listed.append(task)
        self._note("added", task)
        return task

    def _evict(self) -> bool:
        """Make room: forget the oldest completed task (of an earlier list first). The
        steps are not touched. False when every task is still open."""
        listed = self.state["taskList"]
        done = [t for t in listed if t["status"] == "completed"]
        if not done:
            return False
        earlier = [t for t in done if t["list"] != self.list]
        listed.remove((earlier or done)[0])
        return True

    def update(self, tool_input: dict[str, Any], tool_response: dict[str, Any]) -> None:
        if tool_response.get("success") is False:
            return
        task_id = ident(tool_response.get("taskId", tool_input.get("taskId")))
        task = self.find(task_id) if task_id is not None else None
        if task is None:
            return  # a task the loop never saw created: its subject is not known
        fields = tool_response.get("updatedFields")
        renamed = subject(tool_input.get("subject"))
        if renamed and (not isinstance(fields, list) or "subject" in fields):
            self.rename(task, renamed)
        change = tool_response.get("statusChange")
        status = change.get("to") if isinstance(change, dict) else tool_input.get("status")
        if status == "deleted":
            self.delete(task)
        elif status in TASK_STATUSES:
            self.status(task, str(status))

    def todos(self, old: object, new: object) -> None:
        """TodoWrite: `newTodos` is the whole list; an item of `oldTodos` missing from it
        was removed by the model (after /clear the old list is empty: nothing is)."""
        now = _todo_items(new)
        for text, status in now:
            self.create(None, text, status, True)
        kept = {text for text, _ in now}
        for text, _ in _todo_items(old):
            task = self.find(None, text) if text not in kept else None
            if task is not None:
                self.delete(task)

    # -- what a call does ---------------------------------------------------------

    def status(self, task: Task, status: str, created: bool = False) -> None:
        before = task["status"]
        if status == before:
            return
        task["status"] = status  # type: ignore[typeddict-item]  # one of TASK_STATUSES
        if status == "completed":
            self._note("completed", task)
            self._complete(task)
        elif before == "completed" and not created:
            self._note("reopened", task, status=status)
            self._reopen(task)
        else:
            self._note(status, task)

    def _complete(self, task: Task) -> None:
        if self.boxes is not None:
            if task["subject"] in self.boxes:
                task["step"] = task["subject"]
                self.ticks.append(task["subject"])
            return
        step = task["step"]
        state = self.state
        if step is None or step not in state["steps"] or step in state["completedSteps"]:
            return
        if any(t["status"] != "completed" for t in self._others(task)):
            return  # another task on this step is still open
        st.set_steps(state, state["steps"], [*state["completedSteps"], step])
        self.events.append({"event": "step_done", "step": step, "by": "task"})

    def _reopen(self, task: Task) -> None:
        step = task["step"]
        state = self.state
        if self.boxes is not None or step is None or step not in state["completedSteps"]:
            return  # a task file's box is ticked by the mirror, never cleared
        st.set_steps(state, state["steps"], [s for s in state["completedSteps"] if s != step])
        self.events.append({"event": "step_undone", "step": step, "by": "task"})

    def delete(self, task: Task) -> None:
        self.state["taskList"].remove(task)
        self._note("removed", task)
        step = task["step"]
        if not task["added"] or step is None or self.boxes is not None:
            return
        others = self._others(task)
        if others:  # the step stays with the other tasks on it, as the mirror's
            others[0]["added"] = True
            return
        state = self.state
        if step in state["steps"] and step not in state["completedSteps"]:
            st.set_steps(state, [s for s in state["steps"] if s != step], state["completedSteps"])
            self.events.append({"event": "step_removed", "step": step, "by": "task"})

    def rename(self, task: Task, text: str) -> None:
        """A new subject: the task's, and its step's when the mirror added that step
        and no other task or step stands in the way."""
        old = task["subject"]
        if text == old:
            return
        task["subject"] = text
        self._note("renamed", task, to=text, **{"from": old})
        if self.boxes is not None:
            task["step"] = text if text in self.boxes else None
            return
        step = task["step"]
        state = self.state
        if (
            not task["added"]
            or step is None
            or step not in state["steps"]
            or text in state["steps"]
            or self._others(task)
        ):
            return
        steps = [text if s == step else s for s in state["steps"]]
        done = [text if s == step else s for s in state["completedSteps"]]
        st.set_steps(state, steps, done)
        task["step"] = text
        self.events.append({"event": "step_renamed", "step": step, "to": text, "by": "task"})


def _todo_items(value: object) -> list[tuple[str, str]]:
    """TodoWrite's todos as (subject, status); items that cannot be read are skipped."""
    if not isinstance(value, list):
        return []
    items: dict[str, str] = {}
    for item in value[: MAX_MIRRORED_TASKS * 2]:
        if not isinstance(item, dict):
            continue
        text = subject(item.get("content"))
        status = item.get("status")
        if text is not None and status in TASK_STATUSES:
            items.setdefault(text, str(status))
    return list(items.items())
