"""Starting a loop, `ralphstate init`: at the project root, from the command line's
options over a template's over the defaults, refused over an unfinished loop."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ralphstate.core import clock, schema
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState, RalphstateError
from ralphstate.core.marker import check_marker
from ralphstate.loop import readiness, taskfile, tracker
from ralphstate.loop.gitignore import ignore_local_files
from ralphstate.loop.project import claude_pid, current_session, project_root
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import registry
from ralphstate.storage.system.paths import RUN_LOCK, LoopPaths, for_init

# Keys of a template that `init` reads itself rather than keeping as the state's extras:
# the fields the table says so of, and a tracker's settings (loop/tracker.py).
TEMPLATE_ONLY = (*schema.INIT_READS, "tracker")


@dataclass(frozen=True)
class InitRequest:
    """What `ralphstate init` is asked, built once from its options (cli/init.py) and
    passed down whole.

    `spec`, `criteria` and `steps` as given (a template's go first). `checks`: criteria
    given with their check commands (`--check NAME COMMAND`), before `criteria`; when a
    person gives them and the template brings none, they are trusted here. `task`: the
    markdown file whose boxes are the steps; `contract` "boxes": its boxes are the
    criteria (loop/boxcontract.py). `max_iterations`, `stall_limit`, `marker`,
    `continue_message`, `verify_on_stop`: None takes the template's, else the default.
    `template`: a template already read (`--from`, loop/template.py). `force`: replace
    an unfinished loop (a copy is kept). `here`: in the starting directory itself, not
    at its project root. `no_criteria`: a loop without criteria, which the marker alone
    ends. `guard` adds pathspecs to the guarded files; `no_guard` guards none.
    `expect_fail`: each criterion's check must fail once before a pass counts."""

    spec: str = ""
    criteria: tuple[str, ...] = ()
    checks: tuple[tuple[str, str], ...] = ()
    steps: tuple[str, ...] = ()
    task: Path | None = None
    contract: str | None = None
    max_iterations: int | None = None
    stall_limit: int | None = None
    marker: str | None = None
    continue_message: str | None = None
    template: dict[str, Any] | None = None
    force: bool = False
    verify_on_stop: bool | None = None
    here: bool = False
    no_criteria: bool = False
    guard: tuple[str, ...] = ()
    no_guard: bool = False
    expect_fail: bool = False


def init(
    request: InitRequest, start: str | os.PathLike[str] | None = None
) -> tuple[Store, st.State, Any]:
    """Start the loop `request` asks for at the project root of `start` (the current
    directory), or in `start` itself with `here`, or in $RALPHSTATE_DIR; refuse to
    replace an unfinished one. A template or task file with a tracker's frontmatter
    gives its settings (loop/tracker.py)."""
    if request.marker is not None:
        check_marker(request.marker)
    base = Path.cwd() if start is None else Path(start)
    loop = for_init(base if request.here else project_root(base))
    store = Store(loop)
    _refuse_while_run(loop)
    if store.exists() and not request.force:
        _refuse_unfinished(store)
    extra = _template(request)
    trackers = [extra.pop("tracker")] if "tracker" in extra else []
    steps, boxes, body = _task_steps(loop, request.task, list(request.steps), extra, trackers)
    max_iterations, marker, start_at = tracker.settle(
        trackers, extra, request.max_iterations, request.marker
    )
    max_iterations, stall_limit, marker = _limits(
        extra, max_iterations, request.stall_limit, marker
    )
    tracker.refuse_marker(body, marker, str(extra.get("tasksFile")))
    own = _box_contract(request.contract, boxes, extra)
    spec = _spec(request.spec, extra)
    checks = _own_checks(dict(request.checks))
    # The template's criteria, then those given with their checks, then the others.
    criteria = list(dict.fromkeys([*extra.get("criteria", []), *own, *checks, *request.criteria]))
    if checks:  # over the template's, which wait for trust
        extra["checks"] = {**(extra.get("checks") or {}), **checks}
    steps = list(dict.fromkeys([*extra.get("steps", []), *steps]))
    _check_names(criteria, steps, request.no_criteria)
    _set_extras(extra, request)
    extra["guards"] = _guards(loop, extra, list(request.guard), request.no_guard)
    agent, session_id = current_session()
    try:
        new = st.new(
            spec,
            criteria,
            steps,
            max_iterations=max_iterations,
            stall_limit=stall_limit,
            marker=marker,
            session_id=session_id,
            agent=agent,
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
    new["iteration"] = start_at  # where a tracker's count stood
    if boxes is not None:
        taskfile.apply(new, boxes)
    new["readiness"] = readiness.assess(new, loop.root).stored()  # the spec's shape
    event: dict[str, object] = {
        "event": "init",
        "spec": spec[:200],
        "criteria": len(criteria),
        "steps": len(steps),
        "session": new["sessionId"],
    }
    replaced = _unfinished(store) if request.force else None
    if replaced is not None:  # `init --force` over a loop not yet over ends that loop
        event["replaced"] = replaced
    backup = store.create(new, [event], backup=request.force or store.exists())
    _begin_ledger(loop, new)
    _register(loop, new)
    ignore_local_files(loop)
    # A template's checks are not trusted here until a person has read them (init shows
    # them) and run `ralphstate trust`: a template may have come with a repository. The
    # checks a person typed are theirs, as with `criteria check`.
    if checks:
        _trust_typed(loop, new, checks)
    return store, new, backup


def _template(request: InitRequest) -> dict[str, Any]:
    """The template's fields, a copy; with `expect_fail`, every criterion (the
    template's too) listed in `expectFail`: its check must fail first."""
    extra = dict(request.template or {})
    if request.expect_fail:
        given = [*request.criteria, *dict(request.checks)]
        extra["expectFail"] = [*extra.get("criteria", []), *given]
    return extra


def _refuse_while_run(loop: LoopPaths) -> None:
    """RalphstateError while a `ralphstate run` drives the loop here (it holds its lock)."""
    from ralphstate.storage.system import locking

    path = loop.dir / RUN_LOCK
    try:
        running = locking.held_elsewhere(path)
    except OSError as exc:
        raise RalphstateError(
            f"could not tell whether a `ralphstate run` is driving this loop: {path} could"
            f" not be locked ({exc.strerror or type(exc).__name__}); stop any run here,"
            " remove that file and try again."
        ) from None
    if running:
        raise RalphstateError(
            "a `ralphstate run` is driving this loop; stop it (Ctrl-C in its terminal)"
            " before you start another."
        )


def _own_checks(checks: dict[str, str]) -> dict[str, str]:
    """`init --check`'s pairs, refused when a name or a command is blank."""
    for name, command in checks.items():
        if st.blank(name):
            raise RalphstateError(st.BLANK["criterion"])
        if not command.strip():
            raise RalphstateError(f"--check {name!r} needs a command, not only spaces.")
    return checks


def _trust_typed(loop: LoopPaths, new: st.State, typed: dict[str, str]) -> None:
    """Trust the checks a person gave `init` on this machine, when they are all the
    loop's checks, by the same presence rule as `trust` (loop/person.py): a process
    with an agent's variables or an agent client above leaves them waiting for
    `ralphstate trust`, as do a template's beside them; at a terminal the person is
    asked once, the contract shown (only `yes` trusts them; the loop starts either
    way). With no terminal (a script, a pipe, a process the agent started outside its
    own tree) nobody confirmed them, so they wait for `ralphstate trust` at a terminal,
    as an agent's do (`init` says so). A trust store that cannot be written leaves
    them untrusted (`status` says so)."""
    from ralphstate.core import actor
    from ralphstate.loop import person
    from ralphstate.storage.peruser import truststore
    from ralphstate.storage.system import terminal

    armed = truststore.armed(new)
    if not actor.is_person(actor.current()) or any(typed.get(n) != c for n, c in armed.items()):
        return
    if person.agent_above() is not None:
        return  # an agent's `env -i ralphstate init -c`: its checks wait for the person
    what = "`ralphstate init --check`"
    lines = person.naming_state(loop, new, what)
    lines.append("The loop starts either way; checks you do not trust wait for `ralphstate trust`.")
    answer = terminal.ask(
        lines, f"Type {person.CONFIRM_WORD} to trust these checks, anything else to stop: "
    )
    if answer is terminal.NO_TERMINAL or answer.strip().lower() != person.CONFIRM_WORD:
        return
    actor.set_current({**actor.PERSON, "present": person.AT_TERMINAL})
    with contextlib.suppress(RalphstateError):
        truststore.record(loop, new)


def _unfinished(store: Store) -> dict[str, object] | None:
    """The loop `init --force` replaces, when it was not over: its id and status."""
    try:
        old = store.load()
    except RalphstateError:
        return None
    if old["status"] not in st.ACTIVE:
        return None
    return {"loop": old["loopId"], "status": old["status"], "spec": old["spec"][:120]}


def _begin_ledger(loop: LoopPaths, new: st.State) -> None:
    """The new loop in the ledger: who started it and its contract as it starts. A
    ledger that cannot be written is said; the loop starts all the same (its contract
    is then taken as it is the first time ralphstate sees it)."""
    from ralphstate.core import actor, proof
    from ralphstate.storage.peruser import ledger

    tree = None
    if new.get("guards"):  # the guarded files as the loop starts: changing them is seen
        from ralphstate.storage.repo import guarded

        tree = guarded.snapshot(loop, list(new["guards"] or []))
        from ralphstate.loop import approvedfiles

        approvedfiles.keep(loop, tree)
    author = actor.current()
    contract = proof.contract_of(new)
    prior = ledger.read(loop)
    kept = None
    if not actor.is_person(author) and prior and prior.get("status") in (*st.ACTIVE, "deleted"):
        # An agent's new loop over one not yet over (init --force, or state.json
        # deleted): the person's approved proof stays the measure of the new one.
        kept = prior
    try:
        ledger.begin(loop, new, author, contract, tree, kept)
        from ralphstate.loop import rubrics

        rubrics.note_base(loop, kept)  # where the diff a reviewer reads begins
        if kept is None or "gitSettings" not in kept:
            from ralphstate.loop.proofreview import record_git_settings

            record_git_settings(loop)
        else:  # the loop it replaces had its settings approved: they stay the measure
            held: dict[str, Any] = {
                k: kept[k] for k in ("gitSettings", "gitRepository") if k in kept
            }
            ledger.change(loop, lambda entry: entry.update(held))
        from ralphstate.loop.gateoff import remember

        remember(loop)
    except RalphstateError as exc:
        import sys

        sys.stderr.write(f"ralphstate: warning: {str(exc).rstrip('.')}.\n")


def _limits(
    extra: dict[str, Any], max_iterations: int | None, stall_limit: int | None, marker: str | None
) -> tuple[int, int, str]:
    """(maxIterations, stallLimit, completionMarker): an option given on the command line
    wins over the template, which wins over the default."""
    if max_iterations is None:
        max_iterations = int(extra.get("maxIterations", st.DEFAULT_MAX_ITERATIONS))
    if stall_limit is None:
        stall_limit = int(extra.get("stallLimit", st.DEFAULT_STALL_LIMIT))
    if marker is None:
        marker = str(extra.get("completionMarker") or st.DEFAULT_MARKER)
    return max_iterations, stall_limit, marker


def _spec(spec: str, extra: dict[str, Any]) -> str:
    """The spec given, else the template's; a loop needs one."""
    if not spec:
        spec = str(extra.get("spec") or "")
    if not spec:
        raise RalphstateError('a loop needs a spec: ralphstate init "what to build".')
    return spec


def _set_extras(extra: dict[str, Any], request: InitRequest) -> None:
    """The template's fields the state keeps as they are, with the options that are
    kept the same way."""
    for key in TEMPLATE_ONLY:
        extra.pop(key, None)
    for key in st.RUN_FIELDS:  # a template says what to do, not how far a loop got
        extra.pop(key, None)
    if request.continue_message is not None:
        extra["continueMessage"] = request.continue_message
    if request.verify_on_stop is not None:
        extra["verifyOnStop"] = request.verify_on_stop
    if request.no_criteria:
        extra["noCriteria"] = True


def _guards(
    loop: LoopPaths, extra: dict[str, Any], added: list[str], off: bool
) -> list[str] | None:
    """The guarded files (docs/explanation/proof.md, "Guarded files"): the default set,
    with the template's guards and `--guard`'s added; none with `--no-guard`. A
    template cannot guard fewer: it may have come with the repository."""
    if off:
        if added:
            raise RalphstateError("give --guard or --no-guard, not both.")
        return None
    from ralphstate.storage.repo import testfiles

    try:
        mine = [testfiles.checked(path) for path in added]
    except testfiles.BadGuard as exc:
        raise RalphstateError(f"--guard: {exc}.") from None
    refused = testfiles.refusal(loop.root, mine)
    if refused:
        raise RalphstateError(f"--guard: {refused.rstrip('.')}.")
    found = testfiles.default_guards(loop.root, dict(extra.get("checks") or {}))
    return list(dict.fromkeys([*found, *(extra.get("guards") or []), *mine]))


def _task_steps(
    loop: LoopPaths,
    task: Path | None,
    steps: list[str],
    extra: dict[str, Any],
    trackers: list[tuple[str, dict[str, Any]]],
) -> tuple[list[str], list[taskfile.Box] | None, str | None]:
    """The steps `init` starts with, and with `--task` the task file's boxes, which are
    the steps (a template's are dropped), and its body when it is a tracker, whose
    settings join `trackers`; the file's name, inside the project, is set in `extra`."""
    if task is None:
        return steps, None, None
    if steps:
        raise RalphstateError("give the steps as --step or as --task's checkboxes, not both.")
    name = extra["tasksFile"] = taskfile.relative(loop.root, task)
    extra.pop("steps", None)
    data = taskfile.read(loop.root, name)
    settings, body = tracker.read(data.decode("utf-8", "replace"), name)
    if settings is not None:
        trackers.append((name, settings))
    boxes = taskfile.boxes(data)
    return taskfile.steps(boxes)[0], boxes, None if settings is None else body


def _box_contract(
    contract: str | None, boxes: list[taskfile.Box] | None, extra: dict[str, Any]
) -> list[str]:
    """With `--contract boxes`, the task file's boxes as criteria (`boxCriteria`), with
    the checks they carry, which wait for trust as a template's do."""
    if contract is None:  # only the person's --contract makes boxes criteria, never a template
        extra.pop("boxCriteria", None)
        return []
    from ralphstate.loop import boxcontract

    if contract not in boxcontract.CONTRACTS:
        raise RalphstateError(f"--contract is boxes, not {contract!r}.")
    if boxes is None:
        raise RalphstateError("--contract boxes needs the task file: give --task FILE.")
    names, checks = boxcontract.criteria(boxes, str(extra["tasksFile"]))
    extra["boxCriteria"] = names
    if checks:
        extra["checks"] = {**(extra.get("checks") or {}), **checks}
    return names


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


def _register(loop: LoopPaths, state: st.State) -> None:
    # The loop works without the registry; `list` just won't show it.
    with contextlib.suppress(OSError, RalphstateError):
        registry.record(loop, state, claude_pid())
