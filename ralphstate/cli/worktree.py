"""`ralphstate worktree add|remove`: a git worktree per loop, so loops run side by side."""

from __future__ import annotations

from pathlib import Path

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core.text import count


@click.group("worktree", context_settings=SETTINGS)
def worktree() -> None:
    """Run loops side by side, each in its own git worktree, branch and .loop/.

    \b
    Example:
      ralphstate worktree add csv-export
      ralphstate run --worktree csv-export --agent "claude -p"
      ralphstate list
      ralphstate worktree remove csv-export
    """


@worktree.command("add", context_settings=SETTINGS)
@click.argument("name")
@click.argument("spec", required=False, default="")
@click.option("-c", "--criterion", "criteria", multiple=True, help="A criterion (repeat).")
@click.option("-s", "--step", "steps", multiple=True, help="A step (repeat).")
@click.option("--branch", default=None, help="The branch to check out.  [default: NAME]")
@click.option(
    "--path",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the worktree goes.  [default: ../REPO-worktrees/NAME]",
)
def add(
    name: str,
    spec: str,
    criteria: tuple[str, ...],
    steps: tuple[str, ...],
    branch: str | None,
    path: Path | None,
) -> None:
    """Create worktree NAME on its own branch (created from HEAD when missing) and start
    a loop in it: the loop here started afresh, or a new one from SPEC and -c.

    \b
    Example:
      ralphstate worktree add csv-export
      ralphstate worktree add fix-parser "Fix the parser" -c "tests pass"
    """
    from ralphstate.run import worktrees

    added = worktrees.add(
        Path.cwd(),
        name,
        branch=branch,
        path=path,
        spec=spec,
        criteria=list(criteria),
        steps=list(steps),
    )
    how = "new branch, from HEAD" if added.created_branch else "existing branch"
    output.text(f"worktree {added.path} on branch {added.branch} ({how})")
    output.text(
        f"started a loop in {added.store.paths.state}:"
        f" {count(len(added.state['criteria']), 'criterion')},"
        f" {count(len(added.state['steps']), 'step')}"
    )
    output.text(f"run it: ralphstate run --worktree {name}   (or: cd {added.store.paths.root})")


@worktree.command("remove", context_settings=SETTINGS)
@click.argument("name")
@click.option("--force", is_flag=True, help="Throw away its uncommitted changes.")
def remove(name: str, force: bool) -> None:
    """Remove worktree NAME and forget its loop; refused while it has uncommitted
    changes (unless --force) or a run drives its loop. Its branch and commits stay.

    \b
    Example:
      ralphstate worktree remove csv-export
    """
    from ralphstate.run import worktrees

    removed = worktrees.remove(Path.cwd(), name, force=force)
    kept = f"; branch {removed.branch} is kept" if removed.branch else ""
    output.text(f"removed worktree {removed.path}{kept}")
