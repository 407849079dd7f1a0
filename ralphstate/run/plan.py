"""What `ralphstate run` will run: the command line's options over the project's
config, checked before anything starts; and the `--dry-run` preview."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralphstate.core import budgets, limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.ownership import ENV_RUNNER
from ralphstate.core.text import visible
from ralphstate.run import guards, prompt, runconfig, runfiles, shellcmd, spawn
from ralphstate.storage.store import Store


@dataclass
class Plan:
    """The run's settings: the command line's options over the project's config."""

    agent: str
    argv: list[str]
    prompt_mode: str
    # Iterations this run may do; with `set_max` (a --max or a configured max was given)
    # the loop's maxIterations grows to its iteration + `limit` when that is more.
    limit: int
    set_max: bool
    timeout: float | None
    grace: float
    context: list[Path]
    sources: list[str] = field(default_factory=list)
    # Git (docs/how-to/git.md, "Git"): commit after each iteration that changed the tree; the
    # branch to run on; whether a dirty tree may be taken along.
    commit: bool = False
    branch: str | None = None
    allow_dirty: bool = False
    # The fallback chain: agent commands tried in turn after a usage limit or repeated
    # failures of the one before.
    fallbacks: list[str] = field(default_factory=list)
    # Budgets for this run (the loop's max* become what it spent + these).
    max_cost: float | None = None
    max_tokens: int | None = None
    max_duration: float | None = None
    on_limit: str = "wait"
    # Keep the machine from sleeping while the run runs (run/awake.py).
    keep_awake: bool = True
    # The person's notifier (run/notifier.py), or None.
    notify: str | None = None
    # Stop an agent that printed nothing for this many seconds (None: never).
    idle_timeout: float | None = None
    # Iteration logs kept in .loop/runs/ (and as many failed ones besides).
    keep_logs: int = runfiles.KEEP_LOGS
    agent_errors: int = guards.AGENT_ERRORS
    step_retries: int = guards.STEP_RETRIES
    # The sandbox mode (`--sandbox`; None: none was asked for) and whether it cuts the
    # network (docs/how-to/sandbox.md).
    sandbox: str | None = None
    offline: bool = False
    # Run the agent commands through a shell (run/shellcmd.py); pause the loop when a
    # check that passed fails after an iteration (run/strict.py).
    shell: bool = False
    strict: bool = False
    # Pause for the person at milestones and before completing (run/checkin.py).
    check_in: bool = False

    @property
    def agents(self) -> list[str]:
        return [self.agent, *self.fallbacks]

    # What the run takes from configuration files and a person must have trusted
    # (`config.reviewed`); empty when the command line gave both.
    review: dict[str, object] = field(default_factory=dict)


def make_plan(
    store: Store,
    state: st.State,
    *,
    agent: str | None = None,
    prompt_mode: str | None = None,
    max_iterations: int | None = None,
    timeout: float | None = None,
    context: list[Path] | None = None,
    fallbacks: list[str] | None = None,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    max_duration: float | None = None,
    on_limit: str | None = None,
    idle_timeout: float | None = None,
    notify: str | None = None,
    sandbox: str | None = None,
    offline: bool | None = None,
    shell: bool | None = None,
    strict: bool | None = None,
    check_in: bool | None = None,
) -> Plan:
    """Merge the command line over the config; RalphstateError for a plan that cannot run."""
    config = runconfig.load(store.paths.root, store.paths.dir)
    command = agent if agent is not None else config.agent
    if fallbacks is not None:
        chain = list(fallbacks)
    else:
        chain = [] if agent is not None else config.fallbacks
    through_shell = shell if shell is not None else config.shell
    for other in chain:
        shellcmd.argv(other, through_shell)  # a command that cannot be read is refused now
    if not command or not command.strip():
        raise RalphstateError(
            'no agent command: give one with --agent "CMD", or set `agent` in the'
            " [tool.ralphstate.run] table of pyproject.toml or the [run] table of"
            " .loop/config.toml."
        )
    argv = shellcmd.argv(command, through_shell)
    mode = prompt_mode or config.prompt_mode
    has_slot = any(runconfig.PROMPT_FILE in part for part in argv)
    if mode is None:
        mode = "file" if has_slot else "stdin"
    if mode == "file" and not has_slot:
        raise RalphstateError(
            f"--prompt-mode file needs {runconfig.PROMPT_FILE} in the agent command,"
            " where the prompt file's path goes."
        )
    if mode != "file" and has_slot:
        raise RalphstateError(
            f"the agent command holds {runconfig.PROMPT_FILE}, which only --prompt-mode"
            f" file fills (the prompt mode is {mode})."
        )
    chosen_max = max_iterations if max_iterations is not None else config.max
    if chosen_max is not None:
        limit = min(chosen_max, limits.MAX_ITERATIONS_CEILING - state["iteration"])
    else:
        limit = state["maxIterations"] - state["iteration"]
    files = list(context) if context else list(config.context)
    if not context:  # named by a file that may have come with the repository
        _inside(files, store.paths.root, ", ".join(config.sources))
    for path in files:
        if not path.is_file():
            raise RalphstateError(f"the context file {path} does not exist.")
    from ralphstate.loop import linkedspecs  # the specs the task file's header names

    linked = linkedspecs.linked(store.paths.root, state, files)
    files += linked
    used = (
        (
            agent is None
            and (config.agent is not None or (fallbacks is None and bool(config.fallbacks)))
        )
        or (not context and bool(config.context))
        or (notify is None and config.notify is not None)
    )
    return Plan(
        agent=command,
        argv=argv,
        prompt_mode=mode,
        limit=limit,
        set_max=chosen_max is not None,
        timeout=timeout if timeout is not None else config.timeout,
        grace=config.grace if config.grace is not None else limits.RUN_GRACE_SECONDS,
        context=files,
        sources=config.sources,
        fallbacks=chain or [],
        max_cost=max_cost if max_cost is not None else config.max_cost,
        max_tokens=max_tokens if max_tokens is not None else config.max_tokens,
        max_duration=max_duration if max_duration is not None else config.max_duration,
        on_limit=on_limit or config.on_limit or "wait",
        idle_timeout=idle_timeout if idle_timeout is not None else config.idle_timeout,
        notify=notify if notify is not None else config.notify,
        keep_awake=config.keep_awake,
        keep_logs=config.keep_logs or runfiles.KEEP_LOGS,
        agent_errors=config.agent_errors or guards.AGENT_ERRORS,
        step_retries=config.step_retries or guards.STEP_RETRIES,
        shell=through_shell,
        strict=strict if strict is not None else config.strict,
        check_in=check_in if check_in is not None else config.check_in,
        review=runconfig.reviewed(config, store.paths.root, linked) if used or linked else {},
        sandbox=sandbox if sandbox is not None else config.sandbox,
        offline=offline if offline is not None else not config.sandbox_network,
    )


def _inside(files: list[Path], root: Path, where: str) -> None:
    """Context files a configuration file names stay inside the project (a cloned
    config must not put /proc/self/environ, or ~/.ssh, into the prompt), symlinks
    followed."""
    top = os.path.realpath(root)
    for path in files:
        real = os.path.realpath(path)
        if os.path.commonpath([top, real]) != top:
            raise RalphstateError(
                f"the context file {visible(path)} named in {visible(where)} is outside the"
                " project; a configuration file may only name files inside it (give"
                " --context to use another)."
            )


def check_trusted(store: Store, plan: Plan) -> None:
    """Refuse a run whose agent command or context files come from a configuration
    file no person trusted on this machine."""
    from ralphstate.storage import trust

    if plan.review and not trust.run_trusted(store.paths, plan.review):
        words = {
            "agent": "the agent command",
            "fallbacks": "fallbacks",
            "context": "context files",
            "notify": "the notifier",
            "specs": "the specs the task file links to",
            "shell": "running it through a shell",
        }
        named = " and ".join(words.get(k, k) for k in plan.review)
        where = ", ".join(plan.sources) or "the task file"
        raise RalphstateError(
            f"what {visible(where)} chooses for `ralphstate run` ({named})"
            " is not trusted on this machine; review it (`ralphstate run --dry-run`), then"
            " run `ralphstate trust` (or give --agent, --context and --notify on the command"
            " line)."
        )


def resolve_program(plan: Plan, root: Path) -> list[str]:
    """The argument list with the program found; RalphstateError when it is nowhere."""
    return resolve_argv(plan.argv, root)


def resolve_argv(argv: list[str], root: Path) -> list[str]:
    found = spawn.resolve(argv[0], root)
    if found is None:
        raise RalphstateError(
            f"the agent program {argv[0]!r} was not found"
            + ("" if os.sep in argv[0] or "/" in argv[0] else " on PATH")
            + "."
        )
    return [found, *argv[1:]]


def with_budget(argv: list[str], dollars: float | None) -> list[str]:
    """An agent that can stop itself at a cost (Claude Code in print mode:
    `Agent.cost_cap`) gets what is left of the cost budget as its own option, unless
    the command already sets one."""
    if dollars is None or not argv:
        return argv
    from ralphstate.agents import table

    name = Path(argv[0]).name.lower()
    for agent in table.every().values():
        cap = agent.cost_cap
        if cap is None or name not in cap.programs or not (set(cap.modes) & set(argv)):
            continue
        if any(a == cap.option or a.startswith(cap.option + "=") for a in argv):
            return argv
        return [*argv, cap.option, f"{max(dollars, 0.01):.2f}"]
    return argv


def preview(store: Store, plan: Plan) -> dict[str, Any]:
    """What `--dry-run` shows: the prompt and the command, with nothing run."""
    state = store.load()
    text = prompt.assemble(
        state,
        iteration=1,
        limit=max(plan.limit, 1),
        notes=prompt.recent_notes(store, state),
        context=prompt.read_context(plan.context, store.paths.root),
        commits=plan.commit,
    )
    # The command as the first iteration gets it: Claude Code in print mode with what is
    # left of the cost budget (the smaller of this run's --max-cost and what the loop's
    # leaves, as the run computes it) as its own.
    spent = budgets.spent(state)["cost"]
    loop_left = state["maxCost"] - spent if state["maxCost"] is not None else None
    given = [value for value in (plan.max_cost, loop_left) if value is not None]
    argv = with_budget(plan.argv, min(given) if given else None)
    shown = spawn.join_command(argv)
    from ralphstate.storage import trust

    trusted = not plan.review or trust.run_trusted(store.paths, plan.review)
    delivery = {
        "stdin": "the prompt goes to its standard input",
        "arg": "the prompt is appended as its last argument",
        "file": f"{runconfig.PROMPT_FILE} becomes the path of a temporary file holding the prompt",
    }[plan.prompt_mode]
    return {
        "dryRun": True,
        "command": argv,
        "commandLine": shown + (" PROMPT" if plan.prompt_mode == "arg" else ""),
        "cwd": str(store.paths.root),
        "promptMode": plan.prompt_mode,
        "delivery": delivery,
        "environment": {ENV_RUNNER: "1"},
        "limit": plan.limit,
        "timeout": plan.timeout,
        "prompt": text,
        "program": plan.argv[0],
        "found": spawn.resolve(plan.argv[0], store.paths.root) is not None,
        "config": plan.sources,
        "configTrusted": trusted,
        "sandbox": plan.sandbox,
    }
