"""What `ralphstate run` does with git: the branch a run starts on (`--branch`) and a
commit after each iteration that left the work tree changed (`--commit`).

The work tree's changes are judged without the loop's own directory: `.loop/` (the
state, history, run logs) is never what makes a tree dirty. A commit stages what
`git add -A` would, except the run logs (`.loop/runs/`) and lock files, and runs the
repository's hooks as a person's commit would; a commit that fails is reported, not
retried (docs/how-to/git.md, "Git").
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ralphstate.core import queries
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.core.render import clip, quote
from ralphstate.core.text import noun, visible
from ralphstate.storage.loopdir.store import Event, Store, append_history
from ralphstate.storage.repo import git
from ralphstate.storage.system.paths import LoopPaths

if TYPE_CHECKING:
    from ralphstate.run.context import Reporter
    from ralphstate.run.plan import Plan

# How many changed paths an error message names, and how much of a failed commit's
# output is kept.
SHOWN_PATHS = 3
ERROR_LINES = 12
ERROR_CHARS = 1500
SUBJECT_CHARS = 72
# The loop's own files a commit may take (never `runs/`, the agent's logs, nor locks).
LOOP_FILES = ("state.json", "history.jsonl", "config.toml", "lessons.md", ".gitignore")
LIST_CHARS = 600


def top(paths: LoopPaths, what: str) -> Path:
    """The work tree's top; RalphstateError outside a repository."""
    found = git.toplevel(paths.root)
    if found is None:
        raise RalphstateError(
            f"{what} needs a git repository, and {paths.root} is not in one"
            " (or git is not installed)."
        )
    return found


def changes(paths: LoopPaths) -> list[str]:
    """The work tree's uncommitted changes outside the loop's directory, as
    `git status --porcelain` lines (ignored files left out)."""
    found = top(paths, "this")
    done = git.run_git(
        ["status", "--porcelain", "--", *git.loop_pathspec(paths, found)], paths.root
    )
    if done is None or not done.ok:
        raise RalphstateError(f"`git status` failed in {paths.root}: {first_line(done)}.")
    return [line for line in done.out.splitlines() if line.strip()]


def refuse_dirty(paths: LoopPaths, what: str) -> None:
    """RalphstateError when the work tree has uncommitted changes (the loop's own
    directory aside)."""
    dirty = changes(paths)
    if not dirty:
        return
    raise RalphstateError(
        f"the work tree has uncommitted changes ({shown_paths(dirty)}); {what}."
        " Commit or stash them first, or give --allow-dirty."
    )


def shown_paths(dirty: list[str]) -> str:
    """The first of `changes`' paths, for a message: `a.py, b.py, c.py and 2 more`."""
    shown = ", ".join(visible(line[3:]) for line in dirty[:SHOWN_PATHS])
    more = f" and {len(dirty) - SHOWN_PATHS} more" if len(dirty) > SHOWN_PATHS else ""
    return shown + more


def check_branch_name(root: Path, name: str) -> None:
    """RalphstateError when `name` cannot name a branch."""
    valid = git.run_git(["check-ref-format", "--branch", name], root)
    if valid is None or not valid.ok:
        raise RalphstateError(f"{quote(name)} is not a valid branch name.")


def to_create(root: Path, name: str) -> bool:
    """Whether branch `name` does not exist yet (and is to be created from HEAD);
    RalphstateError when it does not and there is no commit to create it from."""
    exists = git.run_git(["rev-parse", "--verify", "--quiet", f"refs/heads/{name}"], root)
    created = exists is None or not exists.ok
    if created and git.head(root) is None:
        raise RalphstateError(
            f"the repository has no commit yet, so branch {quote(name)} has nothing to"
            " start from; make a first commit."
        )
    return created


@dataclass
class Switched:
    branch: str
    created: bool
    previous: str | None
    commit: str | None


def start_on_branch(paths: LoopPaths, name: str, allow_dirty: bool) -> Switched:
    """Check out branch `name`, created from HEAD when it does not exist; a dirty work
    tree is refused unless `allow_dirty` (its changes then come along)."""
    top(paths, "--branch")
    check_branch_name(paths.root, name)
    previous = git.branch(paths.root)
    if previous == name:
        return Switched(name, False, previous, git.head(paths.root))
    if not allow_dirty:
        refuse_dirty(paths, f"switching to branch {quote(name)} would take them along")
    created = to_create(paths.root, name)
    args = ["switch", "--quiet", *(["-c"] if created else []), name]
    done = git.run_git(args, paths.root)
    if done is None or not done.ok:
        raise RalphstateError(f"could not switch to branch {quote(name)}: {first_line(done)}.")
    return Switched(name, created, previous, git.head(paths.root))


@dataclass
class Committed:
    """What the commit after an iteration did: the commit made, or why none was."""

    commit: str | None
    subject: str
    files: int
    error: str | None = None


def message(number: int, before: st.State, after: st.State) -> tuple[str, str]:
    """The subject and body of the commit after iteration `number`: the criteria and
    steps that changed during it."""
    met_now = [c for c in after["criteria"] if queries.met(after, c) and not queries.met(before, c)]
    lost = [c for c in after["criteria"] if queries.met(before, c) and not queries.met(after, c)]
    done = [s for s in after["completedSteps"] if s not in before["completedSteps"]]
    parts = [f"step {quote(s)} done" for s in done]
    parts += [f"{quote(c)} met" for c in met_now]
    parts += [f"{quote(c)} no longer met" for c in lost]
    subject = f"ralphstate: iteration {number}"
    if parts:
        subject = cut(f"{subject}: {'; '.join(parts)}", SUBJECT_CHARS)
    met = len(after["criteria"]) - len(queries.unmet(after))
    body = [f"Iteration {number} of the loop: {clip(after['spec'], 200)}", ""]
    for label, names in (
        ("Steps done", done),
        ("Criteria met", met_now),
        ("Criteria no longer met", lost),
    ):
        if names:
            body.append(f"{label}: {clip(', '.join(names), LIST_CHARS)}")
    body.append(
        f"Now: {met}/{len(after['criteria'])} {noun(len(after['criteria']), 'criterion')} met,"
        f" {len(after['completedSteps'])}/{len(after['steps'])}"
        f" {noun(len(after['steps']), 'step')} done."
    )
    body += ["", "Committed by `ralphstate run --commit`."]
    return subject, "\n".join(body)


def commit_iteration(
    paths: LoopPaths, number: int, before: st.State, after: st.State
) -> Committed | None:
    """Commit what the iteration left uncommitted; None when it left nothing (the agent
    committed its own work, or changed nothing outside the loop's directory).

    Stages everything `git add -A` would but the run logs and lock files, and commits
    with the repository's hooks. A failure is returned with the end of git's output,
    never retried; what was staged stays staged."""
    found = top(paths, "--commit")
    if not changes(paths):
        return None
    subject, body = message(number, before, after)
    staged = git.run_git(["add", "--all", "--", ":/"], paths.root)
    if staged is not None and staged.ok:
        staged = _stage_loop_files(paths, found)
    if staged is None or not staged.ok:
        return Committed(None, subject, 0, f"`git add` failed: {_tail(staged)}")
    files = git.run_git(["diff", "--cached", "--name-only"], paths.root)
    count = len(files.out.splitlines()) if files is not None and files.ok else 0
    done = git.run_git(["commit", "--quiet", "-m", subject, "-m", body], paths.root)
    if done is None or not done.ok:
        return Committed(None, subject, count, _tail(done))
    return Committed(git.head(paths.root), subject, count)


def _stage_loop_files(paths: LoopPaths, found: Path) -> git.Done | None:
    """The loop's own files a commit takes along, unless git ignores them: the state,
    its history and the run's settings; never the run logs or lock files (whatever
    `git add -A` staged in the loop's directory is put back first)."""
    loop = [f":(top){s.split(')', 1)[1]}" for s in git.loop_pathspec(paths, found)[1:]]
    if loop:
        back = ["reset", "-q", "--", *loop] if git.head(paths.root) else None
        back = back or ["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *loop]
        done = git.run_git(back, paths.root)
        if done is None or not done.ok:
            return done
    names = loop_files(paths)
    if names is None or not names:
        return None if names is None else git.Done(0, "", "")
    return git.run_git(["add", "--", *names], paths.root)


def loop_files(paths: LoopPaths) -> list[str] | None:
    """The loop's own files a commit takes (`LOOP_FILES` that exist and git does not
    ignore), as paths; None when git could not say which it ignores."""
    names = [str(paths.dir / name) for name in LOOP_FILES if (paths.dir / name).is_file()]
    if not names:
        return []
    ignored = git.run_git(["check-ignore", "--", *names], paths.root)
    if ignored is None or ignored.code not in (0, 1):
        return None
    left_out = {line.strip() for line in ignored.out.splitlines()}
    return [n for n in names if n not in left_out]


def first_line(done: git.Done | None) -> str:
    if done is None:
        return "git did not run, or did not finish in time"
    lines = [line.strip() for line in (done.err or done.out).splitlines() if line.strip()]
    return (
        visible(lines[0].removeprefix("fatal: ").removeprefix("error: "))
        if lines
        else (f"exit code {done.code}")
    )


def _tail(done: git.Done | None) -> str:
    """The end of a failed git command's output, for the person: what a hook said."""
    if done is None:
        return "git did not run, or did not finish in time"
    text = "\n".join(part for part in (done.out.strip(), done.err.strip()) if part)
    lines = [visible(line.rstrip()) for line in text.splitlines() if line.strip()]
    shown = "\n".join(lines[-ERROR_LINES:])[-ERROR_CHARS:]
    return f"exit code {done.code}" + (f":\n{shown}" if shown else "")


# -- what the runner calls ------------------------------------------------------------


def prepare(store: Store, plan: Plan, report: Reporter) -> None:
    """Before the first iteration: check out `plan.branch`, and refuse a dirty work
    tree that `--commit` would commit with the agent's work (unless `allow_dirty`)."""
    paths = store.paths
    if plan.branch:
        switched = start_on_branch(paths, plan.branch, plan.allow_dirty)
        if switched.previous != switched.branch:
            how = "created from HEAD" if switched.created else "checked out"
            report.line(f"branch {visible(switched.branch)}: {how}")
            event: Event = {
                "event": "branch",
                "branch": switched.branch,
                "created": switched.created,
                "from": switched.previous,
                "commit": switched.commit,
            }
            with contextlib.suppress(RalphstateError):
                state = store.load()
                append_history(paths.history, [event], state["iteration"], loop_id=state["loopId"])
    elif plan.commit and not plan.allow_dirty:
        top(paths, "--commit")
        refuse_dirty(paths, "`run --commit` would commit them with the agent's work")


def after_iteration(
    store: Store, number: int, before: st.State, after: st.State, report: Reporter
) -> bool:
    """`--commit` after iteration `number`: commit what it left uncommitted. False when
    the commit failed (reported, in history as `commit_failed`; the run pauses)."""
    try:
        done = commit_iteration(store.paths, number, before, after)
    except RalphstateError as exc:
        done = Committed(None, "", 0, str(exc))
    if done is None:
        return True
    if done.error is None:
        report.line(f"  commit {short(done.commit)}: {visible(done.subject)} ({done.files} files)")
        event: Event = {
            "event": "commit",
            "commit": done.commit,
            "subject": done.subject,
            "files": done.files,
        }
        holds = evidence_on(store, done.commit) if done.commit else []
        if holds:
            event["evidence"] = holds
    else:
        report.line(f"  commit failed; the loop pauses: {done.error}")
        event = {"event": "commit_failed", "subject": done.subject, "error": done.error}
    with contextlib.suppress(RalphstateError):
        append_history(store.paths.history, [event], number, loop_id=after["loopId"])
    return done.error is None


def evidence_on(store: Store, commit: str) -> list[str]:
    """After the run's commit: the evidence of the checks that ran on the code it holds
    (the same tree, uncommitted then) names it, clean. Returns those criteria."""
    code = git.snapshot(store.paths)
    if code is None or code.dirty or code.commit != commit:
        return []
    moved: list[str] = []

    def change(state: st.State, events: list[Event]) -> None:
        moved.clear()
        for name, found in state["evidence"].items():
            if found.get("tree") == code.tree and found.get("commit") != commit:
                found["commit"], found["dirty"] = commit, False
                moved.append(name)

    try:
        store.update(change)
    except RalphstateError:
        return []
    return moved


def after_run(store: Store, ended: str, summary: str, report: Reporter) -> None:
    """`--commit`, once the run has ended (`ended`: how, as its summary begins): commit
    the loop's own files as the run left them, its last state and history, so that it
    leaves the work tree clean. A commit that fails is said; the run's ending stands."""
    paths = store.paths
    if git.toplevel(paths.root) is None:
        return
    names = loop_files(paths)
    if not names:
        return
    changed = git.run_git(["status", "--porcelain", "--", *names], paths.root)
    if changed is None or not changed.ok or not changed.out.strip():
        return
    subject = cut(f"ralphstate: the loop's record after the run ({ended})", SUBJECT_CHARS)
    body = f"{summary}\n\nThe loop's state and history as `ralphstate run --commit` left them."
    done = git.run_git(["add", "--", *names], paths.root)
    if done is not None and done.ok:
        args = ["commit", "--quiet", "-m", subject, "-m", body, "--", *names]
        done = git.run_git(args, paths.root)
    if done is None or not done.ok:
        report.line(f"the loop's record could not be committed: {_tail(done)}")
        return
    report.line(f"commit {short(git.head(paths.root))}: {visible(subject)}")


def cut(text: str, size: int) -> str:
    """One line of at most `size` characters, cut at a word with `…` when it is longer
    (a word longer than the line is cut where it must be)."""
    text = clip(text, len(text) + 1)  # one line, frame markers made harmless
    if len(text) <= size:
        return text
    head = text[: size - 1]
    at = head.rfind(" ")
    if text[size - 1] != " " and at > size // 2:  # mid-word: back to the word's start
        head = head[:at]
    return head.rstrip(" ,;:") + "…"


def short(commit: str | None) -> str:
    return commit[:10] if commit else "?"
