"""What the commands do to a loop, with no knowledge of click.

Each operation finds the loop, changes it through the store (locked, atomic,
logged to history) and returns what the command line reports.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ralphstate.core import clock, ownership
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState, NoLoop, RalphstateError
from ralphstate.loop import taskfile
from ralphstate.storage import registry, trust
from ralphstate.storage.paths import LoopPaths, find, for_init, git_top, within
from ralphstate.storage.store import Change, Event, Store

# A name that matches nothing is answered with the closest names; a loop with this many
# or fewer is listed whole when none is close.
SHOW_ALL_NAMES = 5
TRUE_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def current_session() -> tuple[str | None, str | None]:
    """(agent, session id) of the agent session this command runs in, read from the
    variables each agent gives its shell commands (`adapters.session_from_env`)."""
    from ralphstate.agents.table import session_from_env

    return session_from_env(os.environ)


def claude_pid() -> str | None:
    """The Claude Code process this command runs under (its Bash tool), if any."""
    from ralphstate.agents.table import CLAUDE

    return CLAUDE.process_id(os.environ)


def project_root(start: str | os.PathLike[str]) -> Path:
    """The project a directory belongs to, where the hooks start looking for its loop
    and where `init` puts one: the project directory an agent names in the environment
    (`CLAUDE_PROJECT_DIR`, ...) when `start` is in it, else the top of the git work tree
    holding `start`, else `start` itself."""
    from ralphstate.agents.table import AGENTS

    for agent in AGENTS.values():
        named = agent.project_dir(os.environ)
        if named and within(start, named):
            return Path(named).absolute()
    top = git_top(start)
    return Path(top) if top else Path(start).absolute()


def hooks_view(start: str | os.PathLike[str]) -> tuple[bool, str] | None:
    """In a subdirectory of the project, which loop the hooks see: (they see the loop
    found from `start`, one sentence); None at the project root or with no loop here."""
    here = find(start)
    root = project_root(start)
    if here is None or Path(start).absolute() == root:
        return None
    seen = find(root)
    said = f"hooks: they start at the project root {root} and see"
    if seen is not None and os.path.realpath(seen.dir) == os.path.realpath(here.dir):
        return True, f"{said} this loop."
    if seen is None:
        return False, (
            f"{said} no loop there or above, so this one is not enforced; start the loop at"
            " the root (`ralphstate init` without --here), or the agent in"
            f" {here.root}."
        )
    return False, f"{said} the loop at {seen.dir}, not this one."


def locate(start: str | os.PathLike[str] | None = None) -> Store:
    """The store of the loop at or above `start` (default: the current directory)."""
    loop = find(start if start is not None else Path.cwd())
    if loop is None:
        raise NoLoop(
            "no loop here: no .loop/ in this directory or above (start one with `ralphstate init`)."
        )
    store = Store(loop)
    if not store.exists():
        raise NoLoop(
            f"no loop here: {loop.display(loop.state)} does not exist"
            " (start one with `ralphstate init`)."
        )
    return store


def parse_bool(text: str) -> bool:
    try:
        return TRUE_WORDS[text.strip().lower()]
    except KeyError:
        raise RalphstateError(
            f"{text!r} is not true or false (use true/false, yes/no or 1/0)."
        ) from None


# -- init ----------------------------------------------------------------------


def init(
    spec: str,
    criteria: list[str],
    steps: list[str],
    *,
    max_iterations: int | None,
    stall_limit: int | None,
    marker: str | None,
    continue_message: str | None = None,
    force: bool = False,
    template: dict[str, Any] | None = None,
    verify_on_stop: bool | None = None,
    no_criteria: bool = False,
    start: str | os.PathLike[str] | None = None,
    here: bool = False,
    task: Path | None = None,
) -> tuple[Store, st.State, Any]:
    """Start a loop at the project root of `start` (the current directory), or in
    `start` itself with `here`, or in $RALPHSTATE_DIR; refuse to replace an unfinished
    one. `no_criteria`: a loop without criteria, which the marker alone ends."""
    base = Path.cwd() if start is None else Path(start)
    loop = for_init(base if here else project_root(base))
    store = Store(loop)
    if store.exists() and not force:
        _refuse_unfinished(store)
    extra = dict(template or {})
    steps, boxes = _task_steps(loop, task, steps, extra)
    # An option given on the command line wins over the template, which wins over the default.
    if max_iterations is None:
        max_iterations = int(extra.get("maxIterations", st.DEFAULT_MAX_ITERATIONS))
    if stall_limit is None:
        stall_limit = int(extra.get("stallLimit", st.DEFAULT_STALL_LIMIT))
    if marker is None:
        marker = str(extra.get("completionMarker") or st.DEFAULT_MARKER)
    if not spec:
        spec = str(extra.get("spec") or "")
    if not spec:
        raise RalphstateError('a loop needs a spec: ralphstate init "what to build".')
    criteria = list(dict.fromkeys([*extra.get("criteria", []), *criteria]))
    steps = list(dict.fromkeys([*extra.get("steps", []), *steps]))
    _check_names(criteria, steps, no_criteria)
    for key in ("criteria", "steps", "spec", "remainingSteps"):
        extra.pop(key, None)
    for key in st.RUN_FIELDS:  # a template says what to do, not how far a loop got
        extra.pop(key, None)
    if continue_message is not None:
        extra["continueMessage"] = continue_message
    if verify_on_stop is not None:
        extra["verifyOnStop"] = verify_on_stop
    if no_criteria:
        extra["noCriteria"] = True
    try:
        new = st.new(
            spec,
            criteria,
            steps,
            max_iterations=max_iterations,
            stall_limit=stall_limit,
            marker=marker,
            session_id=current_session()[1],
            agent=current_session()[0],
            now=clock.now_iso(),
            loop_id=os.urandom(8).hex(),  # 16 hex digits, the loop's id
            extra=extra,
        )
    except CorruptState as exc:  # a value given to init, not a file on disk
        detail = str(exc).removeprefix("state.json: ")
        raise RalphstateError(f"cannot start this loop: {detail}.") from None
    # The hooks know a loop by the registry: a loop it cannot record would be a stranger
    # to them, so init says so before it starts anything.
    registry.check_writable()
    if boxes is not None:
        taskfile.apply(new, boxes)
    backup = store.create(
        new,
        [
            {
                "event": "init",
                "spec": spec[:200],
                "criteria": len(criteria),
                "steps": len(steps),
                "session": new["sessionId"],
            }
        ],
        backup=force or store.exists(),  # a finished loop is replaced, but kept
    )
    _register(loop, new)
    ignore_local_files(loop)
    # A template's checks are not trusted here until a person has read them (init shows
    # them) and run `ralphstate trust`: a template may have come with a repository.
    return store, new, backup


def _task_steps(
    loop: LoopPaths, task: Path | None, steps: list[str], extra: dict[str, Any]
) -> tuple[list[str], list[taskfile.Box] | None]:
    """The steps `init` starts with, and with `--task` the task file's boxes, which are
    the steps (a template's are dropped); the file's name, inside the project, is set in
    `extra`."""
    if task is None:
        return steps, None
    if steps:
        raise RalphstateError("give the steps as --step or as --task's checkboxes, not both.")
    extra["tasksFile"] = taskfile.relative(loop.root, task)
    extra.pop("steps", None)
    boxes = taskfile.boxes(taskfile.read(loop.root, extra["tasksFile"]))
    return taskfile.steps(boxes)[0], boxes


def _refuse_unfinished(store: Store) -> None:
    """Refuse to replace a loop that is not over, or a file that cannot be read."""
    try:
        old = store.load()
    except RalphstateError as exc:
        raise RalphstateError(f"{exc} Use --force to start over (a copy of it is kept).") from None
    if old["status"] in st.ACTIVE:
        # From a subdirectory, "here" would be wrong: the loop is at the project root.
        here = _same(Path.cwd(), store.paths.root)
        where = "here" if here else f"in {store.paths.root}"
        raise RalphstateError(
            f"an unfinished loop is already {where} ({old['status']}, spec:"
            f" {old['spec'][:60]!r}); use --force to replace it (a copy is kept)."
        )


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _check_names(criteria: list[str], steps: list[str], no_criteria: bool) -> None:
    for kind, names in (("criterion", criteria), ("step", steps)):
        if any(st.blank(str(name)) for name in names):
            raise RalphstateError(st.BLANK[kind])
    if no_criteria and criteria:
        raise RalphstateError(
            "--no-criteria starts a loop without criteria; leave out -c (and a template's"
            " criteria), or leave out --no-criteria."
        )


# `.loop/.gitignore`, written by `init` when there is none: every file ralphstate
# writes under `.loop/` that belongs to this machine only (the locks and their soft
# markers, `init --force`'s copies, an interrupted write's temporary files, the run logs,
# `report --html`'s page). state.json, history.jsonl, config.toml and lessons.md may be
# committed.
GITIGNORE_HEADER = "# Written by `ralphstate init`."
LOCAL_FILES = ("*.lock", "*.lock.soft", "*.bak", "*.tmp", "runs/", "report.html")
GITIGNORE = (
    f"{GITIGNORE_HEADER} state.json, history.jsonl, config.toml and lessons.md can\n"
    "# be committed; these files belong to this machine only.\n"
    + "".join(f"{name}\n" for name in LOCAL_FILES)
)
_GITIGNORE_READ_LIMIT = 64 * 1024


def ignore_local_files(loop: LoopPaths) -> None:
    """Write `.loop/.gitignore` unless there is one (or anything by that name). One that
    ralphstate wrote (it starts with `GITIGNORE_HEADER`) but that misses some of
    `LOCAL_FILES` (an older version's) gets the missing lines added; a person's own is
    never changed, and a symlink is never followed. A convenience: the loop works
    without it, so every failure is ignored."""
    path = Path(loop.dir) / ".gitignore"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        _complete_gitignore(path)
        return
    except OSError:
        return
    with contextlib.suppress(OSError), os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
        f.write(GITIGNORE)


def _complete_gitignore(path: Path) -> None:
    from ralphstate.storage import fsio

    if path.is_symlink():
        return
    try:
        raw = fsio.read_regular(path, _GITIGNORE_READ_LIMIT)  # never a FIFO
    except (OSError, RalphstateError):
        return
    if len(raw) > _GITIGNORE_READ_LIMIT:
        return
    text = raw.decode("utf-8", "replace")
    if not text.startswith(GITIGNORE_HEADER):
        return
    have = {line.strip() for line in text.splitlines()}
    missing = [name for name in LOCAL_FILES if name not in have]
    if not missing:
        return
    if text == _OLD_GITIGNORE:  # as init wrote it: now as init writes it
        new = GITIGNORE
    else:
        new = text + ("" if text.endswith("\n") else "\n") + "".join(f"{n}\n" for n in missing)
    with contextlib.suppress(OSError, RalphstateError):
        fsio.atomic_write(path, new.encode("utf-8"), expect=raw)


_OLD_GITIGNORE = """\
# Written by `ralphstate init`. state.json, history.jsonl and config.toml can be
# committed; these files belong to this machine only.
state.lock
*.bak
*.tmp
runs/
"""


def _register(loop: LoopPaths, state: st.State) -> None:
    # The loop works without the registry; `list` just won't show it.
    with contextlib.suppress(OSError, RalphstateError):
        registry.record(loop, state, claude_pid())


def _pick(items: list[str], ref: str, kind: str, plural: str) -> str:
    """The item named `ref`, or numbered `ref` (from 1); RalphstateError listing them."""
    if ref in items:
        return ref
    if ref.isdecimal() and 1 <= int(ref) <= len(items):  # "¹" is a digit, not a number
        return str(items[int(ref) - 1])
    import difflib

    close = difflib.get_close_matches(ref, items, n=3, cutoff=0.6)
    if close:
        hint = "did you mean " + " or ".join(repr(i) for i in close) + "?"
    elif len(items) <= SHOW_ALL_NAMES:
        hint = f"{plural}: {', '.join(repr(i) for i in items) or 'none'}"
    else:
        hint = f"it has {len(items)} {plural}; `ralphstate status` lists them"
    raise RalphstateError(f"no {kind} {ref!r} in this loop ({hint}).")


def find_criterion(state: st.State, name: str) -> str:
    """The criterion `name` names: its text, or its 1-based number."""
    return _pick(state["criteria"], name, "criterion", "criteria")


def find_step(state: st.State, ref: str) -> str:
    """The step `ref` names: its text, or its 1-based number."""
    return _pick(state["steps"], ref, "step", "steps")


def criteria_add(store: Store, name: str, check: str | None = None) -> st.State:
    before: dict[str, str] = {}

    def fn(state: st.State, events: list[Event]) -> st.State:
        if name in state["criteria"]:
            raise RalphstateError(f"criterion {name!r} is already in this loop.")
        before.clear()
        before.update(trust.armed(state))
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
    trust.carry(store.paths, before, new, {name} if check else set())
    return new


def criteria_set(store: Store, name: str, value: bool, note: str | None = None) -> tuple[str, bool]:
    def fn(state: st.State, events: list[Event]) -> str:
        found = find_criterion(state, name)
        before = st.met(state, found)
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
        before.update(trust.armed(state))
        state["criteria"].remove(found)
        state["criteriaStatus"].pop(found, None)
        state["checks"].pop(found, None)
        state["checkTimeouts"].pop(found, None)
        state["evidence"].pop(found, None)
        events.append({"event": "criterion_removed", "criterion": found})
        return found, state

    found, new = store.update(fn)
    trust.carry(store.paths, before, new, {found})
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


# -- lifecycle -------------------------------------------------------------------


def _lifecycle(store: Store, fn: Change[st.State]) -> st.State:
    """A change of status, also noted in the registry's summary of a loop known here
    (`ralphstate list` shows it for a loop whose directory is gone). The agent's own
    commands (criteria, steps) leave the registry alone: they run dozens of times a loop
    and `list` reads a loop's live file while it exists."""
    new = store.update(fn)
    with contextlib.suppress(OSError, RalphstateError):
        registry.refresh(store.paths, new)
    return new


def tasks_refresh(store: Store) -> st.State:
    """Re-read the loop's task file into its steps (a box checked by a person or the
    agent is a step done); the state as it now is. TaskFileError when it cannot be read."""

    def fn(state: st.State, events: list[Event]) -> st.State:
        taskfile.sync(state, store.paths.root)
        return state

    return store.update(fn)


def pause(store: Store, reason: str) -> tuple[st.State, bool]:
    """Pause the loop; (the state, whether it changed). A paused loop stays as it is,
    its reason too: `pause` twice is not a mistake, as `resume` twice is not."""

    def fn(state: st.State, events: list[Event]) -> bool:
        if state["status"] == "paused":
            return False
        if state["status"] != "in_progress":
            raise RalphstateError(f"the loop is {state['status']}, not in progress.")
        state["status"], state["pauseReason"] = "paused", reason
        events.append({"event": "paused", "reason": reason})
        return True

    return _lifecycle_changed(store, fn)


def _lifecycle_changed(store: Store, fn: Change[bool]) -> tuple[st.State, bool]:
    """`_lifecycle` for a change that says whether it changed anything."""
    said: list[bool] = []

    def change(state: st.State, events: list[Event]) -> st.State:
        said[:] = [fn(state, events)]
        return state

    return _lifecycle(store, change), said[0]


def resume(store: Store, more: int | None) -> tuple[st.State, bool]:
    """Resume the loop; (the state, whether it changed). An in-progress loop without
    `more` stays as it is."""

    def fn(state: st.State, events: list[Event]) -> bool:
        if state["status"] == "cancelled":
            raise RalphstateError("the loop was cancelled; start a new one with `ralphstate init`.")
        if state["status"] == "in_progress" and more is None:
            return False
        extra = more
        if extra is None and state["iteration"] >= state["maxIterations"]:
            extra = 10
        if extra:
            state["maxIterations"] = max(state["maxIterations"], state["iteration"]) + extra
        if state["status"] == "complete" and not st.unmet(state):
            raise RalphstateError(
                "the loop is complete; set a criterion back to false first"
                " (ralphstate criteria set NAME false) or start a new loop."
            )
        state["status"], state["pauseReason"] = "in_progress", None
        state["blocksWithoutProgress"] = 0
        state["lastProgress"] = None
        events.append({"event": "resumed", "maxIterations": state["maxIterations"]})
        return True

    return _lifecycle_changed(store, fn)


def cancel(store: Store) -> tuple[st.State, bool]:
    """Cancel the loop; (the state, whether it changed): a cancelled loop stays as it is."""

    def fn(state: st.State, events: list[Event]) -> bool:
        if state["status"] == "complete":
            raise RalphstateError(
                "the loop is complete; there is nothing to cancel (it stays complete)."
            )
        if state["status"] == "cancelled":
            return False
        state["status"], state["pauseReason"] = "cancelled", None
        events.append({"event": "cancelled"})
        return True

    return _lifecycle_changed(store, fn)


def adopt(store: Store) -> st.State:
    """Own the loop from this agent session (or, outside one, let the next adopt it)."""
    agent, sid = current_session()

    def fn(state: st.State, events: list[Event]) -> st.State:
        events.append(ownership.take(state, sid, agent, "cli"))
        if not state["startedAt"]:  # the registry knows a loop by it (registry.knows)
            state["startedAt"] = clock.now_iso()
        return state

    registry.check_writable()  # adopting is recording: say so before the owner changes
    new = store.update(fn)
    registry.record(store.paths, new, claude_pid())
    return new


def loop_summary(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A registry entry refreshed from the loop's own file where it still exists."""
    loop_dir = key
    root = str(Path(loop_dir).parent)
    row: dict[str, Any] = {"path": root, "loopDir": loop_dir, **entry}
    row["exists"] = Path(loop_dir).is_dir()
    if row["exists"]:
        try:
            state = Store(LoopPaths(root, loop_dir)).load()
        except RalphstateError as exc:
            row["status"] = "unreadable"
            row["problem"] = str(exc)
        else:
            row.update(
                spec=state["spec"][:200],
                status=state["status"],
                criteriaMet=len(state["criteria"]) - len(st.unmet(state)),
                criteriaTotal=len(state["criteria"]),
                updatedAt=state.get("updatedAt"),
                sessionId=state.get("sessionId"),
            )
        from ralphstate.storage import git  # loops side by side: each on its own branch

        row["branch"] = git.branch(root)
    else:
        row["status"] = "gone"
    return row


def list_loops(prune: bool = False) -> list[dict[str, Any]]:
    rows = [loop_summary(k, v) for k, v in sorted(registry.read().items())]
    if prune:
        for row in rows:
            if not row["exists"]:
                registry.forget(row["loopDir"])
        rows = [r for r in rows if r["exists"]]
    return rows
