"""`ralphstate report`: the loop's story as text, Markdown or one HTML file."""

from __future__ import annotations

from pathlib import Path

import click

from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.core.errors import RalphstateError
from ralphstate.loop.gitignore import ignore_local_files
from ralphstate.loop.project import locate

DEFAULT_HTML = "report.html"  # in the loop's directory


@click.command(
    "report",
    context_settings=SETTINGS,
    short_help="Tell the loop's story: criteria, evidence, iterations, pauses, commits.",
)
@click.option("--markdown", is_flag=True, help="Markdown, fit for a pull request's body.")
@click.option("--html", "as_html", is_flag=True, help="One self-contained HTML file.")
@click.option(
    "-o",
    "--output",
    "target",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write it ('-': standard output).  [default: standard output;"
    " .loop/report.html with --html]",
)
def report(markdown: bool, as_html: bool, target: Path | None) -> None:
    """Tell the loop's story: the spec, each criterion with its check and last evidence
    (commit, exit status, duration, output tail, stale or not), the iterations with
    their durations and decisions, the criteria turning green, pauses and commits.

    \b
    Example:
      ralphstate report
      ralphstate report --markdown -o /tmp/pr-body.md
      ralphstate report --html -o loop.html
    """
    if markdown and as_html:
        raise RalphstateError("choose one of --markdown and --html.")
    from ralphstate.report import collect, html, plain

    store = locate()
    story = collect.story(store)
    if as_html:
        body = html.html(story)
        if target is None:
            target = store.paths.dir / DEFAULT_HTML
            ignore_local_files(store.paths)  # a .gitignore from before report.html
    elif markdown:
        body = plain.markdown(story) + "\n"
    else:
        body = plain.text(story) + "\n"
    if target is None or str(target) == "-":
        output.text(body, nl=False)
        return
    from ralphstate.storage.system import fsio

    try:
        fsio.atomic_write(target, body.encode("utf-8"))
    except OSError as exc:
        raise RalphstateError(f"could not write {target}: {exc.strerror or exc}.") from None
    output.text(f"wrote {store.paths.display(target.resolve())}")
