"""Every option of `ralphstate run`, declared once.

A row gives an option its name (the click parameter's, the configuration's and the
plan's), the kind of value it takes with its check (run/optionkinds.py), its flags on
the command line, its key in a configuration file (the long flag's name, as pip's
configuration keys are) and its help. The command is built from the rows
(cli/runflags.py), the configuration files are read by them (run/runconfig.py), and
the plan is filled from them (run/plan.py); `tests/run/test_runoptions.py` holds the
pieces together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ralphstate.core import limits
from ralphstate.run import guards, runfiles
from ralphstate.run.optionkinds import (
    Choice,
    Commands,
    Dollars,
    Duration,
    Files,
    Kind,
    Seconds,
    Switch,
    Text,
    Whole,
)
from ralphstate.sandbox.modes import MODES

PROMPT_MODES = ("stdin", "arg", "file")
ON_LIMIT = ("wait", "pause")
NETWORKS = ("allowlist", "full")


@dataclass(frozen=True)
class Option:
    """One option of `run`: on the command line (`flags`), in a configuration file
    (`key`), or both."""

    # The click parameter's name, the configuration's attribute and the plan's field.
    name: str
    kind: Kind
    help: str
    # On the command line: one flag, or an on/off pair ("--shell/--no-shell"); none for
    # a key only a configuration file gives.
    flags: tuple[str, ...] = ()
    metavar: str | None = None
    # Whether a configuration file may give it, and its key there when that is not the
    # long flag's name.
    configured: bool = True
    key_name: str | None = None
    # The plan's value when neither the command line nor a file gives one.
    default: Any = None
    # False: the command itself takes it (`--dry-run`), not the plan.
    planned: bool = True
    # Taken from a configuration file, it is used only once a person trusted it.
    reviewed: bool = False

    @property
    def key(self) -> str | None:
        """Its key in a configuration file, or None when only the command line gives it."""
        if not self.configured:
            return None
        return self.key_name or self.flags[0].split("/")[0].removeprefix("--")


OPTIONS = (
    Option(
        "agents",
        Commands(),
        'The agent\'s command line, e.g. "claude -p". Default: `agent` in the config.'
        " Repeat it for a fallback chain: the next one takes over after a usage limit or"
        " repeated failures.",
        flags=("--agent",),
        metavar="CMD",
        reviewed=True,
    ),
    Option(
        "prompt_mode",
        Choice(PROMPT_MODES),
        "How the prompt reaches the agent: on stdin, as the last argument, or in a file"
        " whose path replaces {prompt_file} in CMD.  [default: file when CMD holds"
        " {prompt_file}, else stdin]",
        flags=("--prompt-mode",),
    ),
    Option(
        "max",
        Whole(1, limits.RUN_MAX_ITERATIONS),
        "Run at most N iterations; the loop's maxIterations grows to fit them, never"
        " shrinks.  [default: what the loop's maxIterations leaves]",
        flags=("--max",),
    ),
    Option(
        "timeout",
        Seconds(),
        "Stop an iteration's agent after this long.  [default: no limit]",
        flags=("--timeout",),
        metavar="SECONDS",
    ),
    Option(
        "context",
        Files(),
        "A file to put into every prompt (repeat); bounded in size.",
        flags=("--context",),
        metavar="FILE",
        default=[],
        reviewed=True,
    ),
    Option(
        "grace",
        Seconds(above_zero=False),
        "Seconds between SIGINT, SIGTERM and SIGKILL when an agent is stopped.",
        key_name="grace",
        default=limits.RUN_GRACE_SECONDS,
    ),
    Option(
        "commit",
        Switch(),
        "Commit after each iteration that left the work tree changed (never the run logs).",
        flags=("--commit",),
        configured=False,
        default=False,
    ),
    Option(
        "branch",
        Text(),
        "Run on branch NAME (created from HEAD).",
        flags=("--branch",),
        metavar="NAME",
        configured=False,
    ),
    Option(
        "worktree",
        Text(),
        "Run in git worktree NAME (created with a fresh copy of this loop when missing).",
        flags=("--worktree",),
        metavar="NAME",
        configured=False,
        planned=False,
    ),
    Option(
        "allow_dirty",
        Switch(),
        "Let --branch and --commit take uncommitted changes along.",
        flags=("--allow-dirty",),
        configured=False,
        default=False,
    ),
    Option(
        "max_cost",
        Dollars(),
        "This run's budget: pause once its agents reported spending this much (US"
        " dollars). The loop's own budget is `ralphstate config max-cost`.",
        flags=("--max-cost",),
        metavar="USD",
    ),
    Option(
        "max_tokens",
        Whole(1, limits.MAX_USAGE_TOKENS),
        "This run's budget: pause once its agents reported using this many tokens.",
        flags=("--max-tokens",),
        metavar="N",
    ),
    Option(
        "max_duration",
        Duration(),
        "This run's budget: pause once it has taken this long (8h, 90m, 1h30m, or seconds);"
        " the iteration running then is stopped.",
        flags=("--max-duration",),
        metavar="TIME",
    ),
    Option(
        "on_limit",
        Choice(ON_LIMIT),
        "On a usage or rate limit: wait until it resets and retry, or pause.  [default: wait]",
        flags=("--on-limit",),
        default="wait",
    ),
    Option(
        "agent_errors",
        Whole(1, 1000),
        "Failed iterations in a row before the loop pauses.",
        key_name="agent-errors",
        default=guards.AGENT_ERRORS,
    ),
    Option(
        "step_retries",
        Whole(1, 1000),
        "Tries of a step (over all runs) before the loop pauses.",
        key_name="step-retries",
        default=guards.STEP_RETRIES,
    ),
    Option(
        "idle_timeout",
        Seconds(),
        "Stop an iteration's agent that printed nothing for this long.  [default: no limit]",
        flags=("--idle-timeout",),
        metavar="SECONDS",
    ),
    Option(
        "notify",
        Text("a non-empty string (the notifier's command)"),
        "Run CMD on complete, pause, budget, limit and error: the event as JSON on its"
        " stdin, a summary in $RALPHSTATE_SUMMARY.  [default: `notify` in the config]",
        flags=("--notify",),
        metavar="CMD",
        reviewed=True,
    ),
    Option(
        "keep_awake",
        Switch(),
        "Keep the machine from sleeping while the run runs.",
        key_name="keep-awake",
        default=True,
    ),
    Option(
        "keep_logs",
        Whole(1, 100_000),
        "Iteration logs kept in .loop/runs/, and as many failed ones besides.",
        key_name="keep-logs",
        default=runfiles.KEEP_LOGS,
    ),
    Option(
        "sandbox",
        Choice(MODES),
        "Confine each iteration's agent (docs/how-to/sandbox.md); a sandbox that cannot"
        " start stops the run.  [default: `sandbox` in the config once trusted, else auto:"
        " the best this machine has]",
        flags=("--sandbox",),
        reviewed=True,
    ),
    Option(
        "no_sandbox",
        Switch(),
        "Run the agent unconfined, with all your user's rights (the same as --sandbox off).",
        flags=("--no-sandbox",),
        configured=False,
        default=False,
    ),
    Option(
        "keep_env",
        Commands(),
        "Give the confined agent this variable of your environment too (repeat); it gets"
        " only the basics, git's identity and its own client's variables otherwise.",
        flags=("--env",),
        metavar="NAME",
        configured=False,
        default=[],
    ),
    Option(
        "network",
        Choice(NETWORKS),
        "The confined agent's network: `allowlist`, through a proxy to its model API,"
        " the endpoints of its client's *_BASE_URL variables and each --allow-host only;"
        " `full`, the host's whole network (yours alone to give).  [default: allowlist"
        " under bwrap]",
        flags=("--network",),
        configured=False,
    ),
    Option(
        "allow_host",
        Commands(),
        "Let the agent's network reach HOST:443 too, under bwrap (repeat; its model API"
        " is allowed already; NAME=ADDRESS:PORT sends NAME there).",
        flags=("--allow-host",),
        metavar="HOST",
        configured=False,
        default=[],
    ),
    Option(
        "offline",
        Switch(negated=True),
        "With --sandbox bwrap or sandbox-exec: no network inside (for agents that need no API).",
        flags=("--no-network",),
        key_name="sandbox-network",
        default=False,
        reviewed=True,
    ),
    Option(
        "shell",
        Switch(),
        "Run the agent command through /bin/sh, for `VAR=x cmd`, `a && b` or a pipe."
        "  [default: `shell` in the config, else no shell]",
        flags=("--shell/--no-shell",),
        default=False,
    ),
    Option(
        "strict",
        Switch(),
        "Pause the loop when a criterion's check that passed fails after an iteration."
        "  [default: `strict` in the config, else off]",
        flags=("--strict/--no-strict",),
        default=False,
    ),
    Option(
        "check_in",
        Switch(),
        "Pause for you after each finished step and before completing, as a"
        " colleague-shaped spec needs.  [default: `check-in` in the config, else off]",
        flags=("--check-in/--no-check-in",),
        default=False,
    ),
    Option(
        "dry_run",
        Switch(),
        "Print the prompt and the command; run nothing.",
        flags=("--dry-run",),
        configured=False,
        planned=False,
    ),
    Option(
        "as_json",
        Switch(),
        "Print one JSON object at the end.",
        flags=("--json",),
        configured=False,
        planned=False,
    ),
)
# The options by their configuration key, in the table's order.
BY_KEY = {option.key: option for option in OPTIONS if option.key is not None}
KEYS = tuple(BY_KEY)
