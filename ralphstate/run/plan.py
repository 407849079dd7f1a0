"""What `ralphstate run` will run: the command line's options over the project's
config, checked before anything starts; and the `--dry-run` preview."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralphstate.core import budgets, limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.ownership import ENV_RUNNER
from ralphstate.core.text import visible
from ralphstate.run import prompt, runconfig, runoptions, shellcmd, spawn
from ralphstate.storage.loopdir.store import Store


@dataclass
class Plan:
    """The run's settings: the command line's options over the project's config. Each
    option of run/runoptions.py the plan takes is a field of the same name, filled
    from the rows; the option's default is in its row."""

    # The agent commands: the first, then the fallback chain, tried in turn after a
    # usage limit or repeated failures of the one before.
    agents: list[str]
    argv: list[str]
    prompt_mode: str
    # The --max or configured max, when one was given: the loop's maxIterations then
    # grows to its iteration + `limit` when that is more.
    max: int | None
    # Iterations this run may do.
    limit: int
    timeout: float | None
    grace: float
    context: list[Path]
    # Git (docs/how-to/git.md, "Git"): commit after each iteration that changed the tree; the
    # branch to run on; whether a dirty tree may be taken along.
    commit: bool
    branch: str | None
    allow_dirty: bool
    # The person's notifier (run/notifier.py), or None.
    notify: str | None
    # Stop an agent that printed nothing for this many seconds (None: never).
    idle_timeout: float | None
    # Budgets for this run (the loop's max* become what it spent + these).
    max_cost: float | None
    max_tokens: int | None
    max_duration: float | None
    on_limit: str
    agent_errors: int
    step_retries: int
    # Keep the machine from sleeping while the run runs (run/awake.py).
    keep_awake: bool
    # Iteration logs kept in .loop/runs/ (and as many failed ones besides).
    keep_logs: int
    # The sandbox mode (`--sandbox`; None: none was asked for) and whether it cuts the
    # network (docs/how-to/sandbox.md).
    sandbox: str | None
    no_sandbox: bool
    # The variables of the person's environment the confined agent gets besides its own.
    keep_env: list[str]
    # The agent's network: None or "allowlist" (under bwrap), or "full".
    network: str | None
    allow_host: list[str]
    offline: bool
    # Run the agent commands through a shell (run/shellcmd.py); pause the loop when a
    # check that passed fails after an iteration (run/strict.py).
    shell: bool
    strict: bool
    # Pause for the person at milestones and before completing (run/checkin.py).
    check_in: bool
    sources: list[str] = field(default_factory=list)
    # What the run takes from configuration files and a person must have trusted
    # (`config.reviewed`); empty when the command line gave both.
    review: dict[str, object] = field(default_factory=dict)
    # The confinement keys (`sandbox`, `offline`) the configuration gave, or the
    # command line: a key the person trusted that is in neither was deleted.
    confinement: tuple[str, ...] = ()

    @property
    def agent(self) -> str:
        return self.agents[0]

    @property
    def fallbacks(self) -> list[str]:
        return self.agents[1:]

    @property
    def set_max(self) -> bool:
        return self.max is not None


def make_plan(store: Store, state: st.State, given: Mapping[str, Any] | None = None) -> Plan:
    """Merge the command line over the config; RalphstateError for a plan that cannot
    run. `given` holds the command line's options by name, None where one was not given."""
    given = given or {}
    config = runconfig.load(store.paths.root, store.paths.dir)
    chosen = {
        option.name: _chosen(option, given.get(option.name), config)
        for option in runoptions.OPTIONS
        if option.planned
    }
    chain: list[str] = list(chosen["agents"] or [])
    for other in chain[1:]:
        shellcmd.argv(other, chosen["shell"])  # a command that cannot be read is refused now
    if not chain or not chain[0].strip():
        raise RalphstateError(
            'no agent command: give one with --agent "CMD", or set `agent` in the'
            " [tool.ralphstate.run] table of pyproject.toml or the [run] table of"
            " .loop/config.toml; for Claude Code overnight: ralphstate run --agent"
            ' "claude -p --output-format json --dangerously-skip-permissions" --max 40'
            " (docs/how-to/overnight.md)."
        )
    argv = shellcmd.argv(chain[0], chosen["shell"])
    chosen["prompt_mode"] = _prompt_mode(chosen["prompt_mode"], argv)
    if chosen["max"] is not None:
        limit = min(chosen["max"], limits.MAX_ITERATIONS_CEILING - state["iteration"])
    else:
        limit = state["maxIterations"] - state["iteration"]
    files = list(chosen["context"])
    if given.get("context") is None:  # named by a file that may have come with the repository
        _inside(files, store.paths.root, ", ".join(config.sources))
    for path in files:
        if not path.is_file():
            raise RalphstateError(f"the context file {path} does not exist.")
    from ralphstate.loop import linkedspecs  # the specs the task file's header names

    linked = linkedspecs.linked(store.paths.root, state, files)
    used = any(
        option.reviewed
        and given.get(option.name) is None
        and config.values.get(option.name) not in (None, [], "")
        for option in runoptions.OPTIONS
    )
    chosen.update(agents=chain, context=files + linked)
    return Plan(
        **chosen,
        argv=argv,
        limit=limit,
        sources=config.sources,
        review=runconfig.reviewed(config, store.paths.root, linked) if used or linked else {},
        confinement=tuple(
            k for k in ("sandbox", "offline") if given.get(k) is not None or k in config.values
        ),
    )


def _chosen(option: runoptions.Option, given: Any, config: runconfig.RunConfig) -> Any:
    """An option's value: the command line's, else the configuration's, else its default."""
    if given is not None:
        return given
    configured = config.values.get(option.name)
    return configured if configured is not None else option.default


def _prompt_mode(mode: str | None, argv: list[str]) -> str:
    """How the prompt reaches the agent: as asked, else by whether the command has a
    slot for the prompt file; a mode and a command that do not fit are refused."""
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
    return mode


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
    from ralphstate.storage.peruser import truststore

    gone = [k for k in truststore.recorded_sandbox(store.paths) if k not in plan.confinement]
    if gone:
        keys = {"sandbox": "`sandbox`", "offline": "`sandbox-network`"}
        shown = ", ".join(plan.sources) or ".loop/config.toml"
        raise RalphstateError(
            f"the {' and '.join(keys[k] for k in gone)} setting you trusted is gone from"
            f" {visible(shown)}; put it back, or give it on the command line, or run"
            " `ralphstate trust` to accept the configuration as it is now."
        )
    if plan.review and not truststore.run_trusted(store.paths, plan.review):
        words = {
            "agent": "the agent command",
            "fallbacks": "fallbacks",
            "context": "context files",
            "notify": "the notifier",
            "specs": "the specs the task file links to",
            "shell": "running it through a shell",
            "sandbox": "the sandbox mode",
            "offline": "the sandbox's network",
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
    from ralphstate.storage.peruser import truststore

    trusted = not plan.review or truststore.run_trusted(store.paths, plan.review)
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
        "sandbox": "off" if plan.no_sandbox else plan.sandbox,
    }
