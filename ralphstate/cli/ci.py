"""`ralphstate ci`: one job of a loop on CI, the command the GitHub Action and the
container image run (docs/how-to/github-action.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
import orjson

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS, positive
from ralphstate.core.errors import RalphstateError

ENV = "RALPHSTATE_CI_"


def _lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _checks(text: str | None) -> dict[str, str]:
    found = {}
    for line in _lines(text):
        name, sep, command = line.partition(": ")
        if not sep or not name.strip() or not command.strip():
            raise RalphstateError(f"a check is `criterion: command`, not {line!r}.")
        found[name.strip()] = command.strip()
    return found


def _loop_budget(cost: float | None, tokens: int | None, duration: str | None) -> dict[str, Any]:
    """The loop's budgets the workflow gives, by their keys in state.json."""
    found: dict[str, Any] = {}
    if cost is not None:
        found["maxCost"] = cost
    if tokens is not None:
        found["maxTokens"] = tokens
    if duration:
        from ralphstate.ci import job

        found["maxDuration"] = job.parse_time_budget(duration)
    return found


def _object(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        found = None
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise RalphstateError(f"--next-inputs is a JSON object of strings, not {text!r}.")
    return found


@click.command("ci", context_settings={**SETTINGS, "auto_envvar_prefix": "RALPHSTATE_CI"})
@click.option("--agent", required=True, metavar="CMD", help="The agent's command line.")
@click.option("--branch", required=True, help="The branch the loop works on.")
@click.option(
    "--time-budget",
    default="5h30m",
    show_default=True,
    help="How long this job may run the loop; when that alone ends it, the next job goes on.",
)
@click.option("--spec", default=None, help="The spec, to start a loop where there is none.")
@click.option("--criteria", default=None, help="The criteria, one a line.")
@click.option("--checks", default=None, help="Checks, one a line: `criterion: command`.")
@click.option("--steps", default=None, help="Steps, one a line, to start a loop with.")
@click.option("--max", "max_iterations", type=int, callback=positive, default=None,
              help="At most this many iterations in this job.")  # fmt: skip
@click.option("--max-cost", type=float, default=None, help="This job's cost budget, USD.")
@click.option("--max-tokens", type=int, default=None, help="This job's token budget.")
@click.option("--loop-max-cost", type=float, default=None, help="The loop's cost budget, USD.")
@click.option("--loop-max-tokens", type=int, default=None, help="The loop's token budget.")
@click.option("--loop-max-duration", default=None, help="The loop's time budget (48h).")
@click.option("--remote", default="origin", show_default=True, help="Where the branch is pushed.")
@click.option(
    "--base", default=None, help="The base branch: the pull request's and the next job's."
)
@click.option(
    "--trusted-branch",
    default=None,
    help="The branch whose loop proves it done.  [default: the repository's default branch"
    " on GitHub Actions; elsewhere the commit the job starts on]",
)
@click.option(
    "--next-job/--no-next-job", default=True, help="Ask for the next job when time runs out."
)
@click.option("--workflow", default=None, help="The workflow file the next job runs.")
@click.option("--next-inputs", default=None, metavar="JSON",
              help="Inputs the next job gets over this job's own (a JSON object).")  # fmt: skip
@click.option(
    "--pull-request/--no-pull-request", default=False, help="Open or update a pull request."
)
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the Markdown report goes.  [default: .loop/runs/report.md]")  # fmt: skip
def ci_command(
    agent: str,
    branch: str,
    time_budget: str,
    spec: str | None,
    criteria: str | None,
    checks: str | None,
    steps: str | None,
    max_iterations: int | None,
    max_cost: float | None,
    max_tokens: int | None,
    loop_max_cost: float | None,
    loop_max_tokens: int | None,
    loop_max_duration: str | None,
    remote: str,
    base: str | None,
    trusted_branch: str | None,
    next_job: bool,
    workflow: str | None,
    next_inputs: str | None,
    pull_request: bool,
    report: Path | None,
) -> None:
    """Run one job of a loop on CI, in the checkout of the base branch it starts in.

    Checks out BRANCH (created from here when the remote has none), starts the loop
    from --spec and --criteria where there is none, puts back the contract the base
    commit or these options state (never the branch's own checks) and trusts it, then
    runs `ralphstate run --commit` within the time budget, pushing every commit. It
    writes the report, the job's summary and outputs under GitHub Actions, and asks
    for the next job of the workflow when the time budget alone stopped the run.
    Every option may come from RALPHSTATE_CI_<OPTION> (RALPHSTATE_CI_TIME_BUDGET).

    Exit 0 when the loop completed or goes on in the next job, else the run's code.

    \b
    Example:
      ralphstate ci --agent "claude -p" --branch loop/csv --time-budget 5h30m
    """
    from ralphstate.ci import github, job

    trusted_branch = trusted_branch or github.default_branch(os.environ)
    if not trusted_branch and os.environ.get("GITHUB_ACTIONS") == "true":
        raise RalphstateError(
            "the event that started this job names no default branch: give the branch whose"
            " loop proves it done (trusted-branch), never the loop's own."
        )
    given = job.Job(
        agent=agent,
        branch=branch,
        time_budget=job.parse_time_budget(time_budget),
        spec=spec or None,
        criteria=_lines(criteria),
        checks=_checks(checks),
        steps=_lines(steps),
        max_iterations=max_iterations,
        max_cost=max_cost,
        max_tokens=max_tokens,
        loop_budget=_loop_budget(loop_max_cost, loop_max_tokens, loop_max_duration),
        remote=remote,
        base=base or None,
        trusted_branch=trusted_branch or None,
        next_job=next_job,
        workflow=workflow or None,
        next_inputs=_object(next_inputs),
        pull_request=pull_request,
        report=report,
    )
    ended = job.run_job(Path.cwd(), given, os.environ)
    for note in ended.notes:
        output.text(note)
    output.text(f"ralphstate ci: {ended.outcome}" + (f" ({ended.reason})" if ended.reason else ""))
    if ended.outcome == "complete" or ended.continues:
        return
    raise SystemExit(int(ended.result.get("exitCode") or 1))
