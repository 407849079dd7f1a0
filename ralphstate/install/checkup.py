"""`ralphstate doctor`: check the installation and the loop, one line each."""

from __future__ import annotations

import os
import sys
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
from ralphstate.install.agents import AgentHook, find_installed, hooks_path
from ralphstate.install.claude_checks import check_allow, check_tasks, without_hooks
from ralphstate.install.findings import Finding, executable
from ralphstate.loop.enforcement import settings_root
from ralphstate.loop.project import current_session, hooks_view, locate
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import registry
from ralphstate.storage.system.paths import check_safe


def check_hooks(root: Path, home: Path | None = None) -> list[Finding]:
    findings: list[Finding] = []
    found = find_installed(root, home, "claude")
    imports: dict[str, str | None] = {}
    for event, sub in claude.EVENTS.items():
        mine = [h for h in found if h.event == event]
        if not mine:
            findings.append(_missing(event, root, home))
            continue
        for hook in mine:
            problem, target = executable(hook.command, root, imports)
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


def _missing(event: str, root: Path, home: Path | None) -> Finding:
    """A hook of Claude Code's that no settings file has: the Stop hook's line names
    the file `install` writes, for the project the loop found from here belongs to."""
    if event != "Stop":
        return "warn", f"no {event} hook installed; run `ralphstate install`"
    local = hooks_path("claude", "local", root, home)
    return "fail", f"no Stop hook installed; run `ralphstate install`, which writes it to {local}"


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
    from ralphstate.storage.peruser import truststore

    when = "run by `ralphstate verify`" + (
        " and before the Stop hook allows a claimed completion"
        if queries.verify_on_stop(state)
        else ""
    )
    if truststore.is_trusted(store.paths, state):
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
        return [("note", str(exc))]
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
                "note",
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
        problem, target = executable(hook.command, root, imports)
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


def run(start: Path, home: Path | None = None) -> list[Finding]:
    findings: list[Finding] = [("ok", f"Python {sys.version.split()[0]} at {sys.executable}")]
    root = settings_root(start)
    try:
        agents = check_agents(root, home)
        hooks = without_hooks(start, root, home, agents)
        if hooks is None:
            hooks = check_hooks(root, home)
        findings += hooks + agents + check_tasks(root, home) + check_allow(root, home)
    except RalphstateError as exc:
        findings.append(("fail", str(exc)))
    findings += check_loop(start)
    return findings + check_sandboxes()


def check_sandboxes() -> list[Finding]:
    """Which `ralphstate run --sandbox` modes work on this machine, and why not
    (docs/how-to/sandbox.md)."""
    from ralphstate.sandbox import modes

    findings: list[Finding] = []
    for mode, works, why in modes.report():
        if works:
            findings.append(("ok", f"run --sandbox {mode} works here: {why}"))
        else:
            findings.append(("warn", f"run --sandbox {mode} cannot start here: {why}"))
    return findings
