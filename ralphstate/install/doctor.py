"""`ralphstate doctor`: check the installation and the loop, one line each."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from ralphstate.agents import claude
from ralphstate.agents.contract import TIMEOUTS
from ralphstate.agents.table import every
from ralphstate.core import ownership, queries
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.render import NOT_TRUSTED
from ralphstate.core.text import count, noun, short_id
from ralphstate.core.views import UNKNOWN_HERE
from ralphstate.install.agents import AgentHook, find_installed, hooks_path, read_file
from ralphstate.install.command import (
    command_script,
    command_target,
    import_problem,
    runs_hook_code,
)
from ralphstate.install.taskenv import json_value
from ralphstate.loop.project import current_session, hooks_view, locate, project_root
from ralphstate.storage import registry
from ralphstate.storage.paths import check_safe
from ralphstate.storage.store import Store

IMPORT_TIMEOUT = 10.0  # seconds for a hook's interpreter to show it imports the hook
MISSING = "which is missing or not executable"
Finding = tuple[str, str]  # ("ok" | "warn" | "fail", sentence)


def _executable(command: str, root: Path, imports: dict[str, str | None]) -> tuple[str | None, str]:
    """What is wrong with the program a hook command starts (None: nothing), and which
    file is meant. The program must be there; for this version's form it must import
    the hook in isolated mode (asked once per program, remembered in `imports`), unless
    it is a file in the project, which is never started; for the development builds'
    form, the hook script it runs must be there."""
    target = command_target(command)
    if target is None:
        return MISSING, "cannot tell which program it runs"
    if os.sep in target or "/" in target:
        ok = Path(target).is_file() and os.access(target, os.X_OK)
    else:
        found = shutil.which(target)
        ok, target = found is not None, found or target
    if not ok:
        return MISSING, target
    script = command_script(command)
    if script is not None and not Path(script).is_file():
        return MISSING, script
    if runs_hook_code(command):
        if not _may_start(target, root):
            why = "a program in the project" if _in(target, root) else "not a Python"
            return None, f"{target} ({why}: not started to check it)"
        if target not in imports:
            imports[target] = import_problem(target, IMPORT_TIMEOUT)
        problem = imports[target]
        if problem is not None:
            return f"which cannot import ralphstate's hook in isolated mode ({problem})", target
    return None, target


def _may_start(program: str, root: Path) -> bool:
    """Whether `doctor` may start `program` to see it import the hook: the Python that
    runs `doctor` itself, or a Python interpreter outside the project. A program in the
    project may have come with a clone, like any file there, and a program that is not
    a Python would run the check's words as something else (SECURITY.md)."""
    path = Path(program)
    if sys.executable and path.absolute() == Path(sys.executable).absolute():
        return True
    if not path.name.lower().startswith(("python", "pypy")):
        return False
    return not _in(program, root)


def _in(program: str, root: Path) -> bool:
    path = Path(program)
    places = {path.absolute(), path.resolve()}
    return any(p.is_relative_to(r) for p in places for r in {root.absolute(), root.resolve()})


def check_hooks(root: Path, home: Path | None = None) -> list[Finding]:
    findings: list[Finding] = []
    found = find_installed(root, home, "claude")
    imports: dict[str, str | None] = {}
    for event, sub in claude.EVENTS.items():
        mine = [h for h in found if h.event == event]
        if not mine:
            findings.append(
                (
                    "fail" if event == "Stop" else "warn",
                    f"no {event} hook installed; run `ralphstate install`",
                )
            )
            continue
        for hook in mine:
            problem, target = _executable(hook.command, root, imports)
            ok = problem is None
            where = f"{event} hook in {hook.path}"
            needed = TIMEOUTS.get(sub)
            short = needed is not None and _too_short(hook.timeout, needed)
            if ok and short:
                findings.append(
                    (
                        "warn",
                        (
                            f"{where} has a timeout of {hook.timeout!r}s, less than the {needed}s"
                            f" verify-on-stop may need; {_again(hook, broken=False)}"
                        ),
                    )
                )
            elif ok:
                findings.append(("ok", f"{where} runs {target}"))
            else:
                findings.append(("fail", f"{where} runs {target}, {problem}; {_again(hook)}"))
    scopes = {h.scope for h in found if h.event == "Stop"}
    if len(scopes) > 1:
        findings.append(
            (
                "warn",
                (
                    f"the Stop hook is installed in {len(scopes)} scopes"
                    f" ({', '.join(sorted(scopes))}); each stop is judged more than once"
                ),
            )
        )
    return findings


def _again(hook: AgentHook, broken: bool = True) -> str:
    """What to run about a hook: `install` again in its scope, except for one in the
    shared project file that cannot run, whose command names another machine's Python
    (it came with a clone): this machine's go in the local file, and the shared ones out."""
    if hook.scope == "project" and broken:
        return (
            "run `ralphstate install` (this machine's hooks, in .claude/settings.local.json)"
            " and `ralphstate install --scope project --uninstall`"
        )
    scope = "" if hook.scope == "local" else f" --scope {hook.scope}"
    return f"run `ralphstate install{scope}` again"


def _too_short(timeout: object, needed: int) -> bool:
    """Claude Code's default hook timeout (600 s) applies when none is written."""
    if timeout is None:
        return False
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        return True
    return timeout < needed


def _check_findings(store: Store, state: st.State) -> list[Finding]:
    checks = len(state["checks"])
    if not checks:
        return []
    from ralphstate.storage import trust

    when = "run by `ralphstate verify`" + (
        " and before the Stop hook allows a claimed completion"
        if queries.verify_on_stop(state)
        else ""
    )
    if trust.is_trusted(store.paths, state):
        return [("ok", f"{count(checks, 'check')}, trusted on this machine, {when}")]
    return [
        (
            "warn",
            (
                f"the loop's {count(checks, 'check')} {'is' if checks == 1 else 'are'}"
                f" {NOT_TRUSTED}, so nothing runs them; review"
                " them (`ralphstate status`) and run `ralphstate trust`"
            ),
        )
    ]


def check_loop(start: Path) -> list[Finding]:
    try:
        store = locate(start)
    except RalphstateError as exc:
        return [("ok", f"{exc}".replace("ralphstate init", "ralphstate init"))]
    findings: list[Finding] = []
    shown = store.paths.display(store.paths.state)
    try:
        check_safe(store.paths)
        state = store.load()
    except RalphstateError as exc:
        return [("fail", str(exc))]
    unmet = queries.unmet(state)
    findings.append(
        (
            "ok",
            (
                f"{shown} is valid: {state['status']}, {len(state['criteria']) - len(unmet)}"
                f"/{len(state['criteria'])} {noun(len(state['criteria']), 'criterion')}, iteration"
                f" {state['iteration']}/{state['maxIterations']}"
            ),
        )
    )
    findings += _check_findings(store, state)
    view = hooks_view(start)  # in a subdirectory: which loop the hooks see
    if view is not None:
        findings.append(("ok" if view[0] else "warn", view[1]))
    owner = state["sessionId"]
    agent, current = current_session()
    known = registry.knows(store.paths, state)
    if not known:
        findings.append(("warn", UNKNOWN_HERE))
    verdict = ownership.judge(
        state, current, agent or ownership.owner_agent(state), known=lambda: known
    )
    if verdict == "adopt":
        findings.append(("ok", "the loop has no owner yet; the next session here adopts it"))
    elif verdict == "foreign" and current and owner:
        findings.append(
            (
                "warn",
                (
                    f"the loop belongs to session {short_id(owner)}, not this one"
                    f" ({short_id(current)});"
                    " `ralphstate adopt` takes it over"
                ),
            )
        )
    elif owner:
        findings.append(("ok", f"owned by session {owner}"))
    cap = _block_cap()
    if state["stallLimit"] >= cap:
        findings.append(
            (
                "warn",
                (
                    f"stallLimit {state['stallLimit']} is not below Claude Code's cap of {cap}"
                    " consecutive Stop blocks without a tool call; an idle agent is released by"
                    " Claude Code before ralphstate pauses the loop"
                ),
            )
        )
    if state["maxIterations"] > cap:
        findings.append(
            (
                "ok",
                (
                    f"maxIterations {state['maxIterations']} exceeds Claude Code's {cap} blocks"
                    " in a row without a tool call; a turn that makes no tool call ends there,"
                    " and the loop continues with the next prompt"
                ),
            )
        )
    return findings


def _block_cap() -> int:
    """Claude Code's cap on Stop blocks in a row without a tool call (`Agent.block_cap`)."""
    name, default = claude.AGENT.block_cap or ("", 0)
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def check_agents(root: Path, home: Path | None = None) -> list[Finding]:
    """Every other agent's ralphstate hooks that are configured, one line each."""
    findings: list[Finding] = []
    imports: dict[str, str | None] = {}
    found = [h for h in find_installed(root, home) if h.agent != "claude"]
    for hook in found:
        problem, target = _executable(hook.command, root, imports)
        where = f"{hook.agent} {hook.event} hook in {hook.path}"
        if problem is None:
            findings.append(("ok", f"{where} runs {target}"))
        else:
            findings.append(
                (
                    "fail",
                    (
                        f"{where} runs {target}, {problem};"
                        f" run `ralphstate install --agent {hook.agent}` again"
                    ),
                )
            )
    return findings + _trust(found)


def _trust(found: list[AgentHook]) -> list[Finding]:
    """An agent that runs a project's hooks only in a trusted folder, and says nothing
    when it does not (Copilot CLI's `copilot -p`: `Agent.project_trust`): a warning,
    unless this environment opts in or the user-scope hooks, which run everywhere, are
    installed too."""
    findings: list[Finding] = []
    for agent in every().values():
        if agent.project_trust is None:
            continue
        variables, warning = agent.project_trust
        mine = [h for h in found if h.agent == agent.name]
        project = next((h.path for h in mine if h.scope == "project"), None)
        if project is None or any(h.scope == "user" for h in mine):
            continue
        if not any(os.environ.get(name) == "true" for name in variables):
            findings.append(("warn", warning.format(path=project)))
    return findings


def _setting(
    root: Path, home: Path | None, environ: Mapping[str, str], name: str
) -> tuple[str, str] | None:
    """(value, where) of the variable `name` as Claude Code gets it here: a settings
    file's `env` (local, then project, then user: the first that sets it wins), else
    the environment; None when nothing sets it."""
    for scope in ("local", "project", "user"):
        path = hooks_path("claude", scope, root, home)
        try:
            data = read_file("claude", path)
        except RalphstateError:
            continue
        env = data.get("env") if data else None
        if isinstance(env, dict) and name in env:
            value = env[name]
            return (value if isinstance(value, str) else json_value(value)), f"{path}"
    if name in environ:
        return environ[name], "the environment"
    return None


def _is(value: str, words: tuple[str, ...]) -> bool:
    return value.strip().lower() in words


def check_tasks(
    root: Path, home: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[Finding]:
    """Whether Claude Code's task tools are on in this project's configuration, and
    whether the task hooks are installed: one line each."""
    env = os.environ if environ is None else environ
    found = [h for h in find_installed(root, home, "claude") if h.event in claude.TASK_EVENTS]
    events = [e for e in claude.TASK_EVENTS if any(h.event == e for h in found)]
    tools = _setting(root, home, env, claude.TASKS_ENV)
    off = _setting(root, home, env, claude.TASKS_OFF_ENV)
    unused = "warn" if events else "ok"  # off only matters when the task hooks are there
    if tools is not None and _is(tools[0], claude.TRUTHY):
        said = f"{claude.TASKS_ENV}={tools[0]} in {tools[1]}"
        if off is not None and _is(off[0], claude.FALSY):
            line = (
                "ok",
                (
                    f"the todo tools are on ({said}), and {claude.TASKS_OFF_ENV}={off[0]} in"
                    f" {off[1]} gives TodoWrite instead of TaskCreate and TaskUpdate"
                ),
            )
        else:
            line = ("ok", f"the task tools are on ({said}): TaskCreate and TaskUpdate")
    elif tools is not None and _is(tools[0], claude.FALSY):
        line = (
            unused,
            f"the task tools are turned off ({claude.TASKS_ENV}={tools[0]} in {tools[1]})",
        )
    else:
        line = (
            unused,
            (
                "the task tools are not turned on in this project's configuration (no"
                f" {claude.TASKS_ENV} in the environment or a settings file's env; only older"
                " models have them without it); `ralphstate install --tasks` turns them on"
            ),
        )
    findings = [line]
    if not events:
        findings.append(
            (
                "ok",
                (
                    "no task hooks installed (`ralphstate install --tasks` adds them; the"
                    " plugin brings its own)"
                ),
            )
        )
        return findings
    imports: dict[str, str | None] = {}
    for hook in found:
        problem, target = _executable(hook.command, root, imports)
        if problem is not None:
            findings.append(
                (
                    "fail",
                    (
                        f"{hook.event} hook in {hook.path} runs {target}, {problem}; run"
                        " `ralphstate install --tasks` again"
                    ),
                )
            )
    if len(events) < len(claude.TASK_EVENTS):
        missing = [e for e in claude.TASK_EVENTS if e not in events]
        findings.append(
            (
                "warn",
                (
                    f"of the task hooks only {' and '.join(events)} is installed, not"
                    f" {' and '.join(missing)}; run `ralphstate install --tasks`"
                ),
            )
        )
    elif not any(level == "fail" for level, _ in findings):
        places = sorted({str(h.path) for h in found})
        findings.append(
            (
                "ok",
                f"the task hooks (PostToolUse, TaskCompleted) are installed in {', '.join(places)}",
            )
        )
    return findings


def run(start: Path, home: Path | None = None) -> list[Finding]:
    findings: list[Finding] = [("ok", f"Python {sys.version.split()[0]} at {sys.executable}")]
    root = project_root(start)
    try:
        hooks = check_hooks(root, home)
        agents = check_agents(root, home)
        if agents and not find_installed(root, home, "claude"):
            # Another agent keeps the loop; Claude Code's missing hooks are no fault.
            hooks = [("ok", "no Claude Code hooks installed (`ralphstate install` adds them)")]
        findings += hooks + agents + check_tasks(root, home)
    except RalphstateError as exc:
        findings.append(("fail", str(exc)))
    findings += check_loop(start)
    return findings
